//! A peer for rmcp's request contexts: rmcp builds one only for a running service, so the
//! server is served over an in-process duplex, set up once and never used by the measured
//! calls. Included with `#[path]` by `dispatch.rs` and by `examples/mcp/profile_dispatch.rs`.

use rmcp::service::{Peer, RoleServer};
use rmcp::{ServerHandler, ServiceExt};

/// `server` served over a duplex: its peer, and what must stay alive while the peer is used.
pub(crate) async fn rmcp_peer<S: ServerHandler>(server: S) -> (Peer<RoleServer>, impl Send) {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let (server, client) = tokio::join!(server.serve(server_io), ().serve(client_io));
    let server = server.unwrap();
    (server.peer().clone(), (server, client.unwrap()))
}
