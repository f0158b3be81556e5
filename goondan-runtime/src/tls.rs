//! The cryptography of every TLS connection the runtime makes: rustls with ring.
//!
//! The model providers' and MCP's HTTP clients (reqwest), the OTLP exporters' (reqwest too)
//! and the NATS client all run on rustls, with one crypto provider for the whole build: ring.
//! reqwest is built without a provider of its own (its `rustls-no-provider` feature), so the
//! process's default provider must be set before a client is built. The runtime sets it before
//! each client it builds; a program that builds a reqwest client of its own first calls
//! [`install_crypto_provider`].
//!
//! ```
//! goondan_runtime::tls::install_crypto_provider();
//! assert!(rustls::crypto::CryptoProvider::get_default().is_some());
//! ```

/// Makes ring the process's default rustls crypto provider, unless the program set one already
/// (its choice stays). Cheap after the first call.
pub fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // An error only says that another thread installed one meanwhile.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
