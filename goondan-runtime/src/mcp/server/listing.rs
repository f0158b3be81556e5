//! `tools/list`: the served catalog as MCP tools, in catalog order, one page at a time.
//!
//! The cursor is the position of the page's first tool: opaque to clients, stable for a
//! catalog that does not change between pages.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{JsonObject, ListToolsResult, Tool};
use serde_json::Value;

use super::Renames;
use crate::tools::catalog::{CatalogItem, ToolCatalog};

/// The page of `tools` (a catalog's, in its order) that starts at `cursor` (the first page
/// without one).
pub(super) fn page(
    tools: &[Tool],
    cursor: Option<&str>,
    page_size: usize,
) -> Result<ListToolsResult, ErrorData> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0 && n < tools.len())
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    format!("invalid cursor `{c}`: pass a `nextCursor` of a previous `tools/list`"),
                    None,
                )
            })?,
    };
    let end = start.saturating_add(page_size).min(tools.len());
    let mut result = ListToolsResult::with_all_items(tools[start..end].to_vec());
    result.next_cursor = (end < tools.len()).then(|| end.to_string());
    Ok(result)
}

/// Every item of `catalog` as an MCP tool, in catalog order.
pub(super) fn tools_of(catalog: &ToolCatalog, renames: &Renames) -> Vec<Tool> {
    catalog
        .items()
        .iter()
        .map(|item| tool_of(item, renames))
        .collect()
}

/// One catalog item as an MCP tool, as the MCP dialect lists it
/// ([`crate::dialect::mcp::listed`]), under its published name.
pub(super) fn tool_of(item: &CatalogItem, renames: &Renames) -> Tool {
    let name = renames.published(item.name().as_str());
    let entry = crate::dialect::mcp::listed(item, name);
    // Every registered tool's parameters are an object schema, which is all rmcp's `Tool`
    // asks of an entry; an item that is not is listed with no parameters.
    serde_json::from_value(serde_json::Value::Object(entry)).unwrap_or_else(|error| {
        tracing::warn!(%error, tool = name, "listed with an empty input schema");
        let empty = JsonObject::from_iter([("type".into(), Value::from("object"))]);
        Tool::new_with_raw(Cow::Owned(name.to_owned()), None, Arc::new(empty))
    })
}
