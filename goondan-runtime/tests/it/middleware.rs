//! The `toolCall` pipeline (MW-1, MW-2) and the tracing events of every call.

use crate::common;

use std::sync::{Arc, Mutex};

use goondan_runtime::calls::middleware::MiddlewareFuture;
use goondan_runtime::testing::{ResultAssertions, TestKit};
use goondan_runtime::{CallContext, Middleware, Next, ToolCallResult, ToolError, from_fn};
use serde_json::{Value, json};

type Log = Arc<Mutex<Vec<String>>>;

fn tracer(log: &Log, tag: &'static str) -> impl Middleware {
    let log = Arc::clone(log);
    from_fn(move |call: CallContext, next: Next| {
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
            from_fn(|mut call: CallContext, next: Next| async move {
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
            from_fn(|call: CallContext, _next: Next| async move {
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
    // `E_BLOCKED` is the middleware's own code: no help URL unless it gives one (RES-7).
    assert_eq!(err.help_url(), None);
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
            from_fn(move |mut call: CallContext, next: Next| {
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
            from_fn(move |call: CallContext, next: Next| {
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
        fn handle(self: Arc<Self>, call: CallContext, next: Next) -> MiddlewareFuture {
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
            from_fn(|mut call: CallContext, next: Next| async move {
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

#[tokio::test]
async fn res_3_mw_1_a_panicking_middleware_before_or_after_next_is_e_tool_panic() {
    let before = from_fn(|call: CallContext, next: Next| async move {
        if call.args.get("text").and_then(Value::as_str) == Some("before") {
            panic!("middleware broke before next");
        }
        next.run(call).await
    });
    let after = from_fn(|call: CallContext, next: Next| async move {
        let boom = call.args.get("text").and_then(Value::as_str) == Some("after");
        let result = next.run(call).await;
        if boom {
            panic!("middleware broke after next");
        }
        result
    });
    let kit = TestKit::builder()
        .tool(common::text_tool(None))
        .middleware(0, before)
        .middleware(0, after)
        .build()
        .unwrap();
    for (text, said) in [
        ("before", "broke before next"),
        ("after", "broke after next"),
    ] {
        let r = kit.call("text__upper", json!({"text": text})).await;
        assert_eq!(r.tool_name, "text__upper");
        let err = r.assert_error("E_TOOL_PANIC");
        assert!(err.message().contains(said), "{}", err.message());
        assert!(err.suggestion().is_some());
    }
    // The executor keeps serving.
    kit.call("text__upper", json!({"text": "fine"}))
        .await
        .assert_output(json!({"result": "FINE"}));
}

#[tokio::test]
async fn res_3_mw_1_a_middleware_that_panics_before_returning_its_future_is_e_tool_panic() {
    // Neither an `async` block nor a boxed future: the closure itself panics, and so does a
    // `Middleware` whose `handle` panics before it returns.
    let closure = from_fn(|call: CallContext, next: Next| {
        if call.args.get("text").and_then(Value::as_str) == Some("closure") {
            panic!("closure broke");
        }
        next.run(call)
    });
    struct Eager;
    impl Middleware for Eager {
        fn handle(self: Arc<Self>, call: CallContext, next: Next) -> MiddlewareFuture {
            if call.args.get("text").and_then(Value::as_str) == Some("handle") {
                panic!("handle broke");
            }
            next.run(call)
        }
    }
    let kit = TestKit::builder()
        .tool(common::text_tool(None))
        .middleware(0, closure)
        .middleware(0, Eager)
        .build()
        .unwrap();
    for (text, said) in [("closure", "closure broke"), ("handle", "handle broke")] {
        let r = kit.call("text__upper", json!({"text": text})).await;
        assert_eq!(
            (r.tool_call_id.is_empty(), r.tool_name.as_str()),
            (false, "text__upper")
        );
        let err = r.assert_error("E_TOOL_PANIC");
        assert!(err.message().contains(said), "{}", err.message());
    }
    kit.call("text__upper", json!({"text": "fine"}))
        .await
        .assert_output(json!({"result": "FINE"}));
}

/// Pass-through middlewares, written as a closure that returns `next.run(call)` or as an
/// `async` closure, answer every call exactly as no middleware at all does.
#[tokio::test]
async fn mw_1_pass_through_middlewares_answer_every_call_as_no_middleware_does() {
    fn kit(passes: usize, boxed: bool) -> TestKit {
        let mut b = TestKit::builder().tool(common::text_tool(Some(40)));
        for i in 0..passes {
            b = if boxed {
                b.middleware(
                    i as i32,
                    from_fn(|c: CallContext, n: Next| async move { n.run(c).await }),
                )
            } else {
                b.middleware(i as i32, from_fn(|c: CallContext, n: Next| n.run(c)))
            };
        }
        b.build().unwrap()
    }
    let calls = [
        ("text__upper", json!({"text": "abc"})),
        ("text__upper", json!({"text": 5})),
        ("text__upper", json!({"text": "a", "extra": 1})),
        ("text__upper", json!([1, 2])),
        ("text__many", json!({"a": [1, 2, 3]})),
        ("text__fail", json!({"len": 500})),
        ("text__panic", json!({"len": 1})),
        ("text__sleep", json!({"ms": 1})),
        ("text__sleep", json!({"ms": 400})),
        ("text__nope", json!({})),
        ("other__upper", json!({})),
        ("bad name", json!({})),
    ];
    let (plain, returned, awaited) = (kit(0, false), kit(3, false), kit(3, true));
    for (name, args) in calls {
        let want = serde_json::to_value(plain.call(name, args.clone()).await).unwrap();
        for (label, kit) in [("returned", &returned), ("awaited", &awaited)] {
            let answer = tokio::time::timeout(
                std::time::Duration::from_secs(10),
                kit.call(name, args.clone()),
            );
            let got = serde_json::to_value(answer.await.expect("the chain answers")).unwrap();
            assert_eq!(got, want, "{label} `next.run`, {name} {args}");
        }
    }
}

/// A call that waits answers alike with and without a pass-through middleware: when it
/// answers, when it is cancelled while it waits, when its deadline passes, when its handler
/// panics, and when it is refused before its handler.
#[tokio::test]
async fn mw_1_a_call_that_waits_answers_alike_with_and_without_a_chain() {
    use goondan_runtime::{ToolCall, ToolCatalog, ToolContext, ToolExecutor, ToolRegistry};
    let tool = common::text_tool(Some(300));
    let registry = Arc::new(ToolRegistry::builder().tool(tool).build().unwrap());
    let catalog = ToolCatalog::build(&registry, ["text"]).unwrap();
    let plain = ToolExecutor::new(Arc::clone(&registry));
    let chained = ToolExecutor::builder(Arc::clone(&registry))
        .middleware(from_fn(
            |c: CallContext, n: Next| async move { n.run(c).await },
        ))
        .build();
    // (export, arguments, cancel after this many ms, the code of the error expected)
    let cases = [
        ("text__sleep", json!({"ms": 30}), None, None),
        (
            "text__sleep",
            json!({"ms": 150}),
            Some(20),
            Some("E_TOOL_CANCELLED"),
        ),
        (
            "text__sleep",
            json!({"ms": 900}),
            None,
            Some("E_TOOL_TIMEOUT"),
        ),
        ("text__panic", json!({"len": 1}), None, Some("E_TOOL_PANIC")),
        (
            "text__sleep",
            json!({"ms": "soon"}),
            None,
            Some("E_TOOL_INVALID_ARGS"),
        ),
        ("text__fail", json!({"len": 500}), None, Some("E_DEMO")),
    ];
    for (export, args, cancel_after, code) in cases {
        let mut answers = Vec::new();
        for executor in [&plain, &chained] {
            let ctx = ToolContext::builder(std::env::temp_dir()).build();
            let call = ToolCall::new("c1", export, args.clone());
            let cancel = async {
                if let Some(ms) = cancel_after {
                    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                    ctx.cancellation().cancel();
                }
            };
            let (result, ()) = tokio::join!(executor.execute(call, &ctx, &catalog), cancel);
            match code {
                Some(code) => {
                    result.assert_error(code);
                }
                None => assert!(result.is_ok(), "{export}: {result:?}"),
            }
            answers.push(serde_json::to_value(result).unwrap());
        }
        assert_eq!(answers[0], answers[1], "{export} {args}");
    }
}
