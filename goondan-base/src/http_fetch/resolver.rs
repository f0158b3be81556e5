//! Name resolution for `http-fetch`, pluggable so that tests (and hosts with their own DNS)
//! decide what a name means. The fetcher resolves once per hop, checks every address, and
//! connects to a checked address: there is no second lookup to rebind.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;

/// The future a [`Resolver`] returns.
pub type ResolveFuture<'a> = Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send + 'a>>;

/// Turns a host name into addresses.
pub trait Resolver: Send + Sync + fmt::Debug + 'static {
    /// The addresses of `host` (a lowercase DNS name, never an IP literal).
    fn resolve<'a>(&'a self, host: &'a str) -> ResolveFuture<'a>;
}

/// The system resolver (`getaddrinfo`, through Tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> ResolveFuture<'a> {
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host, 0)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    }
}

/// A fixed table of names; any other name does not resolve. For tests and closed deployments.
///
/// ```
/// use goondan_base::http_fetch::StaticResolver;
/// let resolver = StaticResolver::new().with("api.test", ["127.0.0.1".parse().unwrap()]);
/// # drop(resolver);
/// ```
#[derive(Debug, Clone, Default)]
pub struct StaticResolver {
    names: HashMap<String, Vec<IpAddr>>,
}

impl StaticResolver {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `name` with `addrs`.
    #[must_use]
    pub fn with(mut self, name: &str, addrs: impl IntoIterator<Item = IpAddr>) -> Self {
        self.names
            .insert(name.to_ascii_lowercase(), addrs.into_iter().collect());
        self
    }
}

impl Resolver for StaticResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> ResolveFuture<'a> {
        let found = self.names.get(host).cloned();
        Box::pin(async move {
            found.ok_or_else(|| {
                io::Error::new(io::ErrorKind::NotFound, format!("no address for `{host}`"))
            })
        })
    }
}
