//! Differential tests of the runtime's generic reading of named parameters (`Params`, what
//! `#[tool]` generates for functions whose parameters carry only doc comments) against the
//! struct `#[tool]` derived for them before (`#[derive(Deserialize, JsonSchema)]` with
//! `deny_unknown_fields`, one field per parameter): the same schema, the same values, and the
//! same errors, word for word.

use goondan_runtime::__private::{ParamNames, Params};
use goondan_runtime::ToolRegistry;
use goondan_runtime::prelude::*;
use goondan_runtime::tools::schema::schema_for;
use serde_json::{Value, json};

/// A nested input type, as a parameter's type.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
pub struct Point {
    /// Across.
    pub x: i32,
    /// Down.
    pub y: i32,
}

// The old reading: what `#[tool]` derived for `fn f(text, times, tags, at, note)` (no doc
// comment: the generated struct had none, and it would be the schema's description).
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(non_camel_case_types)]
struct __GoondanInput_f {
    /// The text to work on.
    text: String,
    /// How many times, when given.
    times: Option<u32>,
    /// Labels to attach.
    ///
    /// As many as you like.
    tags: Vec<String>,
    /// # Where
    /// The point to start from.
    at: Point,
    note: Option<serde_json::Value>,
}

/// The new reading of the same parameters.
struct F;
impl ParamNames for F {
    const NAME: &'static str = "__GoondanInput_f";
    const NAMES: &'static [&'static str] = &["text", "times", "tags", "at", "note"];
    const DOCS: &'static [(&'static str, &'static str)] = &[
        ("", "The text to work on."),
        ("", "How many times, when given."),
        ("", "Labels to attach.\n\nAs many as you like."),
        ("Where", "The point to start from."),
        ("", ""),
    ];
}
type New = Params<F, (String, Option<u32>, Vec<String>, Point, Option<Value>)>;

fn as_old(new: New) -> __GoondanInput_f {
    let (text, times, tags, at, note) = new.0;
    __GoondanInput_f {
        text,
        times,
        tags,
        at,
        note,
    }
}

#[test]
fn params_schema_is_the_derived_structs() {
    assert_eq!(schema_for::<New>(), schema_for::<__GoondanInput_f>());
}

/// Every input, read both ways from a `Value` and from JSON text: the same value or the same
/// error message.
#[test]
fn params_read_like_the_derived_struct_values_and_errors() {
    let inputs = [
        r#"{"text": "a", "times": 2, "tags": ["x"], "at": {"x": 1, "y": 2}, "note": {"k": 1}}"#,
        r#"{"text": "a", "tags": [], "at": {"x": 1, "y": 2}}"#,
        r#"{"tags": [], "at": {"x": 1, "y": 2}}"#,
        r#"{"text": "a", "tags": [], "at": {"x": 1, "y": 2}, "other": 1}"#,
        r#"{"text": "a", "text": "b", "tags": [], "at": {"x": 1, "y": 2}}"#,
        r#"{"text": 5, "tags": [], "at": {"x": 1, "y": 2}}"#,
        r#"{"text": "a", "tags": [], "at": {"x": 1}}"#,
        r#"{"text": "a", "times": -1, "tags": [], "at": {"x": 1, "y": 2}}"#,
        r#"{"text": "a", "times": null, "tags": [], "at": {"x": 1, "y": 2}, "note": null}"#,
        r#"["a", 2, ["x"], {"x": 1, "y": 2}, null]"#,
        r#"["a", 2]"#,
        r#"[]"#,
        r#""text""#,
        r#"null"#,
        r#"{}"#,
    ];
    for input in inputs {
        let old = serde_json::from_str::<__GoondanInput_f>(input).map_err(|e| e.to_string());
        let new = serde_json::from_str::<New>(input)
            .map(as_old)
            .map_err(|e| e.to_string());
        assert_eq!(new, old, "from text: {input}");
        // A duplicate key cannot be a `Value`.
        let Ok(value) = serde_json::from_str::<Value>(input) else {
            continue;
        };
        let old =
            serde_json::from_value::<__GoondanInput_f>(value.clone()).map_err(|e| e.to_string());
        let new = serde_json::from_value::<New>(value)
            .map(as_old)
            .map_err(|e| e.to_string());
        assert_eq!(new, old, "from a value: {input}");
    }
}

/// Through `#[tool]`: the generated input of a function whose parameters carry doc comments
/// (a title line, several paragraphs, none) has the derived struct's schema.
#[tool(name = "params")]
pub mod params_tool {
    use super::*;

    /// Joins its input into one line.
    pub fn f(
        /// The text to work on.
        text: String,
        /// How many times, when given.
        times: Option<u32>,
        /// Labels to attach.
        ///
        /// As many as you like.
        tags: Vec<String>,
        /// # Where
        /// The point to start from.
        at: Point,
        note: Option<Value>,
    ) -> String {
        format!("{text} {times:?} {tags:?} {at:?} {note:?}")
    }
}

#[test]
fn params_from_the_macro_have_the_derived_structs_schema() {
    let registry = ToolRegistry::builder()
        .tool(params_tool::TOOL)
        .build()
        .expect("registry");
    let export = registry.get("params__f").expect("registered");
    assert_eq!(
        export.export().parameters(),
        &*schema_for::<__GoondanInput_f>()
    );
    assert_eq!(
        params_tool::f("a".into(), None, vec![], Point { x: 1, y: 2 }, None),
        "a None [] Point { x: 1, y: 2 } None"
    );
}

/// A recursive input type: its schema refers to itself.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
pub struct Tree {
    /// The label.
    pub label: String,
    /// The children.
    pub children: Vec<Tree>,
}

// What `#[tool]` derived for `fn slug(slug: String)`: a lone parameter that is not an object is
// the one property of the input.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(non_camel_case_types)]
struct __GoondanInput_slug {
    /// The slug.
    slug: String,
}

/// Lone parameters: a struct is the whole input, anything else the one named property.
#[tool(name = "lone")]
pub mod lone_tool {
    use super::*;

    /// A point as the whole input.
    pub fn point(at: Point) -> i32 {
        at.x + at.y
    }

    /// A tree as the whole input.
    pub fn tree(tree: Tree) -> usize {
        tree.children.len()
    }

    /// A string as the one property.
    pub fn slug(
        /// The slug.
        slug: String,
    ) -> String {
        slug
    }
}

#[tokio::test]
async fn params_lone_reads_and_schemas_are_the_two_readings_of_before() {
    use goondan_runtime::{ToolCatalog, ToolExecutor};
    let registry = std::sync::Arc::new(
        ToolRegistry::builder()
            .tool(lone_tool::TOOL)
            .build()
            .expect("registry"),
    );
    let schema = |name: &str| {
        registry
            .get(name)
            .expect("registered")
            .export()
            .parameters()
            .clone()
    };
    assert_eq!(schema("lone__point"), *schema_for::<Point>());
    assert_eq!(schema("lone__tree"), *schema_for::<Tree>());
    assert_eq!(schema("lone__slug"), *schema_for::<__GoondanInput_slug>());

    let executor = ToolExecutor::new(std::sync::Arc::clone(&registry));
    let catalog = ToolCatalog::all(&registry);
    let ctx = ToolContext::builder(".").build();
    let call = |name: &str, args: Value| ToolCall::new("c", name, args);
    let r = executor
        .execute(call("lone__point", json!({"x": 1, "y": 2})), &ctx, &catalog)
        .await;
    assert_eq!(r.output, Some(json!(3)));
    let r = executor
        .execute(
            call(
                "lone__tree",
                json!({"label": "a", "children": [{"label": "b", "children": []}]}),
            ),
            &ctx,
            &catalog,
        )
        .await;
    assert_eq!(r.output, Some(json!(1)));
    let r = executor
        .execute(call("lone__slug", json!({"slug": "s"})), &ctx, &catalog)
        .await;
    assert_eq!(r.output, Some(json!("s")));
    let r = executor
        .execute(call("lone__slug", json!("s")), &ctx, &catalog)
        .await;
    assert_eq!(r.error_code(), Some("E_TOOL_INVALID_ARGS"));
}
