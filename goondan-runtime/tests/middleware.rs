//! The `toolCall` pipeline (MW-1, MW-2) and the tracing events of every call.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use goondan_runtime::middleware::MiddlewareFuture;
use goondan_runtime::testing::{ResultAssertions, TestKit};
use goondan_runtime::{Middleware, Next, ToolCallContext, ToolCallResult, ToolError, from_fn};
use serde_json::{Value, json};

type Log = Arc<Mutex<Vec<String>>>;

fn tracer(log: &Log, tag: &'static str) -> impl Middleware {
    let log = Arc::clone(log);
    from_fn(move |call: ToolCallContext, next: Next| {
        let log = Arc::clone(&log);
        async move {
            log.lock().unwrap().push(format!("{tag}>"));
            let r = next.run(call).await;
            log.lock().unwrap().push(format!("<{tag}"));
            r
        }
    })
}

#[tokio::test]
async fn mw_1_onion_order_first_registered_is_outermost() {
    let log: Log = Arc::default();
    let kit = TestKit::builder()
        .tool(common::text_tool(None))
        .middleware(0, tracer(&log, "a"))
        .middleware(0, tracer(&log, "b"))
        .middleware(-5, tracer(&log, "first-by-priority"))
        .build()
        .unwrap();
    kit.call("text__upper", json!({"text": "x"}))
        .await
        .assert_ok();
    assert_eq!(
        *log.lock().unwrap(),
        [
            "first-by-priority>",
            "a>",
            "b>",
            "<b",
            "<a",
            "<first-by-priority"
        ]
    );
}

#[tokio::test]
async fn mw_1_before_next_may_rewrite_args_after_may_rewrite_result() {
    let kit = TestKit::builder()
        .tool(common::text_tool(None))
        .middleware(
            0,
            from_fn(|mut call: ToolCallContext, next: Next| async move {
                // Before next(): fix the model's argument.
                if let Some(Value::Number(n)) = call.args.get("text").cloned() {
                    call.args
                        .insert("text".into(), Value::String(format!("n{n}")));
                }
                let mut result = next.run(call).await;
                // After next(): decorate the result.
                if let Some(out) = result.output.as_mut() {
                    out["decorated"] = json!(true);
                }
                result
            }),
        )
        .build()
        .unwrap();
    kit.call("text__upper", json!({"text": 7}))
        .await
        .assert_output(json!({"result": "N7", "decorated": true}));
}

#[tokio::test]
async fn mw_1_middleware_may_short_circuit() {
    let kit = TestKit::builder()
        .tool(common::text_tool(None))
        .middleware(
            0,
            from_fn(|call: ToolCallContext, _next: Next| async move {
                ToolCallResult::error(
                    call.tool_call_id(),
                    call.tool_name(),
                    ToolError::new("blocked by policy ".repeat(100)).with_code("E_BLOCKED"),
                )
            }),
        )
        .build()
        .unwrap();
    let r = kit.call("text__fail", json!({"len": 1})).await;
    let err = r.assert_error("E_BLOCKED");
    // Even a middleware's error is cut to the resource's limit.
    assert!(err.message().chars().count() <= 1000);
    assert!(err.help_url().is_some());
}

#[tokio::test]
async fn mw_2_context_exposes_name_id_args_metadata() {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let s1 = Arc::clone(&seen);
    let s2 = Arc::clone(&seen);
    let kit = TestKit::builder()
        .tool(common::text_tool(None))
        .middleware(
            0,
            from_fn(move |mut call: ToolCallContext, next: Next| {
                let seen = Arc::clone(&s1);
                async move {
                    seen.lock().unwrap().push(json!({
                        "toolName": call.tool_name(), "toolCallId": call.tool_call_id(),
                        "args": call.args, "agent": call.context().agent_name(),
                    }));
                    call.metadata.insert("startedBy".into(), json!("outer"));
                    next.run(call).await
                }
            }),
        )
        .middleware(
            1,
            from_fn(move |call: ToolCallContext, next: Next| {
                let seen = Arc::clone(&s2);
                async move {
                    seen.lock()
                        .unwrap()
                        .push(Value::Object(call.metadata.clone()));
                    next.run(call).await
                }
            }),
        )
        .agent_name("coder")
        .build()
        .unwrap();
    let r = kit
        .execute(goondan_runtime::ToolCall::new(
            "c-42",
            "text__upper",
            json!({"text": "q"}),
        ))
        .await;
    r.assert_ok();
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen[0],
        json!({"toolName": "text__upper", "toolCallId": "c-42", "args": {"text": "q"}, "agent": "coder"})
    );
    assert_eq!(seen[1], json!({"startedBy": "outer"}));
}

#[tokio::test]
async fn mw_2_middleware_cannot_retarget_the_call() {
    struct Hijack;
    impl Middleware for Hijack {
        fn handle<'a>(&'a self, call: ToolCallContext, next: Next) -> MiddlewareFuture<'a> {
            Box::pin(async move {
                let mut r = next.run(call).await;
                r.tool_name = "text__fail".into();
                r.tool_call_id = "forged".into();
                r
            })
        }
    }
    let kit = TestKit::builder()
        .tool(common::text_tool(None))
        .middleware(0, Hijack)
        .build()
        .unwrap();
    let r = kit
        .execute(goondan_runtime::ToolCall::new(
            "real",
            "text__upper",
            json!({"text": "q"}),
        ))
        .await;
    assert_eq!(
        (r.tool_call_id.as_str(), r.tool_name.as_str()),
        ("real", "text__upper")
    );
    r.assert_output(json!({"result": "Q"}));
}

#[tokio::test]
async fn args_rewritten_by_middleware_are_validated_after_it() {
    let kit = TestKit::builder()
        .tool(common::text_tool(None))
        .middleware(
            0,
            from_fn(|mut call: ToolCallContext, next: Next| async move {
                call.args.insert("text".into(), json!(123));
                next.run(call).await
            }),
        )
        .build()
        .unwrap();
    kit.call("text__upper", json!({"text": "fine"}))
        .await
        .assert_error("E_TOOL_INVALID_ARGS");
}

mod events {
    use super::*;
    use tracing::field::{Field, Visit};
    use tracing_subscriber::layer::{Context, SubscriberExt};
    use tracing_subscriber::registry::LookupSpan;

    /// An event's name and its fields.
    type Event = (String, Vec<(String, String)>);

    #[derive(Default, Clone)]
    pub(super) struct Captured(pub(super) Arc<Mutex<Vec<Event>>>);

    struct Fields(Vec<(String, String)>);
    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.0.push((field.name().to_owned(), format!("{value:?}")));
        }
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.push((field.name().to_owned(), value.to_owned()));
        }
        fn record_u64(&mut self, field: &Field, value: u64) {
            self.0.push((field.name().to_owned(), value.to_string()));
        }
    }

    impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for Captured {
        fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
            let mut fields = Fields(Vec::new());
            event.record(&mut fields);
            if let Some(scope) = ctx.event_scope(event) {
                for span in scope {
                    fields.0.push(("in_span".into(), span.name().to_owned()));
                }
            }
            self.0
                .lock()
                .unwrap()
                .push((event.metadata().name().to_owned(), fields.0));
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn every_call_emits_called_and_completed_or_failed_with_ids() {
        let captured = Captured::default();
        let subscriber = tracing_subscriber::registry().with(captured.clone());
        let _guard = tracing::subscriber::set_default(subscriber);
        let kit = TestKit::with_tools([common::text_tool(None)]).unwrap();
        kit.call("text__upper", json!({"text": "a"}))
            .await
            .assert_ok();
        kit.call("text__fail", json!({"len": 2}))
            .await
            .assert_error("E_DEMO");

        let events = captured.0.lock().unwrap().clone();
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
            let get = |k: &str| fields.iter().find(|(f, _)| f == k).map(|(_, v)| v.clone());
            assert!(
                get("span_id").is_some_and(|v| v != "None"),
                "{name}: {fields:?}"
            );
            assert_eq!(
                get("in_span").as_deref(),
                Some("tool_call"),
                "{name}: {fields:?}"
            );
            assert!(
                get("trace_id").is_some_and(|t| t.starts_with("trace-")),
                "{name}: {fields:?}"
            );
            if name == "tool.failed" {
                assert_eq!(get("code").as_deref(), Some("E_DEMO"));
            }
        }
    }
}
