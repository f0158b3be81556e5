//! The counter: a tool with a page (MCP Apps, the `io.modelcontextprotocol/ui` extension).
//!
//! `counter__show` and `counter__increment` show the page `ui://counter/view.html`
//! (`counter/view.html`, next to this file); `counter__increment` is for the page only
//! (`visibility = "app"`: a host leaves it out of its model's tools, and a client that renders
//! no page is not shown it), and `counter__reset` is for the model only (a host refuses the
//! page's calls of it). A host without the extension calls the same tools and reads their
//! results as text.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use goondan_runtime::ToolRegistry;
use goondan_runtime::mcp::server::{AppPage, McpServer};
use goondan_runtime::prelude::*;

/// The URI of the counter's page.
pub const PAGE_URI: &str = "ui://counter/view.html";

/// The folder of the counter's page.
pub fn page_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/counter"))
}

/// The count, as the page reads it from `structuredContent`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Count {
    /// The count.
    pub count: u64,
}

/// A counter kept by the server.
#[derive(Debug, Default)]
pub struct Counter {
    count: AtomicU64,
}

/// A counter shown on a page.
#[tool(name = "counter")]
impl Counter {
    /// Shows the counter on its page.
    #[export(ui = "ui://counter/view.html", read_only)]
    pub fn show(&self) -> Count {
        Count {
            count: self.count.load(Ordering::SeqCst),
        }
    }

    /// Adds one to the counter (the page's button).
    #[export(ui = "ui://counter/view.html", visibility = "app")]
    pub fn increment(&self) -> Count {
        Count {
            count: self.count.fetch_add(1, Ordering::SeqCst) + 1,
        }
    }

    /// Sets the counter back to zero.
    #[export(visibility = "model", destructive)]
    pub fn reset(&self) -> Count {
        self.count.store(0, Ordering::SeqCst);
        Count { count: 0 }
    }
}

/// The counter's server: its tools, and its page read from [`page_dir`].
pub fn server() -> anyhow::Result<McpServer> {
    let registry = Arc::new(ToolRegistry::builder().tool(Counter::default()).build()?);
    let page = AppPage::file(PAGE_URI, "view.html")
        .root(page_dir())
        .description("The counter, with a button that increments it.")
        .prefers_border(true);
    Ok(McpServer::builder(registry)
        .server_name("goondan-counter")
        .app_page(page)
        .build()?)
}
