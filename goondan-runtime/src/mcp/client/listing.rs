//! What a server lists: its tools, read page by page within bounds, so that a server whose
//! list never ends, or names thousands of tools, is refused instead of filling memory.

use std::time::Duration;

use rmcp::service::{Peer, RoleClient, ServiceError};

/// A server's tools, and how long the listing may be taken as fresh (the shortest `ttlMs`
/// of its pages, on 2026-07-28; `None` when the server gave none).
#[derive(Debug, Default)]
pub(crate) struct Listing {
    pub(crate) tools: Vec<rmcp::model::Tool>,
    pub(crate) fresh_for: Option<Duration>,
}

/// The most pages of one `tools/list` the bridge reads.
pub(crate) const MAX_LIST_PAGES: usize = 64;

/// The most tools one server may list.
pub(crate) const MAX_LISTED_TOOLS: usize = 4096;

/// Why a listing failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ListError {
    #[error("`tools/list` failed: {0}")]
    Service(#[from] ServiceError),
    #[error("`tools/list` went on for more than {MAX_LIST_PAGES} pages; a server's list must end")]
    Endless,
    #[error("`tools/list` named more than {MAX_LISTED_TOOLS} tools")]
    TooMany,
}

/// Every tool `peer` lists, page by page, bounded: a server whose list does not end, or
/// names more than [`MAX_LISTED_TOOLS`] tools, is refused instead of filling memory.
pub(crate) async fn list_tools(peer: &Peer<RoleClient>) -> Result<Listing, ListError> {
    let mut tools = Vec::new();
    let mut fresh_for: Option<Duration> = None;
    let mut cursor = None;
    for _ in 0..MAX_LIST_PAGES {
        let page = peer
            .list_tools(Some(
                rmcp::model::PaginatedRequestParams::default().with_cursor(cursor),
            ))
            .await?;
        tools.extend(page.tools);
        if let Some(ms) = page.ttl_ms {
            let ttl = Duration::from_millis(ms);
            fresh_for = Some(fresh_for.map_or(ttl, |f| f.min(ttl)));
        }
        if tools.len() > MAX_LISTED_TOOLS {
            return Err(ListError::TooMany);
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(Listing { tools, fresh_for }),
        }
    }
    Err(ListError::Endless)
}
