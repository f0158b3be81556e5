//! The executor's rules: catalog gate (PERM), results and errors (RES), context (CTX),
//! argument validation, panics, timeouts, cancellation and pending results.
#![allow(missing_docs)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use goondan_runtime::calls::pending::PendingState;
use goondan_runtime::testing::{ResultAssertions, TestKit};
use goondan_runtime::tools::error::{TRUNCATION_SUFFIX, codes};
use goondan_runtime::tools::help_url::DEFAULT_HELP_URL_BASE;
use goondan_runtime::{
    CallPolicy, ToolCall, ToolCatalog, ToolContext, ToolExecutor, ToolRegistry, ToolStatus,
};
use serde_json::{Value, json};

fn kit() -> TestKit {
    TestKit::with_tools([common::text_tool(None), common::weather_tool()]).unwrap()
}

fn setup(policy: CallPolicy) -> (Arc<ToolRegistry>, ToolExecutor, ToolContext) {
    let registry = Arc::new(
        ToolRegistry::builder()
            .tool(common::text_tool(None))
            .tool(common::weather_tool())
            .build()
            .unwrap(),
    );
    let exec = ToolExecutor::builder(Arc::clone(&registry))
        .policy(policy)
        .build();
    let ctx = ToolContext::builder(std::env::temp_dir()).build();
    (registry, exec, ctx)
}

#[tokio::test]
async fn res_1_sync_completion_carries_output() {
    let r = kit().call("text__upper", json!({"text": "abc"})).await;
    assert_eq!(r.status, ToolStatus::Ok);
    assert_eq!(r.output, Some(json!({"result": "ABC"})));
    assert!(r.handle.is_none() && r.error.is_none());
}

#[tokio::test]
async fn perm_1_only_catalog_tools_are_callable_by_default() {
    let (registry, exec, ctx) = setup(CallPolicy::CatalogOnly);
    let catalog = ToolCatalog::build(&registry, ["weather"]).unwrap();
    let ok = exec
        .execute(
            ToolCall::new("1", "weather__get", json!({"city": "Seoul"})),
            &ctx,
            &catalog,
        )
        .await;
    ok.assert_ok();
    // `text__upper` is registered but not in this Step's catalog.
    let refused = exec
        .execute(
            ToolCall::new("2", "text__upper", json!({"text": "a"})),
            &ctx,
            &catalog,
        )
        .await;
    refused.assert_error(codes::NOT_IN_CATALOG);
}

#[tokio::test]
async fn perm_2_out_of_catalog_call_is_refused_and_handler_not_run() {
    let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&ran);
    let tool = goondan_runtime::Tool::builder("spy")
        .export(goondan_runtime::Export::new(
            "run",
            goondan_runtime::tools::schema::empty_object_schema(),
            goondan_runtime::handler_fn(move |_c, _a| {
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
                async { Ok::<_, goondan_runtime::ToolError>(1) }
            }),
        ))
        .build()
        .unwrap();
    let mut kit = TestKit::with_tools([tool]).unwrap();
    kit.set_catalog(ToolCatalog::new());
    kit.call("spy__run", json!({}))
        .await
        .assert_error(codes::NOT_IN_CATALOG);
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
}

#[tokio::test]
async fn perm_3_registry_calls_need_an_explicit_policy() {
    let (_registry, exec, ctx) = setup(CallPolicy::AllowRegistry);
    let r = exec
        .execute(
            ToolCall::new("1", "text__upper", json!({"text": "a"})),
            &ctx,
            &ToolCatalog::new(),
        )
        .await;
    r.assert_output(json!({"result": "A"}));
    // Without the policy the same call is refused.
    let (_r, exec, ctx) = setup(CallPolicy::default());
    exec.execute(
        ToolCall::new("1", "text__upper", json!({"text": "a"})),
        &ctx,
        &ToolCatalog::new(),
    )
    .await
    .assert_error(codes::NOT_IN_CATALOG);
}

#[tokio::test]
async fn perm_4_refusal_is_structured() {
    let mut kit = kit();
    kit.set_catalog(ToolCatalog::build(kit.registry(), ["weather"]).unwrap());
    let r = kit.call("unknown__action", json!({})).await;
    assert_eq!(r.status, ToolStatus::Error);
    let err = r.assert_error("E_TOOL_NOT_IN_CATALOG");
    assert_eq!(err.name(), "ToolNotInCatalogError");
    assert!(
        err.message().contains("unknown__action"),
        "{}",
        err.message()
    );
    let suggestion = err.suggestion().unwrap();
    assert!(suggestion.contains("spec.tools"), "{suggestion}");
    assert!(suggestion.contains("weather__get"), "{suggestion}");
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["status"], "error");
    assert_eq!(v["error"]["code"], "E_TOOL_NOT_IN_CATALOG");
}

#[tokio::test]
async fn perm_4_a_slip_in_the_name_gets_a_did_you_mean() {
    fn suggestion_of(r: &goondan_runtime::ToolCallResult) -> String {
        r.error
            .as_ref()
            .and_then(|e| e.suggestion())
            .unwrap_or_default()
            .to_owned()
    }
    let kit = kit();
    for (slip, meant) in [
        ("text__uper", "text__upper"),
        ("Text__upper", "text__upper"),
        ("text_upper", "text__upper"),
        ("text__uppre", "text__upper"),
        ("weather__gte", "weather__get"),
    ] {
        let r = kit.call(slip, json!({"text": "a"})).await;
        let suggestion = suggestion_of(&r);
        assert!(
            suggestion.starts_with(&format!("did you mean `{meant}`?")),
            "{slip}: {suggestion}"
        );
    }
    // Nothing alike: no guess, only the list.
    let r = kit.call("calendar__create", json!({})).await;
    let suggestion = suggestion_of(&r);
    assert!(!suggestion.contains("did you mean"), "{suggestion}");
    assert!(
        suggestion.contains("available tools include"),
        "{suggestion}"
    );
}

#[tokio::test]
async fn names_with_double_underscores_in_odd_places_are_structured_errors() {
    let kit = kit();
    for name in [
        "",
        "text",
        "__upper",
        "text__",
        "text__upper__x",
        "Text__upper",
        "te xt__upper",
        "text___upper",
    ] {
        let r = kit.call(name, json!({"text": "a"})).await;
        assert!(r.is_error(), "{name:?} -> {r:?}");
        let code = r.error_code().unwrap();
        assert!(
            code == codes::INVALID_NAME || code == codes::NOT_IN_CATALOG,
            "{name:?}: {code}"
        );
        assert_eq!(r.tool_name, name);
    }
}

#[tokio::test]
async fn catalog_item_without_handler_is_not_found() {
    let mut kit = kit();
    let mut catalog = kit.catalog().clone();
    catalog.push(goondan_runtime::CatalogItem::new(
        goondan_runtime::ToolName::parse("ghost__run").unwrap(),
    ));
    kit.set_catalog(catalog);
    let err = kit
        .call("ghost__run", json!({}))
        .await
        .assert_error(codes::NOT_FOUND)
        .clone();
    assert_eq!(err.name(), "ToolNotFoundError");
}

#[tokio::test]
async fn res_3_handler_failure_is_a_result_not_a_panic() {
    let r = kit().call("text__fail", json!({"len": 10})).await;
    let err = r.assert_error("E_DEMO");
    assert_eq!(err.name(), "DemoError");
    assert_eq!(err.message(), "x".repeat(10));
}

#[tokio::test]
async fn res_3_panicking_handler_becomes_e_tool_panic() {
    let kit = kit();
    let r = kit.call("text__panic", json!({"len": 1})).await;
    let err = r.assert_error(codes::PANIC);
    assert!(
        err.message().contains("handler exploded"),
        "{}",
        err.message()
    );
    // The executor is still usable after a panic.
    kit.call("text__upper", json!({"text": "a"}))
        .await
        .assert_ok();
}

#[tokio::test]
async fn res_4_message_is_cut_to_the_resources_limit() {
    let kit = TestKit::with_tools([common::text_tool(Some(50))]).unwrap();
    let r = kit.call("text__fail", json!({"len": 500})).await;
    let err = r.assert_error("E_DEMO");
    assert_eq!(err.message().chars().count(), 50);
    assert!(err.message().ends_with(TRUNCATION_SUFFIX));
    // A message under the limit is untouched.
    let r = kit.call("text__fail", json!({"len": 50})).await;
    assert_eq!(r.error.unwrap().message(), "x".repeat(50));
}

#[tokio::test]
async fn res_4_limit_applies_to_runtime_errors_too() {
    let kit = TestKit::with_tools([common::text_tool(Some(40))]).unwrap();
    let r = kit
        .call(
            "text__many",
            json!({"a": "x", "b": 1, "c": 1, "d": 1, "f": -1, "g": 1}),
        )
        .await;
    let err = r.assert_error(codes::INVALID_ARGS);
    assert!(err.message().chars().count() <= 40, "{}", err.message());
    assert!(err.message().ends_with(TRUNCATION_SUFFIX));
}

#[tokio::test]
async fn res_5_default_limit_is_1000_characters() {
    let r = kit().call("text__fail", json!({"len": 5000})).await;
    let err = r.assert_error("E_DEMO");
    assert_eq!(err.message().chars().count(), 1000);
    assert!(err.message().ends_with(TRUNCATION_SUFFIX));
    let r = kit().call("text__fail", json!({"len": 1000})).await;
    assert_eq!(r.error.unwrap().message().len(), 1000);
}

#[tokio::test]
async fn res_6_runtime_errors_carry_a_suggestion() {
    let kit = kit();
    let cases = [
        ("nope__x", json!({})),
        ("bad", json!({})),
        ("text__upper", json!({"text": 1})),
        ("text__panic", json!({"len": 1})),
    ];
    for (name, args) in cases {
        let r = kit.call(name, args).await;
        let err = r.error.as_ref().unwrap();
        assert!(
            err.suggestion().is_some_and(|s| !s.is_empty()),
            "{name}: {r:?}"
        );
    }
}

#[tokio::test]
async fn res_7_runtime_errors_have_a_help_url_authors_codes_none() {
    let kit = kit();
    for (name, args) in [("nope__x", json!({})), ("text__upper", json!([]))] {
        let r = kit.call(name, args).await;
        let err = r.error.unwrap();
        let anchor = err.code().to_ascii_lowercase();
        assert_eq!(
            err.help_url(),
            Some(format!("{DEFAULT_HELP_URL_BASE}#{anchor}").as_str())
        );
    }
    // `E_DEMO` is the tool's own code, and the tool documents none.
    let r = kit.call("text__fail", json!({"len": 3})).await;
    assert_eq!(r.error.unwrap().help_url(), None);
}

#[tokio::test]
async fn res_9_result_echoes_call_id_and_tool_name() {
    let kit = kit();
    let r = kit
        .execute(ToolCall::new(
            "call_abc",
            "text__upper",
            json!({"text": "q"}),
        ))
        .await;
    assert_eq!(r.tool_call_id, "call_abc");
    assert_eq!(r.tool_name, "text__upper");
    let r = kit
        .execute(ToolCall::new("call_def", "x__y", json!({})))
        .await;
    assert_eq!(
        (r.tool_call_id.as_str(), r.tool_name.as_str()),
        ("call_def", "x__y")
    );
}

#[tokio::test]
async fn res_10_plain_handler_error_defaults_to_e_tool() {
    let tool = goondan_runtime::Tool::builder("plain")
        .export(goondan_runtime::Export::typed(
            "go",
            |_c, _i: common::Empty| async { Err::<(), _>("disk full") },
        ))
        .build()
        .unwrap();
    let kit = TestKit::with_tools([tool]).unwrap();
    let r = kit.call("plain__go", json!({})).await;
    let err = r.assert_error("E_TOOL");
    assert_eq!(err.name(), "Error");
    assert_eq!(err.message(), "disk full");
}

#[tokio::test]
async fn invalid_args_list_each_problem_with_its_path_and_no_coercion() {
    let kit = kit();
    let r = kit.call("text__upper", json!({"text": 5})).await;
    let err = r.assert_error(codes::INVALID_ARGS);
    assert!(err.message().contains("/text"), "{}", err.message());
    assert_eq!(err.name(), "InvalidArgumentsError");
    let s = err.suggestion().unwrap();
    assert!(
        s.contains("required: `text`") && s.contains("allowed: `text`"),
        "{s}"
    );

    // "5" is not coerced into 5.
    let r = kit
        .call(
            "text__many",
            json!({"a": "5", "b": "x", "c": true, "d": [], "f": 1, "g": "y"}),
        )
        .await;
    let err = r.assert_error(codes::INVALID_ARGS);
    assert!(err.message().contains("/a"), "{}", err.message());
}

#[tokio::test]
async fn invalid_args_list_at_most_five_problems_plus_a_count() {
    let kit = kit();
    // Seven problems: a, b, c, d, f wrong types; g missing; `extra` not allowed.
    let r = kit
        .call(
            "text__many",
            json!({"a": "x", "b": 1, "c": "no", "d": "x", "f": 300, "extra": 1}),
        )
        .await;
    let err = r.assert_error(codes::INVALID_ARGS);
    let msg = err.message();
    let total: usize = msg
        .strip_prefix("invalid arguments (")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {msg}"));
    assert!(total >= 7, "{msg}");
    assert_eq!(msg.matches("\n- at ").count(), 5, "{msg}");
    assert!(msg.ends_with(&format!("- and {} more", total - 5)), "{msg}");
    for path in ["`/`", "`/a`", "`/b`", "`/c`", "`/d`"] {
        assert!(msg.contains(path), "{path} in {msg}");
    }
}

#[tokio::test]
async fn invalid_args_for_json_handlers_are_checked_against_the_schema() {
    let kit = kit();
    kit.call("weather__get", json!({"city": "Seoul"}))
        .await
        .assert_ok();
    for bad in [
        json!({}),
        json!({"city": ""}),
        json!({"city": 1}),
        json!({"city": "a", "x": 1}),
    ] {
        kit.call("weather__get", bad.clone())
            .await
            .assert_error(codes::INVALID_ARGS);
    }
}

#[tokio::test]
async fn non_object_arguments_are_refused_and_null_means_empty() {
    let kit = kit();
    for bad in [json!([1]), json!("text"), json!(3), json!(true)] {
        let r = kit.call("text__upper", bad.clone()).await;
        let err = r.assert_error(codes::INVALID_ARGS);
        assert!(
            err.message().contains("must be a JSON object"),
            "{}",
            err.message()
        );
    }
    kit.call("text__workdir", Value::Null).await.assert_ok();
    // Arguments cut off mid-object (a model's answer stopped at its token limit): the model is
    // told where the JSON broke.
    let r = kit.call("text__upper", json!("{\"text\": \"hel")).await;
    let err = r.assert_error(codes::INVALID_ARGS);
    assert!(
        err.message()
            .contains("is not valid JSON (EOF while parsing a string at line 1")
            && err.message().contains("token limit"),
        "{}",
        err.message()
    );
}

#[tokio::test]
async fn huge_arguments_are_handled_without_loss_or_panic() {
    let kit = kit();
    let big = "a".repeat(5_000_000);
    let r = kit.call("text__upper", json!({"text": big})).await;
    assert_eq!(r.assert_ok()["result"].as_str().unwrap().len(), 5_000_000);
    let r = kit
        .call(
            "text__upper",
            json!({"text": 1, "pad": "b".repeat(1_000_000)}),
        )
        .await;
    assert!(r.error.unwrap().message().chars().count() <= 1000);
}

#[tokio::test]
async fn timeout_is_per_export_and_per_executor() {
    let kit = kit();
    // `text__sleep` sets 200 ms itself.
    let started = std::time::Instant::now();
    let r = kit.call("text__sleep", json!({"ms": 10_000})).await;
    let err = r.assert_error(codes::TIMEOUT);
    assert_eq!(err.name(), "ToolTimeoutError");
    assert!(started.elapsed() < Duration::from_secs(5));
    kit.call("text__sleep", json!({"ms": 1}))
        .await
        .assert_output(json!(1));

    // An executor default applies to exports that set none.
    let tool = goondan_runtime::Tool::builder("slow")
        .export(goondan_runtime::Export::typed(
            "run",
            |_c, i: common::SleepIn| async move {
                tokio::time::sleep(Duration::from_millis(i.ms)).await;
                Ok::<_, goondan_runtime::ToolError>(())
            },
        ))
        .build()
        .unwrap();
    let kit = TestKit::builder()
        .tool(tool)
        .default_timeout(Duration::from_millis(100))
        .build()
        .unwrap();
    kit.call("slow__run", json!({"ms": 5000}))
        .await
        .assert_error(codes::TIMEOUT);
    kit.call("slow__run", json!({"ms": 1})).await.assert_ok();
}

#[tokio::test]
async fn cancellation_through_the_context_stops_the_call() {
    let (registry, exec, _) = setup(CallPolicy::CatalogOnly);
    let token = tokio_util_token();
    let ctx = ToolContext::builder(std::env::temp_dir())
        .cancellation(token.clone())
        .build();
    let catalog = ToolCatalog::all(&registry);
    let cancel = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        token.cancel();
    });
    let r = exec
        .execute(
            ToolCall::new("1", "text__sleep", json!({"ms": 150})),
            &ctx,
            &catalog,
        )
        .await;
    r.assert_error(codes::CANCELLED);
    cancel.await.unwrap();
    // A cancelled Step refuses new calls at once.
    exec.execute(
        ToolCall::new("2", "text__upper", json!({"text": "a"})),
        &ctx,
        &catalog,
    )
    .await
    .assert_error(codes::CANCELLED);
}

fn tokio_util_token() -> tokio_util::sync::CancellationToken {
    tokio_util::sync::CancellationToken::new()
}

#[tokio::test]
async fn res_2_pending_result_completes_by_poll_wait_and_event() {
    let kit = kit();
    let mut events = kit.executor().pending().subscribe();
    let r = kit.call("text__later", json!({"ms": 50})).await;
    let handle = r.assert_pending().to_owned();
    assert!(r.output.is_none());
    assert_eq!(
        kit.executor().pending().poll(&handle),
        Some(PendingState::Running)
    );
    let event = tokio::time::timeout(Duration::from_secs(5), events.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event.tool_call_id, r.tool_call_id);
    assert_eq!(event.output, Some(json!({"slept": 50})));
    match kit.executor().pending().poll(&handle) {
        Some(PendingState::Finished(done)) => assert_eq!(done, event),
        other => panic!("{other:?}"),
    }
    let waited = kit.executor().pending().wait(&handle).await.unwrap();
    assert_eq!(waited, event);
    // Waiting consumed it.
    assert!(kit.executor().pending().poll(&handle).is_none());
}

#[tokio::test]
async fn ctx_2_workdir_is_the_instance_workspace() {
    let kit = kit();
    let r = kit.call("text__workdir", json!({})).await;
    assert_eq!(
        r.assert_ok().as_str().unwrap(),
        kit.workdir().display().to_string()
    );
}

#[tokio::test]
async fn fifty_concurrent_calls_keep_their_ids() {
    let kit = Arc::new(kit());
    let mut tasks = Vec::new();
    for i in 0..50 {
        let kit = Arc::clone(&kit);
        tasks.push(tokio::spawn(async move {
            let r = kit
                .execute(ToolCall::new(
                    format!("c{i}"),
                    "text__upper",
                    json!({"text": format!("t{i}")}),
                ))
                .await;
            (i, r)
        }));
    }
    for t in tasks {
        let (i, r) = t.await.unwrap();
        assert_eq!(r.tool_call_id, format!("c{i}"));
        assert_eq!(r.assert_ok()["result"], format!("T{i}"));
    }
}

/// Tools for the argument, output and timeout rules below, written with `#[tool]` as a user
/// would.
#[goondan_runtime::tool(name = "checked")]
pub mod checked {
    use goondan_runtime::Pending;
    use goondan_runtime::prelude::*;

    /// The README's own struct input: no `deny_unknown_fields`.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct CountInput {
        /// The text whose words are counted.
        pub text: String,
        /// At most this many words.
        pub limit: Option<u32>,
        /// A nested struct, also without `deny_unknown_fields`.
        pub options: Option<Options>,
    }

    /// Nested options.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Options {
        pub trim: bool,
    }

    /// A struct input with constraints serde cannot see.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Bounded {
        #[schemars(range(max = 10))]
        pub limit: u32,
        #[schemars(length(min = 1, max = 5))]
        pub name: String,
        #[schemars(regex(pattern = r"^[a-z]+$"))]
        pub slug: Option<String>,
        #[schemars(length(max = 2))]
        pub tags: Option<Vec<String>>,
    }

    /// Count words.
    pub fn count(input: CountInput) -> usize {
        let n = input.text.split_whitespace().count();
        input.limit.map_or(n, |l| n.min(l as usize))
    }

    /// A struct input with constraints.
    pub fn bounded(input: Bounded) -> u32 {
        input.limit
    }

    /// Named parameters with a constraint.
    pub fn page(
        /// At most 10.
        #[schemars(range(max = 10))]
        limit: u32,
    ) -> u32 {
        limit
    }

    /// An integer parameter.
    pub fn double(n: i64) -> i64 {
        n * 2
    }

    /// An integer inside a list and an optional.
    pub fn sum(items: Vec<u8>, extra: Option<i32>) -> i64 {
        items.iter().map(|&i| i64::from(i)).sum::<i64>() + i64::from(extra.unwrap_or(0))
    }

    /// An output JSON cannot hold: NaN.
    pub fn nan() -> f64 {
        f64::NAN
    }

    /// A report whose mean is undefined when there are no samples.
    #[derive(serde::Serialize)]
    pub struct Report {
        pub name: String,
        pub stats: Vec<Stat>,
    }

    /// One statistic.
    #[derive(serde::Serialize)]
    pub struct Stat {
        pub mean: f64,
    }

    /// A NaN deep in a struct when `samples` is 0.
    pub fn report(samples: u32) -> Report {
        let total = f64::from(samples) * 1.5;
        Report {
            name: "r".to_owned(),
            stats: vec![Stat {
                mean: total / f64::from(samples),
            }],
        }
    }

    /// An infinity deep in a list of numbers.
    pub fn readings() -> Vec<Vec<f32>> {
        vec![vec![1.0], vec![2.0, f32::INFINITY]]
    }

    /// A pending completion that is NaN.
    pub fn later() -> Pending {
        Pending::new(async { Ok::<_, ToolError>(vec![f64::NEG_INFINITY]) })
    }

    /// Blocks its thread for `ms` under a 100 ms timeout.
    #[export(timeout_ms = 100)]
    pub fn block(ms: u64) -> u64 {
        std::thread::sleep(std::time::Duration::from_millis(ms));
        super::BLOCK_DONE.store(true, std::sync::atomic::Ordering::SeqCst);
        ms
    }

    /// Blocks its first poll for `block_ms`, then waits `wait_ms`, under a 1 s timeout.
    #[export(timeout_ms = 1000)]
    pub async fn slow_start(block_ms: u64, wait_ms: u64) -> u64 {
        std::thread::sleep(std::time::Duration::from_millis(block_ms));
        tokio::time::sleep(std::time::Duration::from_millis(wait_ms)).await;
        block_ms + wait_ms
    }
}

static BLOCK_DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn checked_kit() -> TestKit {
    TestKit::with_tools([checked::TOOL]).unwrap()
}

#[tokio::test]
async fn spec_6_struct_inputs_refuse_unknown_and_misspelt_keys_at_any_depth() {
    let kit = checked_kit();
    kit.call("checked__count", json!({"text": "a b"}))
        .await
        .assert_output(json!(2));
    for bad in [
        json!({"text": "a b", "extra": 1}),
        json!({"text": "a b c", "limt": 1}),
        json!({"text": "a b", "options": {"trim": true, "trimm": false}}),
    ] {
        let r = kit.call("checked__count", bad.clone()).await;
        let err = r.assert_error(codes::INVALID_ARGS);
        assert!(
            err.message().contains("extra")
                || err.message().contains("limt")
                || err.message().contains("trimm"),
            "{bad}: {}",
            err.message()
        );
    }
    kit.call("checked__count", json!({"text": "a b c", "limit": 1}))
        .await
        .assert_output(json!(1));
}

#[tokio::test]
async fn spec_6_constraints_the_model_is_shown_are_enforced_for_struct_and_named_inputs() {
    let kit = checked_kit();
    kit.call("checked__page", json!({"limit": 10}))
        .await
        .assert_output(json!(10));
    let err = kit.call("checked__page", json!({"limit": 50})).await;
    let err = err.assert_error(codes::INVALID_ARGS);
    assert!(err.message().contains("/limit"), "{}", err.message());

    let ok = json!({"limit": 3, "name": "ab", "slug": "ab", "tags": ["x"]});
    kit.call("checked__bounded", ok)
        .await
        .assert_output(json!(3));
    for bad in [
        json!({"limit": 11, "name": "ab"}),
        json!({"limit": 1, "name": ""}),
        json!({"limit": 1, "name": "abcdef"}),
        json!({"limit": 1, "name": "ab", "slug": "AB"}),
        json!({"limit": 1, "name": "ab", "tags": ["a", "b", "c"]}),
        json!({"limit": 1, "name": "ab", "other": true}),
    ] {
        kit.call("checked__bounded", bad.clone())
            .await
            .assert_error(codes::INVALID_ARGS);
    }
}

#[tokio::test]
async fn integral_floats_count_as_integers_but_fractions_and_strings_do_not() {
    let kit = checked_kit();
    kit.call("checked__double", json!({"n": 2.0}))
        .await
        .assert_output(json!(4));
    kit.call("checked__double", json!({"n": -3.0}))
        .await
        .assert_output(json!(-6));
    kit.call("checked__sum", json!({"items": [1.0, 2], "extra": 3.0}))
        .await
        .assert_output(json!(6));
    kit.call("checked__page", json!({"limit": 10.0}))
        .await
        .assert_output(json!(10));
    for bad in [json!({"n": 2.5}), json!({"n": "2"}), json!({"n": 1e30})] {
        kit.call("checked__double", bad.clone())
            .await
            .assert_error(codes::INVALID_ARGS);
    }
    kit.call("checked__sum", json!({"items": [256.0]}))
        .await
        .assert_error(codes::INVALID_ARGS);
    kit.call("checked__page", json!({"limit": 11.0}))
        .await
        .assert_error(codes::INVALID_ARGS);
}

#[tokio::test]
async fn res_3_an_output_json_cannot_hold_is_e_tool_output_never_null() {
    let kit = checked_kit();
    kit.call("checked__report", json!({"samples": 2}))
        .await
        .assert_output(json!({"name": "r", "stats": [{"mean": 1.5}]}));
    let r = kit.call("checked__report", json!({"samples": 0})).await;
    let err = r.assert_error(codes::OUTPUT);
    assert!(err.message().contains("stats"), "{}", err.message());
    for tool in ["checked__nan", "checked__readings"] {
        let r = kit.call(tool, json!({})).await;
        assert!(r.output.is_none(), "{tool}: {:?}", r.output);
        let err = r.assert_error(codes::OUTPUT);
        assert!(err.suggestion().is_some(), "{tool}");
        assert!(
            err.message().contains("NaN") || err.message().contains("inf"),
            "{}",
            err.message()
        );
    }
    // A pending completion too.
    let r = kit.call("checked__later", json!({})).await;
    let handle = r.assert_pending().to_owned();
    let done = tokio::time::timeout(
        Duration::from_secs(5),
        kit.executor().pending().wait(&handle),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(done.output.is_none(), "{:?}", done.output);
    assert_eq!(done.error_code(), Some(codes::OUTPUT));
}

#[tokio::test]
async fn timeout_holds_for_a_sync_export_and_the_runtime_keeps_serving() {
    let kit = checked_kit();
    let started = std::time::Instant::now();
    let blocked = async {
        let r = kit.call("checked__block", json!({"ms": 3000})).await;
        (r, started.elapsed())
    };
    let other = async {
        // Give the blocked call a head start, then ask for something else.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let r = kit.call("checked__double", json!({"n": 21})).await;
        let still_sleeping = !BLOCK_DONE.load(std::sync::atomic::Ordering::SeqCst);
        (r, started.elapsed(), still_sleeping)
    };
    let ((blocked, blocked_after), (other, other_after, still_sleeping)) =
        tokio::join!(blocked, other);
    let err = blocked.assert_error(codes::TIMEOUT);
    assert!(err.message().contains("100 ms"), "{}", err.message());
    assert!(blocked_after < Duration::from_secs(2), "{blocked_after:?}");
    other.assert_output(json!(42));
    assert!(other_after < Duration::from_secs(2), "{other_after:?}");
    assert!(
        still_sleeping,
        "the second call finished while the first slept"
    );
    // Without hitting the limit, a sync export answers as before.
    kit.call("checked__block", json!({"ms": 1}))
        .await
        .assert_output(json!(1));
}

#[tokio::test]
async fn timeout_counts_an_async_handlers_first_poll() {
    let kit = checked_kit();
    // 1 s blocked in the first poll, then 500 ms of waiting: 1.5 s against a 1 s limit. Timed
    // from after the first poll it would have fit.
    kit.call(
        "checked__slow_start",
        json!({"block_ms": 1000, "wait_ms": 500}),
    )
    .await
    .assert_error(codes::TIMEOUT);
    kit.call("checked__slow_start", json!({"block_ms": 0, "wait_ms": 10}))
        .await
        .assert_output(json!(10));
}

// ---- Rich results ----

/// Pictures.
#[goondan_runtime::tool(name = "pictures")]
pub mod pictures {
    use goondan_runtime::ToolError;
    use goondan_runtime::tools::content::{Content, ToolReturn};

    /// One pixel.
    pub fn pixel() -> Content {
        Content::image_png(vec![0x89, b'P', b'N', b'G'])
    }

    /// A caption and a picture.
    pub fn captioned() -> ToolReturn {
        ToolReturn::new(serde_json::json!({"caption": "a pixel"}))
            .with(Content::image_png(vec![1, 2, 3]))
    }

    /// A picture larger than the cap.
    pub fn huge() -> Content {
        Content::image_png(vec![0u8; 2048])
    }

    /// Fails with a long message, after making a picture it never returns.
    pub fn failing() -> Result<Content, ToolError> {
        Err(ToolError::new("x".repeat(5000)))
    }
}

#[tokio::test]
async fn a_tool_answers_with_content_parts_kept_whole_in_the_result() {
    use goondan_runtime::tools::content::Content;
    let kit = TestKit::builder().tool(pictures::TOOL).build().unwrap();
    let r = kit.call("pictures__pixel", json!({})).await;
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(r.output, Some(Value::Null));
    assert_eq!(
        r.content,
        vec![Content::image_png(vec![0x89, b'P', b'N', b'G'])]
    );
    let r = kit.call("pictures__captioned", json!({})).await;
    assert_eq!(r.output, Some(json!({"caption": "a pixel"})));
    assert_eq!(r.content.len(), 1);
    // The documented shape: MCP's content blocks, base64 data; and it reads back.
    let text = serde_json::to_value(&r).unwrap();
    assert_eq!(
        text["content"],
        json!([{"type": "image", "mimeType": "image/png", "data": "AQID"}])
    );
    let back: goondan_runtime::ToolCallResult = serde_json::from_value(text).unwrap();
    assert_eq!(back, r);
    // A plain result has no `content` key at all.
    let plain =
        serde_json::to_value(goondan_runtime::ToolCallResult::ok("c", "a__b", json!(1))).unwrap();
    assert!(plain.get("content").is_none());
}

#[tokio::test]
async fn res_4_content_larger_than_the_cap_is_refused_and_never_cut() {
    use goondan_runtime::ToolExecutor;
    let registry = Arc::new(
        ToolRegistry::builder()
            .tool(pictures::TOOL)
            .build()
            .unwrap(),
    );
    let executor = ToolExecutor::builder(Arc::clone(&registry))
        .max_content_bytes(1024)
        .build();
    let catalog = goondan_runtime::ToolCatalog::all(&registry);
    let ctx = ToolContext::builder("/tmp").build();
    let r = executor
        .execute(
            ToolCall::new("c1", "pictures__huge", json!({})),
            &ctx,
            &catalog,
        )
        .await;
    assert_eq!(r.error_code(), Some("E_TOOL_CONTENT_TOO_LARGE"), "{r:?}");
    assert!(r.content.is_empty());
    // Within the cap, the bytes come through whole (the message limit is for messages).
    let r = executor
        .execute(
            ToolCall::new("c2", "pictures__captioned", json!({})),
            &ctx,
            &catalog,
        )
        .await;
    assert_eq!(r.content[0].byte_len(), 3);
    let r = executor
        .execute(
            ToolCall::new("c3", "pictures__failing", json!({})),
            &ctx,
            &catalog,
        )
        .await;
    assert!(r.error.as_ref().unwrap().message().len() <= 1000);
}
