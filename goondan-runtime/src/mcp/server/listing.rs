//! `tools/list`: the served catalog as MCP tools, in catalog order, one page at a time.
//!
//! The cursor is the position of the page's first tool: opaque to clients, stable for a
//! catalog that does not change between pages.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{JsonObject, ListToolsResult, Tool, ToolAnnotations};
use serde_json::Value;

use super::Renames;
use crate::tools::annotations::ExportAnnotations;
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

/// One catalog item as an MCP tool: the name as it is (NAME-2), description, input schema,
/// output schema, title and annotations.
pub(super) fn tool_of(item: &CatalogItem, renames: &Renames) -> Tool {
    let name = renames.published(item.name().as_str()).to_owned();
    let input = match item.parameters().map(|p| &**p) {
        Some(Value::Object(o)) => o.clone(),
        _ => empty_object_schema(),
    };
    let mut tool = Tool::new_with_raw(
        Cow::Owned(name),
        item.description().map(|d| Cow::Owned(d.to_owned())),
        Arc::new(input),
    );
    if let Some(schema) = item.output_schema()
        && let Value::Object(o) = schema.schema()
    {
        tool = tool.with_raw_output_schema(Arc::new(o.clone()));
    }
    if let Some(a) = item.annotations() {
        if let Some(title) = &a.title {
            tool = tool.with_title(title.clone());
        }
        if !a.is_empty() {
            tool = tool.with_annotations(annotations_of(a));
        }
    }
    tool
}

/// Goondan's annotations as MCP's hints.
pub(super) fn annotations_of(a: &ExportAnnotations) -> ToolAnnotations {
    ToolAnnotations::from_raw(
        a.title.clone(),
        a.read_only,
        a.destructive,
        a.idempotent,
        a.open_world,
    )
}

fn empty_object_schema() -> JsonObject {
    let mut o = JsonObject::new();
    o.insert("type".into(), Value::from("object"));
    o
}
