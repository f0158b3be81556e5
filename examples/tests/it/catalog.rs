//! `cargo run --example catalog -- --format X` prints the quickstart's catalog in each of the
//! five provider formats; this checks the same conversion for every format.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use goondan_examples::tools::AGENT_TOOLS;
use goondan_runtime::dialect::Dialect;
use goondan_runtime::{ToolCatalog, ToolRegistry};

#[test]
fn the_quickstart_catalog_converts_to_every_format() {
    let registry = ToolRegistry::builder()
        .tools(goondan_examples::quickstart_tools())
        .build()
        .unwrap();
    let catalog = ToolCatalog::build(&registry, AGENT_TOOLS).unwrap();
    for dialect in Dialect::ALL {
        let tools = dialect
            .tools(&catalog)
            .unwrap_or_else(|e| panic!("{}: {e}", dialect.as_str()));
        let text = serde_json::to_string(&tools).unwrap();
        for item in catalog.items() {
            assert!(
                text.contains(item.name().as_str()),
                "{} lacks {}",
                dialect.as_str(),
                item.name()
            );
        }
        let count = if dialect == Dialect::GEMINI {
            tools[0]["functionDeclarations"].as_array().unwrap().len()
        } else if dialect == Dialect::MCP {
            tools["tools"].as_array().unwrap().len()
        } else {
            tools.as_array().unwrap().len()
        };
        assert_eq!(count, catalog.len(), "{}", dialect.as_str());
    }
}
