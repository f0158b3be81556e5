//! Gemini function declarations: the rules of Gemini's `Schema` (an OpenAPI 3.0 subset),
//! checked on every corpus type, and the `generateContent` round trip.

use crate::corpus;
use crate::kit;

use goondan_runtime::ToolCall;
use goondan_runtime::dialect::Dialect;
use goondan_runtime::provider::gemini;
use goondan_runtime::testing::ResultAssertions;
use serde_json::{Value, json};

/// Fields of Gemini's `Schema` object.
const FIELDS: &[&str] = &[
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "properties",
    "required",
    "items",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "anyOf",
];
const TYPES: &[&str] = &["STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"];
const FORMATS: &[&str] = &["int32", "int64", "float", "double", "date-time", "enum"];

/// Asserts Gemini's rules on a declaration's `parameters`.
fn assert_gemini(schema: &Value, tool: &str) {
    assert_eq!(schema["type"], "OBJECT", "{tool}: parameters are an OBJECT");
    for name in schema["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
    {
        let ok = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        assert!(ok, "{tool}: parameter name {name}");
    }
    corpus::walk(schema, "", &mut |path, node| {
        let obj = node
            .as_object()
            .unwrap_or_else(|| panic!("{tool} {path}: {node}"));
        for k in obj.keys() {
            assert!(
                FIELDS.contains(&k.as_str()),
                "{tool} {path}: `{k}` is not a Gemini field"
            );
        }
        match obj.get("type") {
            Some(Value::String(t)) => assert!(TYPES.contains(&t.as_str()), "{tool} {path}: {t}"),
            Some(other) => panic!("{tool} {path}: type must be one name, not {other}"),
            None => assert!(
                obj.contains_key("anyOf"),
                "{tool} {path}: every node is typed: {node}"
            ),
        }
        if let Some(f) = obj.get("format") {
            assert!(
                FORMATS.contains(&f.as_str().unwrap()),
                "{tool} {path}: format {f}"
            );
        }
        if obj.contains_key("enum") {
            assert_eq!(obj["type"], "STRING", "{tool} {path}: enums are strings");
            assert_eq!(obj["format"], "enum", "{tool} {path}");
        }
        if obj.get("type") == Some(&json!("OBJECT"))
            && !path.is_empty()
            && !obj.contains_key("anyOf")
        {
            assert!(
                obj["properties"].as_object().is_some_and(|p| !p.is_empty()),
                "{tool} {path}"
            );
        }
        if let Some(required) = obj.get("required") {
            for r in required.as_array().unwrap() {
                assert!(
                    obj["properties"].get(r.as_str().unwrap()).is_some(),
                    "{tool} {path}: {r}"
                );
            }
        }
    });
}

/// The corpus types Gemini cannot express, with the path named in the error.
const INEXPRESSIBLE: &[(&str, &str)] = &[
    ("Maps", "/properties/counts/additionalProperties"),
    ("AnyJson", "/properties/payload"),
    ("ExecParams", "/properties/env/additionalProperties"),
    ("Tree", "/properties/children/items/$ref"),
    ("Calc", "/properties/expr/oneOf/1/properties/left/$ref"),
    ("Renamed", "/properties/$value"),
    ("KebabStrict", "/properties/dry-run"),
    ("Tupled", "/properties/pair/prefixItems"),
];

#[test]
fn every_corpus_type_is_a_gemini_schema_or_sent_as_json_schema_with_its_reason() {
    for case in corpus::corpus() {
        let catalog = corpus::catalog_of(&case);
        let tool = format!("corpus__{}", corpus::export_name(&case));
        let expected_problem = INEXPRESSIBLE.iter().find(|(n, _)| *n == case.name);
        let tools = Dialect::GEMINI
            .tools(&catalog)
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        let decl = &tools[0]["functionDeclarations"][0];
        assert_eq!(decl["name"], tool);
        let problems = Dialect::GEMINI.strict_problems(&catalog);
        match expected_problem {
            None => {
                assert!(decl.get("parametersJsonSchema").is_none(), "{tool}");
                assert!(problems.is_empty(), "{tool}: {problems:?}");
                match decl.get("parameters") {
                    Some(p) => assert_gemini(p, &tool),
                    None => assert_eq!(
                        case.name, "Empty",
                        "only a tool without parameters omits them"
                    ),
                }
            }
            Some((_, path)) => {
                // `parametersJsonSchema` with the neutral schema, never both fields.
                assert!(decl.get("parameters").is_none(), "{tool}");
                let mut neutral = (*case.schema).clone();
                neutral.as_object_mut().unwrap().remove("$schema");
                assert_eq!(decl["parametersJsonSchema"], neutral, "{tool}");
                assert_eq!(problems.len(), 1, "{tool}: {problems:?}");
                assert_eq!(problems[0].tool, tool);
                assert_eq!(problems[0].path, *path, "{}", problems[0]);
                assert_eq!(problems[0].dialect, "gemini");
            }
        }
    }
}

/// The reason Gemini's `Schema` cannot take a schema, from [`Dialect::strict_problems`].
fn gemini_problem(
    catalog: &goondan_runtime::ToolCatalog,
) -> goondan_runtime::dialect::DialectError {
    let mut problems = Dialect::GEMINI.strict_problems(catalog);
    assert_eq!(problems.len(), 1, "{problems:?}");
    problems.remove(0)
}

#[test]
fn optional_becomes_nullable_and_unit_enums_string_enums() {
    let case = corpus::corpus()
        .into_iter()
        .find(|c| c.name == "DocumentedEnum")
        .unwrap();
    let tools = gemini::tools(&corpus::catalog_of(&case)).unwrap();
    let props = &tools[0]["functionDeclarations"][0]["parameters"]["properties"];
    assert_eq!(
        props["fallback"]["enum"],
        json!(["whisper", "normal", "very_loud"])
    );
    assert_eq!(props["fallback"]["nullable"], true);
    assert_eq!(props["volume"]["type"], "STRING");
    assert!(props["volume"].get("nullable").is_none());
}

#[tokio::test]
async fn generate_content_round_trip_keeps_names_and_ids() {
    let kit = kit::kit();
    let calls = gemini::parse_calls(&kit::fixture("gemini_generate_content.json")).unwrap();
    assert_eq!(
        calls,
        vec![
            ToolCall::new(
                "gemini-call-0",
                "weather__current",
                json!({"city": "Tokyo"})
            ),
            ToolCall::new(
                "fc-7f3a",
                "weather__forecast",
                json!({"city": "Tokyo", "days": 300})
            ),
        ]
    );
    let now = kit.execute(calls[0].clone()).await;
    let later = kit.execute(calls[1].clone()).await;
    later.assert_error("E_TOOL_INVALID_ARGS");
    assert_eq!(
        gemini::function_response(&now),
        json!({"functionResponse": {"name": "weather__current",
               "response": {"output": {"city": "Tokyo", "temp": 21, "unit": "C"}}}})
    );
    let refused = gemini::function_response(&later);
    assert_eq!(refused["functionResponse"]["id"], "fc-7f3a");
    assert_eq!(
        refused["functionResponse"]["response"]["error"]["code"],
        "E_TOOL_INVALID_ARGS"
    );
    assert!(refused["functionResponse"]["response"]["error"]["suggestion"].is_string());
    let content = gemini::user_content([&now, &later]);
    assert_eq!(content["role"], "user");
    assert_eq!(content["parts"].as_array().map(Vec::len), Some(2));
}

#[test]
fn nested_empty_objects_and_type_unions_are_not_gemini_schemas() {
    let empty =
        json!({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}});
    let err = gemini_problem(&corpus::catalog_with("empty", empty));
    assert_eq!(err.path, "/properties/a");
    let union = json!({"type": "object", "properties": {"a": {"type": ["string", "integer"]}}});
    let err = gemini_problem(&corpus::catalog_with("union", union));
    assert_eq!(err.path, "/properties/a/type");
}

#[test]
fn a_tool_without_parameters_has_no_parameters_field() {
    let tools = gemini::tools(&corpus::catalog_with(
        "none",
        json!({"type": "object", "properties": {}}),
    ))
    .unwrap();
    assert!(
        tools[0]["functionDeclarations"][0]
            .get("parameters")
            .is_none()
    );
}

#[test]
fn odd_schemas_give_a_gemini_schema_or_an_error() {
    for schema in corpus::odd_schemas() {
        if let Ok(tools) = gemini::tools(&corpus::catalog_with("odd", schema.clone()))
            && let Some(p) = tools[0]["functionDeclarations"][0].get("parameters")
        {
            assert_gemini(p, &schema.to_string());
        }
    }
}

/// Images and audio travel as inline data parts of the
/// `functionResponse`; a text resource as text in its response.
#[test]
fn a_result_with_content_parts_is_a_function_response_with_inline_data() {
    use goondan_runtime::tools::content::Content;
    let r = goondan_runtime::ToolCallResult::ok("call_1", "paint__pixel", json!({"n": 1}))
        .with_content(vec![
            Content::image_png(vec![1, 2, 3]),
            Content::resource_text("file:///a.txt", "text/plain", "hello"),
        ]);
    let part = gemini::function_response(&r);
    let inner = &part["functionResponse"];
    assert_eq!(inner["response"]["output"], json!({"n": 1}));
    assert_eq!(
        inner["response"]["content"],
        "[resource file:///a.txt]\nhello"
    );
    assert_eq!(
        inner["parts"],
        json!([{"inlineData": {"mimeType": "image/png", "data": "AQID"}}])
    );
}
