//! How `#[tool]` reads a function's parameters, through the generated handlers: the schema of
//! named parameters (the one `#[derive(JsonSchema)]` gives a struct with a field per parameter,
//! as `tools/list` shows it), their values, and the errors of arguments the handler refuses,
//! in serde's words; a lone parameter read whole or as its one named property, as its type's
//! schema says.

use futures_util::FutureExt;
use goondan_runtime::prelude::*;
use goondan_runtime::tools::handler::HandlerError;
use goondan_runtime::tools::schema::schema_for;
use goondan_runtime::{Outcome, Tool};
use serde_json::{Value, json};

/// A nested input type, as a parameter's type.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
pub struct Point {
    /// Across.
    pub x: i32,
    /// Down.
    pub y: i32,
}

/// A recursive input type: its schema refers to itself.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
pub struct Tree {
    /// The label.
    pub label: String,
    /// The children.
    pub children: Vec<Tree>,
}

// A struct with one field per parameter of `f` below, its doc comments theirs: the schema its
// derive gives is the one `f`'s parameters have.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(non_camel_case_types, dead_code)]
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

// The same for `slug` below: a lone parameter that is not an object is the input's one
// property.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(non_camel_case_types, dead_code)]
struct __GoondanInput_slug {
    slug: String,
}

// And for `forest` below: a recursive type as the one property.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(non_camel_case_types, dead_code)]
struct __GoondanInput_forest {
    forest: Vec<Tree>,
}

/// Named parameters whose doc comments have a title line, several paragraphs, or none.
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
    pub fn slug(slug: String) -> String {
        slug
    }

    /// A recursive type as the one property.
    pub fn forest(forest: Vec<Tree>) -> usize {
        forest.len()
    }
}

/// The parameter schema of `tool`'s export `name`.
fn parameters(tool: &Tool, name: &str) -> Value {
    let (_, export) = tool
        .exports()
        .find(|(n, _)| n.as_str() == format!("{}__{name}", tool.name()))
        .unwrap_or_else(|| panic!("no export {name}"));
    export.parameters().clone()
}

/// Calls the export `name`'s handler with `args`: its output, or the reason it refused them.
fn call(tool: &Tool, name: &str, args: Value) -> Result<Value, String> {
    let (_, export) = tool
        .exports()
        .find(|(n, _)| n.as_str() == format!("{}__{name}", tool.name()))
        .unwrap_or_else(|| panic!("no export {name}"));
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    let ctx = ToolContext::builder(".").build();
    // The test tools are plain `fn`s: their answer is ready once `call` returns.
    let answer = export.handler().call(&ctx, args).now_or_never();
    match answer {
        Some(Ok(Outcome::Output(value))) => Ok(value),
        Some(Err(HandlerError::InvalidArgs { reason })) => Err(reason),
        other => panic!("{name}: unexpected {other:?}"),
    }
}

#[test]
fn named_parameters_schema_is_the_derived_structs() {
    let tool = params_tool::TOOL.build().expect("tool");
    let schema = parameters(&tool, "f");
    assert_eq!(schema, *schema_for::<__GoondanInput_f>());
}

/// The schemas as text, key order included: what `tools/list` and the providers' tool lists
/// carry, byte for byte.
#[test]
fn schemas_as_text_key_order_included() {
    let text = |tool: &Tool, name: &str| {
        serde_json::to_string(&parameters(tool, name)).expect("a schema is JSON")
    };
    let params = params_tool::TOOL.build().expect("tool");
    assert_eq!(
        text(&params, "f"),
        r##"{"type":"object","additionalProperties":false,"properties":{"text":{"type":"string","description":"The text to work on."},"times":{"type":["integer","null"],"format":"uint32","minimum":0,"description":"How many times, when given.","maximum":4294967295},"tags":{"type":"array","items":{"type":"string"},"description":"Labels to attach.\n\nAs many as you like."},"at":{"type":"object","properties":{"x":{"type":"integer","format":"int32","description":"Across.","minimum":-2147483648,"maximum":2147483647},"y":{"type":"integer","format":"int32","description":"Down.","minimum":-2147483648,"maximum":2147483647}},"required":["x","y"],"description":"The point to start from.","title":"Where","additionalProperties":false},"note":true},"required":["text","tags","at"]}"##
    );
    let lone = lone_tool::TOOL.build().expect("tool");
    let expected = [
        (
            "point",
            r##"{"type":"object","properties":{"x":{"type":"integer","format":"int32","description":"Across.","minimum":-2147483648,"maximum":2147483647},"y":{"type":"integer","format":"int32","description":"Down.","minimum":-2147483648,"maximum":2147483647}},"required":["x","y"],"description":"A nested input type, as a parameter's type.","additionalProperties":false}"##,
        ),
        (
            "tree",
            r##"{"type":"object","properties":{"label":{"type":"string","description":"The label."},"children":{"type":"array","items":{"$ref":"#"},"description":"The children."}},"required":["label","children"],"description":"A recursive input type: its schema refers to itself.","additionalProperties":false}"##,
        ),
        (
            "slug",
            r##"{"type":"object","additionalProperties":false,"properties":{"slug":{"type":"string"}},"required":["slug"]}"##,
        ),
        (
            "forest",
            r##"{"type":"object","additionalProperties":false,"properties":{"forest":{"type":"array","items":{"description":"A recursive input type: its schema refers to itself.","type":"object","properties":{"label":{"description":"The label.","type":"string"},"children":{"description":"The children.","type":"array","items":{"$ref":"#/$defs/Tree"}}},"required":["label","children"],"additionalProperties":false}}},"required":["forest"],"$defs":{"Tree":{"type":"object","properties":{"label":{"type":"string","description":"The label."},"children":{"type":"array","items":{"$ref":"#/$defs/Tree"},"description":"The children."}},"required":["label","children"],"description":"A recursive input type: its schema refers to itself.","additionalProperties":false}}}"##,
        ),
    ];
    for (name, schema) in expected {
        assert_eq!(text(&lone, name), schema, "{name}");
    }
}

#[test]
fn named_parameters_read_each_value_as_its_type() {
    let tool = params_tool::TOOL.build().expect("tool");
    let f = |args| call(&tool, "f", args);
    let at = json!({"x": 1, "y": 2});
    assert_eq!(
        f(json!({"text": "a", "times": 2, "tags": ["x"], "at": at, "note": {"k": 1}})),
        Ok(json!(
            r#"a Some(2) ["x"] Point { x: 1, y: 2 } Some(Object {"k": Number(1)})"#
        ))
    );
    // Any order; a missing or null `Option` is `None`.
    assert_eq!(
        f(json!({"at": at, "tags": [], "text": "a"})),
        Ok(json!("a None [] Point { x: 1, y: 2 } None"))
    );
    assert_eq!(
        f(json!({"text": "a", "times": null, "tags": [], "at": at, "note": null})),
        Ok(json!("a None [] Point { x: 1, y: 2 } None"))
    );
}

#[test]
fn named_parameters_refuse_arguments_in_serdes_words() {
    let tool = params_tool::TOOL.build().expect("tool");
    let f = |args| call(&tool, "f", args);
    let at = json!({"x": 1, "y": 2});
    let expected = "expected one of `text`, `times`, `tags`, `at`, `note`";
    let cases = [
        (json!({}), "missing field `text`".to_owned()),
        (
            json!({"tags": [], "at": at}),
            "missing field `text`".to_owned(),
        ),
        (
            json!({"text": "a", "tags": []}),
            "missing field `at`".to_owned(),
        ),
        (
            json!({"text": "a", "tags": [], "at": at, "other": 1}),
            format!("unknown field `other`, {expected}"),
        ),
        (
            json!({"text": 5, "tags": [], "at": at}),
            "invalid type: integer `5`, expected a string".to_owned(),
        ),
        (
            json!({"text": "a", "times": -1, "tags": [], "at": at}),
            "invalid value: integer `-1`, expected u32".to_owned(),
        ),
        (
            json!({"text": "a", "tags": [], "at": {"x": 1}}),
            "missing field `y`".to_owned(),
        ),
        // The keys are read in the object's order: the first wrong one is the error.
        (
            json!({"other": 1, "text": 5}),
            format!("unknown field `other`, {expected}"),
        ),
        (
            json!({"text": 5, "other": 1}),
            "invalid type: integer `5`, expected a string".to_owned(),
        ),
        // Every key is known and every value read before a missing one is reported.
        (
            json!({"text": 5}),
            "invalid type: integer `5`, expected a string".to_owned(),
        ),
    ];
    for (args, error) in cases {
        assert_eq!(f(args.clone()), Err(error), "{args}");
    }
}

#[test]
fn a_lone_parameter_is_the_whole_input_or_its_one_property_as_its_schema_says() {
    let tool = lone_tool::TOOL.build().expect("tool");
    assert_eq!(parameters(&tool, "point"), *schema_for::<Point>());
    assert_eq!(parameters(&tool, "tree"), *schema_for::<Tree>());
    assert_eq!(
        parameters(&tool, "slug"),
        *schema_for::<__GoondanInput_slug>()
    );
    // A recursive type keeps its definitions.
    let forest = parameters(&tool, "forest");
    assert_eq!(forest, *schema_for::<__GoondanInput_forest>());
    assert!(forest["$defs"]["Tree"].is_object(), "{forest}");

    assert_eq!(call(&tool, "point", json!({"x": 1, "y": 2})), Ok(json!(3)));
    let tree = json!({"label": "a", "children": [{"label": "b", "children": []}]});
    assert_eq!(call(&tool, "tree", tree.clone()), Ok(json!(1)));
    assert_eq!(call(&tool, "slug", json!({"slug": "s"})), Ok(json!("s")));
    assert_eq!(
        call(&tool, "forest", json!({"forest": [tree]})),
        Ok(json!(1))
    );
    assert_eq!(
        call(&tool, "point", json!({"x": 1})),
        Err("missing field `y`".to_owned())
    );
    assert_eq!(
        call(&tool, "slug", json!({})),
        Err("missing field `slug`".to_owned())
    );
    assert_eq!(
        call(&tool, "slug", json!({"x": true, "slug": 1})),
        Err("unknown field `x`, expected `slug`".to_owned())
    );
    assert_eq!(
        call(&tool, "slug", json!({"slug": 1, "x": true})),
        Err("invalid type: integer `1`, expected a string".to_owned())
    );
    assert_eq!(
        call(&tool, "forest", json!({"forest": [{"label": 1}]})),
        Err("invalid type: integer `1`, expected a string".to_owned())
    );
}

#[tokio::test]
async fn a_lone_property_refuses_a_value_that_is_not_an_object() {
    use goondan_runtime::{ToolCatalog, ToolExecutor, ToolRegistry};
    let registry = std::sync::Arc::new(
        ToolRegistry::builder()
            .tool(lone_tool::TOOL)
            .build()
            .expect("registry"),
    );
    let executor = ToolExecutor::new(std::sync::Arc::clone(&registry));
    let catalog = ToolCatalog::all(&registry);
    let ctx = ToolContext::builder(".").build();
    let call = |name: &str, args: Value| ToolCall::new("c", name, args);
    let r = executor
        .execute(call("lone__slug", json!({"slug": "s"})), &ctx, &catalog)
        .await;
    assert_eq!(r.output, Some(json!("s")));
    let r = executor
        .execute(call("lone__slug", json!("s")), &ctx, &catalog)
        .await;
    assert_eq!(r.error_code(), Some("E_TOOL_INVALID_ARGS"));
}
