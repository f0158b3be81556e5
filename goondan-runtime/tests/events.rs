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

    #[cfg(feature = "code-mode")]
    code_mode_calls_nest_under_the_code_call(&captured).await;
}

/// A code call's program makes its calls inside the code call: each inner call's events are
/// in its own `tool_call` span, inside the code call's.
#[cfg(feature = "code-mode")]
async fn code_mode_calls_nest_under_the_code_call(captured: &captured_events::Captured) {
    use goondan_runtime::ToolCall;
    use goondan_runtime::ToolRegistry;
    use goondan_runtime::code::CodeMode;
    use goondan_runtime::step::{AgentInstance, ModelResponse, ScriptedModel};
    use std::sync::Arc;

    let program = "text.upper(text='a')['result']";
    let model = ScriptedModel::new([
        ModelResponse::calls([ToolCall::new(
            "code-1",
            "code__run",
            json!({"code": program}),
        )]),
        ModelResponse::text("A"),
    ]);
    let registry = Arc::new(
        ToolRegistry::builder()
            .tool(common::text_tool(None))
            .build()
            .unwrap(),
    );
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("writer", registry, Arc::new(model))
        .tools(["text"])
        .code_mode(CodeMode::new())
        .state_dir(state.path())
        .build()
        .unwrap();
    let turn = agent.run_turn("shout a").await.unwrap();
    let output = turn.steps[0].results[0].output.clone().unwrap();
    assert_eq!(output["value"], "A");
    let events = captured.events();
    let of = |id: &str| -> Vec<(String, Vec<String>)> {
        events
            .iter()
            .filter(|(n, f)| n.starts_with("tool.") && field(f, "tool_call_id") == Some(id))
            .map(|(n, f)| {
                let spans = f
                    .iter()
                    .filter(|(k, _)| k == "in_span")
                    .map(|(_, v)| v.clone())
                    .collect();
                (n.clone(), spans)
            })
            .collect()
    };
    let outer = of("code-1");
    let inner = of("code-1.1");
    let names = |e: &[(String, Vec<String>)]| e.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&outer),
        ["tool.called", "tool.completed"],
        "{outer:?}"
    );
    assert_eq!(
        names(&inner),
        ["tool.called", "tool.completed"],
        "{inner:?}"
    );
    let depth = |spans: &[String]| spans.iter().filter(|s| *s == "tool_call").count();
    assert_eq!(depth(&outer[0].1), 1, "{outer:?}");
    // The inner call's span, then the code call's.
    assert_eq!(depth(&inner[0].1), 2, "{inner:?}");
    assert_eq!(depth(&inner[1].1), 2, "{inner:?}");
}
