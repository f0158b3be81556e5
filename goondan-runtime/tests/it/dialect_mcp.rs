//! MCP: `tools/list` entries with a faithful 2020-12 `inputSchema`, and the `tools/call`
//! round trip with `CallToolResult`.

use crate::corpus;
use crate::kit;

use goondan_runtime::dialect::{Dialect, mcp};
use goondan_runtime::testing::ResultAssertions;
use goondan_runtime::tools::schema::check_metaschema;
use goondan_runtime::{ToolCall, ToolCallResult};
use serde_json::{Value, json};

/// Asserts the MCP `Tool` shape: `name`, optional `description`, `inputSchema` an object schema.
fn assert_mcp_tool(tool: &Value, name: &str) {
    assert_eq!(tool["name"], name);
    assert!(tool.get("description").is_none_or(Value::is_string));
    assert_eq!(tool["inputSchema"]["type"], "object");
    check_metaschema(&tool["inputSchema"]).unwrap();
}

/// Asserts the MCP `CallToolResult` shape.
fn assert_call_tool_result(result: &Value) {
    let content = result["content"].as_array().unwrap();
    assert!(!content.is_empty());
    for c in content {
        assert_eq!(c["type"], "text");
        assert!(c["text"].is_string());
    }
    assert!(
        result.get("structuredContent").is_none_or(Value::is_object),
        "structuredContent, when there is one, is an object"
    );
    assert!(result["isError"].is_boolean());
}

#[test]
fn every_corpus_type_is_listed_with_its_neutral_schema() {
    for case in corpus::corpus() {
        let name = format!("corpus__{}", corpus::export_name(&case));
        let list = Dialect::MCP.tools(&corpus::catalog_of(&case)).unwrap();
        let tool = &list["tools"][0];
        assert_mcp_tool(tool, &name);
        assert_eq!(tool["inputSchema"], *case.schema);
    }
}

#[tokio::test]
async fn tools_call_round_trip_answers_with_call_tool_result() {
    let kit = kit::kit();
    let request = kit::fixture("mcp_tools_call.json");
    let call = mcp::parse_call(&request).unwrap();
    assert_eq!(
        call,
        ToolCall::new("2", "weather__current", json!({"city": "New York"}))
    );
    let result = kit.execute(call).await;
    let answer = mcp::response(request["id"].clone(), &result);
    assert_eq!(answer["id"], 2);
    assert_call_tool_result(&answer["result"]);
    assert_eq!(answer["result"]["isError"], false);
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"city": "New York", "temp": 21, "unit": "C"})
    );

    let bad = json!({"jsonrpc": "2.0", "id": "x", "method": "tools/call",
                     "params": {"name": "weather__forecast", "arguments": {"city": "Oslo"}}});
    let result = kit.execute(mcp::parse_call(&bad).unwrap()).await;
    result.assert_error("E_TOOL_INVALID_ARGS");
    let rendered = mcp::call_result(&result);
    assert_call_tool_result(&rendered);
    assert_eq!(rendered["isError"], true);
    assert_eq!(
        rendered["structuredContent"]["error"]["code"],
        "E_TOOL_INVALID_ARGS"
    );
    assert!(
        rendered["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("required")
    );
}

#[test]
fn text_is_text_while_other_outputs_and_pending_results_are_structured() {
    let text = mcp::call_result(&ToolCallResult::ok("1", "a__b", json!("sunny")));
    assert_call_tool_result(&text);
    assert_eq!(text.get("structuredContent"), None, "{text}");
    assert_eq!(text["content"], json!([{"type": "text", "text": "sunny"}]));
    let number = mcp::call_result(&ToolCallResult::ok("1", "a__b", json!(42)));
    assert_call_tool_result(&number);
    assert_eq!(number["structuredContent"], json!({"result": 42}));
    assert_eq!(number["content"][0]["text"], "42");
    let pending = mcp::call_result(&ToolCallResult::pending("1", "a__b", "h-1"));
    assert_call_tool_result(&pending);
    assert_eq!(pending["structuredContent"]["handle"], "h-1");
}

#[test]
fn a_request_that_is_not_tools_call_is_a_parse_error() {
    let err =
        mcp::parse_call(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).unwrap_err();
    assert_eq!(err.path, "/method");
}

/// Schemas that use the 2020-12 vocabulary provider dialects rewrite: composition,
/// conditionals, anchors, definitions and references, formats, `x-` extensions.
fn keyword_schemas() -> Vec<Value> {
    vec![
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                                  "properties": {"city": {"type": "string"}}}},
            "properties": {
                "address": {"$ref": "#/$defs/address"},
                "contact": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string", "format": "email"}
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contact": {"const": "phone"}}, "required": ["contact"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false
        }),
        json!({
            "type": "object",
            "properties": {
                "when": {"type": "string", "format": "date-time"},
                "kind": {"oneOf": [{"const": "a"}, {"const": "b"}]},
                "not_zero": {"type": "integer", "not": {"const": 0}},
                "region": {"type": "string", "x-mcp-header": "Region"}
            },
            "dependentRequired": {"when": ["kind"]},
            "unevaluatedProperties": false
        }),
    ]
}

/// What a real MCP client reads in `tools/list` is the export's neutral
/// schema, whole, for every corpus type and for schemas written with the vocabulary
/// providers cannot take; and the MCP dialect's rendering is the same.
#[tokio::test]
async fn mcp_tools_list_publishes_every_export_schema_whole() {
    use std::sync::Arc;

    use goondan_runtime::mcp::server::McpServer;
    use goondan_runtime::{Export, Tool, ToolCatalog, ToolError, ToolRegistry, handler_fn};
    use rmcp::ServiceExt;

    let noop = || handler_fn(|_ctx, _args| async { Ok::<_, ToolError>(Value::Null) });
    let mut corpus_tool = Tool::builder("corpus");
    for case in corpus::corpus() {
        corpus_tool = corpus_tool.export(Export::new(
            corpus::export_name(&case),
            (*case.schema).clone(),
            noop(),
        ));
    }
    let mut keywords = Tool::builder("keywords");
    for (i, schema) in keyword_schemas().into_iter().enumerate() {
        keywords = keywords.export(Export::new(format!("k{i}"), schema, noop()));
    }
    let registry = Arc::new(
        ToolRegistry::builder()
            .tool(corpus_tool.build().unwrap())
            .tool(keywords.build().unwrap())
            .build()
            .unwrap(),
    );
    let mut want = std::collections::BTreeMap::new();
    for case in corpus::corpus() {
        want.insert(
            format!("corpus__{}", corpus::export_name(&case)),
            (*case.schema).clone(),
        );
    }
    for (i, schema) in keyword_schemas().into_iter().enumerate() {
        want.insert(format!("keywords__k{i}"), schema);
    }
    // The dialect's rendering.
    let listed = Dialect::MCP.tools(&ToolCatalog::all(&registry)).unwrap();
    for tool in listed["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        assert_eq!(tool["inputSchema"], want[name], "{name} (dialect)");
    }
    // What a real client reads.
    let server = McpServer::builder(Arc::clone(&registry))
        .page_size(1000)
        .build()
        .unwrap();
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_io).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), want.len());
    for tool in tools {
        let got = Value::Object((*tool.input_schema).clone());
        assert_eq!(got, want[tool.name.as_ref()], "{} (over MCP)", tool.name);
    }
    client.cancel().await.unwrap();
}
