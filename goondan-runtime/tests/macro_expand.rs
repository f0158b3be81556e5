//! What `#[tool]` generates, observed from the outside: names, descriptions, schemas, handlers
//! that really run, registration, and the user's functions left as they were.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures_util::FutureExt;
use goondan_runtime::prelude::*;
use goondan_runtime::testing::{ResultAssertions, TestKit};
use goondan_runtime::tools::handler::HandlerError;
use goondan_runtime::tools::result::JsonObject;
use goondan_runtime::{Outcome, Tool};
use serde_json::{Value, json};

/// Text utilities.
///
/// For tests.
#[tool(name = "text-utils")]
pub mod text_utils {
    use super::*;

    /// Convert text to uppercase.
    pub async fn uppercase(
        ctx: &ToolContext,
        /// The text to convert.
        text: String,
        /// How many times to repeat it.
        times: Option<u32>,
    ) -> Result<String, ToolError> {
        if text.is_empty() {
            return Err(ToolError::new("nothing to convert")
                .with_code("E_EMPTY")
                .with_suggestion("pass some text"));
        }
        tracing::debug!(agent = ctx.agent_name(), "uppercasing");
        Ok(shout(&text).repeat(times.unwrap_or(1) as usize))
    }

    /// Count the words of a text.
    #[export(name = "count-words", timeout_ms = 1500)]
    pub fn count_words(input: CountInput) -> usize {
        input.text.split_whitespace().count()
    }

    /// Who is calling.
    pub fn whoami(
        /// Put before the agent's name.
        prefix: String,
        ctx: &ToolContext,
    ) -> String {
        format!("{prefix}{}", ctx.agent_name())
    }

    /// A helper, not an export: not `pub`.
    fn shout(text: &str) -> String {
        text.to_uppercase()
    }
}

/// The input of `count-words`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CountInput {
    /// The text whose words to count.
    pub text: String,
}

/// Repeat the text back.
#[tool(name = "echo")]
pub async fn echo(
    /// What to repeat.
    text: String,
) -> String {
    text
}

/// A lone function with an `#[export]` and no parameters.
#[tool(name = "clock", error_message_limit = 200)]
#[export(name = "now", description = "The time, frozen")]
pub fn frozen_clock() -> u64 {
    1_700_000_000
}

/// A counter whose state lives between calls.
pub struct Counter {
    next: AtomicU64,
}

/// Counting.
#[tool(name = "counter")]
impl Counter {
    /// A constructor: `pub`, without `&self`, so not an export.
    pub fn new(start: u64) -> Self {
        Counter {
            next: AtomicU64::new(start),
        }
    }

    /// Take the next number.
    pub fn bump(&self) -> u64 {
        self.next.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Add to the current number without changing it.
    pub async fn peek_plus(&self, by: u64, ctx: &ToolContext) -> Result<u64, ToolError> {
        let _ = ctx.workdir();
        Ok(self.next.load(Ordering::SeqCst) + by)
    }
}

static SIDE_EFFECT: AtomicBool = AtomicBool::new(false);

/// Odds and ends.
#[tool(name = "misc")]
pub mod misc {
    use super::*;

    /// Records that it ran.
    pub fn record() {
        SIDE_EFFECT.store(true, Ordering::SeqCst);
    }

    /// Starts background work.
    pub fn later(value: u64) -> Pending {
        Pending::new(async move { Ok::<_, ToolError>(value) })
    }

    /// Reads a file (`io::Result` is fallible).
    pub fn size(path: String) -> std::io::Result<u64> {
        Ok(std::fs::metadata(path)?.len())
    }

    /// `serde` attributes on a parameter apply to its property.
    pub fn find(
        /// The query.
        #[serde(rename = "q")]
        query: String,
        #[serde(default)] exact: bool,
        r#type: Option<String>,
    ) -> Value {
        json!({"query": query, "exact": exact, "type": r#type})
    }
}

fn export<'a>(tool: &'a Tool, name: &str) -> &'a goondan_runtime::Export {
    tool.exports()
        .find(|(n, _)| n.as_str() == name)
        .map(|(_, e)| e)
        .unwrap_or_else(|| panic!("no export {name} in {tool:?}"))
}

fn names(tool: &Tool) -> Vec<String> {
    tool.tool_names().map(ToString::to_string).collect()
}

fn args(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[test]
fn name_1_exports_are_named_resource_double_underscore_export() {
    let tool = text_utils::TOOL.build().unwrap();
    assert_eq!(tool.name(), "text-utils");
    assert_eq!(
        names(&tool),
        [
            "text-utils__uppercase",
            "text-utils__count-words",
            "text-utils__whoami"
        ]
    );
    assert_eq!(text_utils::TOOL.name(), "text-utils");
}

#[test]
fn name_4_lone_fn_is_a_resource_with_one_export_named_after_it() {
    assert_eq!(names(&echo::TOOL.build().unwrap()), ["echo__echo"]);
    assert_eq!(names(&frozen_clock::TOOL.build().unwrap()), ["clock__now"]);
}

#[test]
fn descriptions_come_from_doc_comments() {
    let tool = text_utils::TOOL.build().unwrap();
    assert_eq!(tool.description(), Some("Text utilities.\n\nFor tests."));
    let upper = export(&tool, "text-utils__uppercase");
    assert_eq!(upper.description(), Some("Convert text to uppercase."));
    let props = &upper.parameters()["properties"];
    assert_eq!(props["text"]["description"], "The text to convert.");
    assert_eq!(
        props["times"]["description"],
        "How many times to repeat it."
    );
    // A whole-struct input keeps its own field docs.
    let count = export(&tool, "text-utils__count-words");
    assert_eq!(
        count.parameters()["properties"]["text"]["description"],
        "The text whose words to count."
    );
    // A lone fn: its doc describes the resource and the export.
    let echo = echo::TOOL.build().unwrap();
    assert_eq!(echo.description(), Some("Repeat the text back."));
    assert_eq!(
        export(&echo, "echo__echo").description(),
        Some("Repeat the text back.")
    );
    // `#[export(description)]` wins over the doc comment.
    let clock = frozen_clock::TOOL.build().unwrap();
    assert_eq!(
        export(&clock, "clock__now").description(),
        Some("The time, frozen")
    );
}

#[test]
fn spec_6_named_parameters_are_an_object_schema_without_the_context() {
    let tool = text_utils::TOOL.build().unwrap();
    let params = export(&tool, "text-utils__uppercase").parameters();
    assert_eq!(params["type"], "object");
    assert_eq!(params["additionalProperties"], false);
    let keys: Vec<&String> = params["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["text", "times"]);
    // `Option<T>` is not required; the context is not a property.
    assert_eq!(params["required"], json!(["text"]));
    let whoami = export(&tool, "text-utils__whoami").parameters();
    assert_eq!(whoami["required"], json!(["prefix"]));
}

#[test]
fn whole_struct_input_is_the_schema_of_that_struct() {
    let tool = text_utils::TOOL.build().unwrap();
    let params = export(&tool, "text-utils__count-words").parameters();
    assert_eq!(params["required"], json!(["text"]));
    assert!(params["properties"].get("input").is_none(), "{params}");
}

#[test]
fn zero_parameters_take_an_empty_object() {
    let tool = frozen_clock::TOOL.build().unwrap();
    assert_eq!(
        export(&tool, "clock__now").parameters(),
        &json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
}

#[test]
fn serde_attributes_on_parameters_shape_the_properties() {
    let tool = misc::TOOL.build().unwrap();
    let params = export(&tool, "misc__find").parameters();
    let keys: Vec<&String> = params["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["q", "exact", "type"]);
    assert_eq!(params["required"], json!(["q"]));
    assert_eq!(params["properties"]["q"]["description"], "The query.");
}

#[test]
fn spec_4_error_message_limit_defaults_to_1000_and_can_be_set() {
    assert_eq!(
        text_utils::TOOL.build().unwrap().error_message_limit(),
        1000
    );
    assert_eq!(
        frozen_clock::TOOL.build().unwrap().error_message_limit(),
        200
    );
}

#[test]
fn export_timeout_comes_from_the_attribute() {
    let tool = text_utils::TOOL.build().unwrap();
    assert_eq!(
        export(&tool, "text-utils__count-words").timeout(),
        Some(Duration::from_millis(1500))
    );
    assert_eq!(export(&tool, "text-utils__uppercase").timeout(), None);
}

#[tokio::test]
async fn user_functions_stay_callable_directly() {
    let ctx = ToolContext::builder("/tmp").agent_name("me").build();
    assert_eq!(
        text_utils::uppercase(&ctx, "hi".into(), Some(2))
            .await
            .unwrap(),
        "HIHI"
    );
    assert_eq!(
        text_utils::count_words(CountInput { text: "a b".into() }),
        2
    );
    assert_eq!(text_utils::whoami("@".into(), &ctx), "@me");
    assert_eq!(echo("x".into()).await, "x");
    assert_eq!(frozen_clock(), 1_700_000_000);
    assert_eq!(Counter::new(1).bump(), 2);
}

#[tokio::test]
async fn spec_1_generated_handlers_cover_every_export() {
    let kit = TestKit::builder()
        .tool(text_utils::TOOL)
        .agent_name("coder")
        .build()
        .unwrap();
    kit.call("text-utils__uppercase", json!({"text": "hi", "times": 2}))
        .await
        .assert_output(json!("HIHI"));
    kit.call("text-utils__count-words", json!({"text": "one two three"}))
        .await
        .assert_output(json!(3));
    kit.call("text-utils__whoami", json!({"prefix": "I am "}))
        .await
        .assert_output(json!("I am coder"));
}

#[tokio::test]
async fn spec_5_every_export_has_a_handler_and_no_handler_lacks_an_export() {
    // Call every export's handler directly: each one exists, runs, and answers.
    let tool = misc::TOOL.build().unwrap();
    assert_eq!(
        names(&tool),
        ["misc__record", "misc__later", "misc__size", "misc__find"]
    );
    let ctx = ToolContext::builder("/tmp").build();
    let calls = [
        ("misc__record", json!({})),
        ("misc__later", json!({"value": 1})),
        ("misc__size", json!({"path": "/definitely/not/here"})),
        ("misc__find", json!({"q": "x"})),
    ];
    for (name, input) in calls {
        let result = export(&tool, name).handler().call(&ctx, args(input)).await;
        match (name, result) {
            ("misc__size", Err(HandlerError::Failed(_))) => {}
            ("misc__later", Ok(Outcome::Pending(_))) => {}
            (_, Ok(Outcome::Output(_))) => {}
            (name, other) => panic!("{name}: unexpected {other:?}"),
        }
    }
}

#[tokio::test]
async fn handlers_read_named_arguments_and_apply_serde_attributes() {
    let kit = TestKit::with_tools([misc::TOOL]).unwrap();
    kit.call("misc__find", json!({"q": "rust", "type": "book"}))
        .await
        .assert_output(json!({"query": "rust", "exact": false, "type": "book"}));
}

#[tokio::test]
async fn err_becomes_a_structured_tool_error() {
    let kit = TestKit::with_tools([text_utils::TOOL]).unwrap();
    let result = kit.call("text-utils__uppercase", json!({"text": ""})).await;
    let err = result.assert_error("E_EMPTY");
    assert_eq!(err.message(), "nothing to convert");
    assert_eq!(err.suggestion(), Some("pass some text"));
    let io = TestKit::with_tools([misc::TOOL])
        .unwrap()
        .call("misc__size", json!({"path": "/definitely/not/here"}))
        .await;
    assert!(io.is_error(), "{io:?}");
}

#[tokio::test]
async fn unknown_and_mistyped_arguments_are_refused() {
    let kit = TestKit::with_tools([text_utils::TOOL]).unwrap();
    kit.call("text-utils__uppercase", json!({"text": "a", "loud": true}))
        .await
        .assert_error("E_TOOL_INVALID_ARGS");
    kit.call("text-utils__uppercase", json!({"text": 5}))
        .await
        .assert_error("E_TOOL_INVALID_ARGS");
    kit.call("text-utils__uppercase", json!({}))
        .await
        .assert_error("E_TOOL_INVALID_ARGS");
}

#[tokio::test]
async fn res_2_pending_return_submits_background_work() {
    let kit = TestKit::with_tools([misc::TOOL]).unwrap();
    let handle = kit
        .call("misc__later", json!({"value": 7}))
        .await
        .assert_pending()
        .to_owned();
    assert!(!handle.is_empty());
}

#[tokio::test]
async fn sync_functions_run_inside_call_async_ones_only_when_polled() {
    let tool = misc::TOOL.build().unwrap();
    let ctx = ToolContext::builder("/tmp").build();
    SIDE_EFFECT.store(false, Ordering::SeqCst);
    // A plain `fn` is declared blocking (the executor calls it on the blocking pool) and runs
    // inside `call`: its future is already answered.
    let record = export(&tool, "misc__record");
    assert!(record.blocks());
    let call = record.handler().call(&ctx, JsonObject::new());
    assert!(SIDE_EFFECT.load(Ordering::SeqCst));
    let outcome = call
        .now_or_never()
        .expect("a sync export answers in `call`");
    // A unit return is the JSON `null`.
    let outcome = outcome.unwrap();
    assert!(
        matches!(outcome, Outcome::Output(Value::Null)),
        "{outcome:?}"
    );
    // An `async fn` returns a future; nothing of it runs before it is polled.
    let kit_tool = text_utils::TOOL.build().unwrap();
    let mut args = JsonObject::new();
    args.insert("text".into(), json!("abc"));
    let uppercase = export(&kit_tool, "text-utils__uppercase");
    assert!(!uppercase.blocks());
    let outcome = uppercase.handler().call(&ctx, args).await.unwrap();
    assert!(matches!(outcome, Outcome::Output(_)), "{outcome:?}");
}

#[tokio::test]
async fn impl_form_shares_one_instance_across_calls() {
    let tool = Counter::new(5).into_tool().unwrap();
    assert_eq!(tool.description(), Some("Counting."));
    assert_eq!(names(&tool), ["counter__bump", "counter__peek_plus"]);
    let kit = TestKit::with_tools([tool]).unwrap();
    kit.call("counter__bump", json!({}))
        .await
        .assert_output(json!(6));
    kit.call("counter__bump", json!({}))
        .await
        .assert_output(json!(7));
    kit.call("counter__peek_plus", json!({"by": 10}))
        .await
        .assert_output(json!(17));
}

#[test]
fn mod_and_fn_tools_are_registered_and_impl_tools_are_not() {
    let linked: Vec<&str> = goondan_runtime::tools::tool::linked_tools()
        .iter()
        .map(|t| t.name())
        .collect();
    for name in ["text-utils", "echo", "clock", "misc"] {
        assert!(linked.contains(&name), "{name} missing from {linked:?}");
    }
    assert!(!linked.contains(&"counter"), "{linked:?}");
    let location = text_utils::TOOL.location();
    assert!(
        location.starts_with("macro_expand::text_utils at ")
            && location.contains("macro_expand.rs:"),
        "{location}"
    );
}

/// A string newtype, as a slug or a `Uuid` is: its schema is a string, not an object.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Slug(String);

/// A timestamp newtype, as `DateTime<Utc>` is: a string with `format: date-time`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(extend("format" = "date-time"))]
pub struct At(String);

/// A point, whose schema is an object.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Point {
    /// Across.
    pub x: i64,
    /// Down.
    pub y: i64,
}

/// Lone parameters whose type's schema decides how they are read.
#[tool(name = "lookup")]
pub mod lookup {
    use super::*;

    /// Finds a page by its slug.
    pub fn page(id: Slug) -> String {
        format!("page {}", id.0)
    }

    /// Events after a time.
    pub async fn since(at: At) -> String {
        format!("since {}", at.0)
    }

    /// Counts by key: a map is a named property too.
    pub fn tally(counts: std::collections::BTreeMap<String, u32>) -> u32 {
        counts.values().sum()
    }

    /// A struct made a named property by the marker.
    #[export(input = "named")]
    pub fn shift(point: Point) -> i64 {
        point.x + point.y
    }

    /// A struct read whole, by its schema.
    pub fn area(point: Point) -> i64 {
        point.x * point.y
    }

    /// A struct read whole, as the marker says.
    #[export(input = "whole")]
    pub fn diagonal(point: Point) -> i64 {
        point.x.max(point.y)
    }
}

#[tokio::test]
async fn spec_6_a_lone_newtype_parameter_is_a_named_property() {
    let tool = lookup::TOOL.build().unwrap();
    let page = export(&tool, "lookup__page").parameters();
    assert_eq!(page["type"], "object");
    assert_eq!(page["properties"]["id"]["type"], "string");
    assert_eq!(page["required"], json!(["id"]));
    let since = export(&tool, "lookup__since").parameters();
    assert_eq!(since["properties"]["at"]["type"], "string");
    assert_eq!(since["properties"]["at"]["format"], "date-time");
    assert_eq!(since["required"], json!(["at"]));
    let tally = export(&tool, "lookup__tally").parameters();
    assert_eq!(tally["properties"]["counts"]["type"], "object");

    let kit = TestKit::with_tools([lookup::TOOL]).unwrap();
    kit.call("lookup__page", json!({"id": "hello-world"}))
        .await
        .assert_output(json!("page hello-world"));
    kit.call("lookup__since", json!({"at": "2026-01-01T00:00:00Z"}))
        .await
        .assert_output(json!("since 2026-01-01T00:00:00Z"));
    kit.call("lookup__tally", json!({"counts": {"a": 2, "b": 3}}))
        .await
        .assert_output(json!(5));
    // The whole-input reading is not accepted: the id is a property.
    kit.call("lookup__page", json!({"hello": "world"}))
        .await
        .assert_error("E_TOOL_INVALID_ARGS");
}

#[tokio::test]
async fn spec_6_input_marker_and_object_schemas_decide_whole_or_named() {
    let tool = lookup::TOOL.build().unwrap();
    let shift = export(&tool, "lookup__shift").parameters();
    assert_eq!(shift["required"], json!(["point"]));
    assert_eq!(shift["properties"]["point"]["required"], json!(["x", "y"]));
    let area = export(&tool, "lookup__area").parameters();
    assert_eq!(area["required"], json!(["x", "y"]));
    let kit = TestKit::with_tools([lookup::TOOL]).unwrap();
    kit.call("lookup__shift", json!({"point": {"x": 2, "y": 3}}))
        .await
        .assert_output(json!(5));
    kit.call("lookup__area", json!({"x": 2, "y": 3}))
        .await
        .assert_output(json!(6));
    let diagonal = export(&tool, "lookup__diagonal").parameters();
    assert_eq!(diagonal["required"], json!(["x", "y"]));
    kit.call("lookup__diagonal", json!({"x": 2, "y": 3}))
        .await
        .assert_output(json!(3));
}

/// What `words__count` reads: derived through the runtime by `#[tool_input]`.
#[tool_input]
#[derive(Debug)]
pub struct WordsInput {
    /// The text whose words to count.
    pub text: String,
    /// Count only words at least this long.
    #[serde(default)]
    #[schemars(range(max = 100))]
    pub min_len: usize,
}

/// Counts words.
#[tool(name = "words")]
pub fn count(input: WordsInput) -> usize {
    input
        .text
        .split_whitespace()
        .filter(|w| w.len() >= input.min_len)
        .count()
}

#[tokio::test]
async fn tool_input_derives_the_whole_input_with_field_attributes() {
    let tool = count::TOOL.build().unwrap();
    let params = export(&tool, "words__count").parameters();
    assert_eq!(
        params["properties"]["text"]["description"],
        "The text whose words to count."
    );
    assert_eq!(params["properties"]["min_len"]["maximum"], 100);
    assert_eq!(params["required"], json!(["text"]));
    let kit = TestKit::with_tools([count::TOOL]).unwrap();
    kit.call("words__count", json!({"text": "a bb ccc", "min_len": 2}))
        .await
        .assert_output(json!(2));
    kit.call("words__count", json!({"text": "a bb ccc"}))
        .await
        .assert_output(json!(3));
    let refused = kit.call("words__count", json!({"min_len": 2})).await;
    assert_eq!(refused.error_code(), Some("E_TOOL_INVALID_ARGS"));
}
