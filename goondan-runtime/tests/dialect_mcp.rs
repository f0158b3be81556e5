#![allow(clippy::unwrap_used, clippy::expect_used)]
//! MCP: `tools/list` entries with a faithful 2020-12 `inputSchema`, and the `tools/call`
//! round trip with `CallToolResult`.

mod corpus;
mod kit;

use goondan_runtime::dialect::{Dialect, mcp};
use goondan_runtime::schema::check_metaschema;
use goondan_runtime::testing::ResultAssertions;
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
        result["structuredContent"].is_object(),
        "structuredContent is an object"
    );
    assert!(result["isError"].is_boolean());
}

#[test]
fn every_corpus_type_is_listed_with_its_neutral_schema() {
    for case in corpus::corpus() {
        let name = format!("corpus__{}", corpus::export_name(&case));
        let list = Dialect::Mcp.tools(&corpus::catalog_of(&case)).unwrap();
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
fn non_object_output_and_pending_results_are_still_structured() {
    let text = mcp::call_result(&ToolCallResult::ok("1", "a__b", json!("sunny")));
    assert_call_tool_result(&text);
    assert_eq!(text["structuredContent"], json!({"result": "sunny"}));
    assert_eq!(text["content"][0]["text"], "sunny");
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
