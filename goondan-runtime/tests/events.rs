//! Every call is a `tracing` span with `tool.called` and `tool.completed` / `tool.failed`
//! events carrying trace and span ids.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/captured_events.rs"]
mod captured_events;
mod common;

use captured_events::field;

use goondan_runtime::testing::{ResultAssertions, TestKit};
use serde_json::json;
// The only test of this binary: the subscriber is global, so no other test's thread can race
// tracing's process-wide callsite cache.
#[tokio::test(flavor = "current_thread")]
async fn every_call_emits_called_and_completed_or_failed_with_ids() {
    let captured = captured_events::captured();
    let kit = TestKit::with_tools([common::text_tool(None)]).unwrap();
    kit.call("text__upper", json!({"text": "a"}))
        .await
        .assert_ok();
    kit.call("text__fail", json!({"len": 2}))
        .await
        .assert_error("E_DEMO");

    let events = captured.events();
    let names: Vec<&str> = events
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| n.starts_with("tool."))
        .collect();
    assert_eq!(
        names,
        [
            "tool.called",
            "tool.completed",
            "tool.called",
            "tool.failed"
        ]
    );
    for (name, fields) in events.iter().filter(|(n, _)| n.starts_with("tool.")) {
        let get = |k: &str| field(fields, k);
        assert!(
            get("span_id").is_some_and(|v| v != "None"),
            "{name}: {fields:?}"
        );
        assert_eq!(get("in_span"), Some("tool_call"), "{name}: {fields:?}");
        assert!(
            get("trace_id").is_some_and(|t| t.starts_with("trace-")),
            "{name}: {fields:?}"
        );
        if name == "tool.failed" {
            assert_eq!(get("code"), Some("E_DEMO"));
        }
    }

    // A tool strict mode cannot express is sent in the loose form, said once per process per
    // dialect and tool, however often the catalog is rendered.
    let mut item =
        goondan_runtime::CatalogItem::new(goondan_runtime::ToolName::new("shell", "run").unwrap());
    item.set_parameters(json!({"type": "object", "properties": {
        "env": {"type": "object", "additionalProperties": {"type": "string"}}}}));
    let mut catalog = goondan_runtime::ToolCatalog::new();
    catalog.push(item);
    for _ in 0..3 {
        for dialect in [
            goondan_runtime::Dialect::OPENAI_CHAT,
            goondan_runtime::Dialect::OPENAI_RESPONSES,
            goondan_runtime::Dialect::GEMINI,
        ] {
            dialect.tools(&catalog).unwrap();
        }
    }
    let events = captured.events();
    let fallbacks: Vec<Vec<(String, String)>> = events
        .into_iter()
        .filter(|(n, _)| n == "dialect.strict_fallback")
        .map(|(_, f)| f)
        .collect();
    assert_eq!(fallbacks.len(), 2, "{fallbacks:?}");
    for (fields, dialect) in fallbacks.iter().zip(["openai", "gemini"]) {
        let get = |k: &str| field(fields, k);
        assert_eq!(get("dialect"), Some(dialect), "{fields:?}");
        assert_eq!(get("tool"), Some("shell__run"), "{fields:?}");
        assert!(get("reason").is_some_and(|r| !r.is_empty()), "{fields:?}");
    }
}
