//! OpenAI strict function calling: the rules of OpenAI's "supported schemas" list, checked on
//! every corpus type, and the Chat Completions and Responses round trips.

use crate::corpus;
use crate::kit;

use goondan_runtime::dialect::Dialect;
use goondan_runtime::provider::openai;
use goondan_runtime::testing::ResultAssertions;
use goondan_runtime::{ToolCall, ToolCatalog};
use serde_json::{Value, json};

/// Keywords strict mode accepts (OpenAI, Structured Outputs, "Supported schemas").
const KEYWORDS: &[&str] = &[
    "type",
    "description",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "anyOf",
    "$ref",
    "$defs",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];
const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];
const TYPES: &[&str] = &[
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// Asserts OpenAI's strict-mode rules on a `parameters` schema.
fn assert_openai_strict(schema: &Value, tool: &str) {
    assert_eq!(schema["type"], "object", "{tool}: the root is an object");
    assert!(
        schema.get("anyOf").is_none(),
        "{tool}: the root is not anyOf"
    );
    corpus::walk(schema, "", &mut |path, node| {
        let obj = node
            .as_object()
            .unwrap_or_else(|| panic!("{tool} {path}: a schema object, not {node}"));
        if path.ends_with("/$defs") {
            return;
        }
        for k in obj.keys() {
            assert!(
                KEYWORDS.contains(&k.as_str()),
                "{tool} {path}: `{k}` is not supported"
            );
        }
        if obj.contains_key("$ref") {
            assert_eq!(
                obj.len() - usize::from(obj.contains_key("description")),
                1,
                "{tool} {path}: $ref alone"
            );
            return;
        }
        assert!(
            obj.contains_key("type") || obj.contains_key("anyOf") || obj.contains_key("enum"),
            "{tool} {path}: every schema has a type: {node}"
        );
        let types: Vec<&str> = match obj.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().map(|t| t.as_str().unwrap()).collect(),
            _ => vec![],
        };
        for t in &types {
            assert!(TYPES.contains(t), "{tool} {path}: type {t}");
        }
        if types.contains(&"object") {
            assert_eq!(
                obj.get("additionalProperties"),
                Some(&json!(false)),
                "{tool} {path}"
            );
            let keys: Vec<Value> = obj["properties"]
                .as_object()
                .unwrap()
                .keys()
                .map(|k| json!(k))
                .collect();
            assert_eq!(
                obj.get("required"),
                Some(&Value::Array(keys)),
                "{tool} {path}: every property required"
            );
        }
        if let Some(f) = obj.get("format") {
            assert!(
                FORMATS.contains(&f.as_str().unwrap()),
                "{tool} {path}: format {f}"
            );
        }
        if let (Some(Value::Array(values)), true) = (obj.get("enum"), types.contains(&"null")) {
            assert!(
                values.contains(&Value::Null),
                "{tool} {path}: a nullable enum lists null"
            );
        }
    });
    let depth = max_object_depth(schema);
    assert!(depth <= openai::MAX_DEPTH, "{tool}: nesting {depth}");
}

fn max_object_depth(schema: &Value) -> usize {
    let mut deepest = 0;
    corpus::walk(schema, "", &mut |path, _| {
        deepest = deepest.max(path.matches("/properties/").count());
    });
    deepest
}

/// The corpus types strict mode cannot express, with the path named in the error.
const INEXPRESSIBLE: &[(&str, &str)] = &[
    ("Maps", "/properties/counts/additionalProperties"),
    ("AnyJson", "/properties/payload"),
    ("ExecParams", "/properties/env/additionalProperties"),
    ("Command", "/oneOf"),
    ("FlattenedEnum", "/oneOf"),
    ("Tupled", "/properties/pair/prefixItems"),
];

#[test]
fn every_corpus_type_is_strict_or_sent_alone_in_the_loose_form_with_its_reason() {
    for case in corpus::corpus() {
        let catalog = corpus::catalog_of(&case);
        let tool = format!("corpus__{}", corpus::export_name(&case));
        let expected_problem = INEXPRESSIBLE.iter().find(|(n, _)| *n == case.name);
        for dialect in [Dialect::OPENAI_CHAT, Dialect::OPENAI_RESPONSES] {
            let tools = dialect
                .tools(&catalog)
                .unwrap_or_else(|e| panic!("{tool}: {e}"));
            let t = &tools[0];
            assert_eq!(t["type"], "function");
            let f = if dialect == Dialect::OPENAI_CHAT {
                &t["function"]
            } else {
                t
            };
            assert_eq!(f["name"], tool);
            assert!(f["description"].is_string());
            let problems = dialect.strict_problems(&catalog);
            match expected_problem {
                None => {
                    assert_eq!(f["strict"], true, "{tool}");
                    assert_openai_strict(&f["parameters"], &tool);
                    assert!(problems.is_empty(), "{tool}: {problems:?}");
                }
                Some((_, path)) => {
                    // Not strict, with the whole neutral schema, and the reason on record.
                    assert_eq!(f["strict"], false, "{tool}");
                    let mut neutral = (*case.schema).clone();
                    neutral.as_object_mut().unwrap().remove("$schema");
                    assert_eq!(f["parameters"], neutral, "{tool}");
                    assert_eq!(problems.len(), 1, "{tool}: {problems:?}");
                    assert_eq!(problems[0].tool, tool);
                    assert_eq!(problems[0].path, *path, "{}", problems[0]);
                    assert!(problems[0].to_string().contains(&tool));
                }
            }
        }
    }
}

/// One tool strict mode cannot express does not take strict mode away from the others.
#[test]
fn a_loose_tool_leaves_the_rest_of_the_catalog_strict() {
    let mut catalog = corpus::catalog_with(
        "map",
        json!({"type": "object", "properties": {"env": {"type": "object",
            "additionalProperties": {"type": "string"}}}}),
    );
    let strict = corpus::catalog_with(
        "plain",
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
    );
    for item in strict.items() {
        catalog.push(item.clone());
    }
    let tools = Dialect::OPENAI_CHAT.tools(&catalog).unwrap();
    assert_eq!(tools[0]["function"]["strict"], false);
    assert_eq!(tools[1]["function"]["strict"], true);
    let problems = Dialect::OPENAI_CHAT.strict_problems(&catalog);
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].path, "/properties/env/additionalProperties");
}

#[test]
fn optional_parameters_become_required_and_nullable() {
    let case = corpus::corpus()
        .into_iter()
        .find(|c| c.name == "Optionals")
        .unwrap();
    let tools = openai::chat_tools(&corpus::catalog_of(&case)).unwrap();
    let p = &tools[0]["function"]["parameters"];
    assert_eq!(
        p["required"],
        json!(["name", "limit", "label", "origin", "tags"])
    );
    assert_eq!(p["properties"]["name"]["type"], "string");
    assert_eq!(p["properties"]["limit"]["type"], json!(["integer", "null"]));
    assert_eq!(p["properties"]["origin"]["type"], json!(["object", "null"]));
    assert!(
        p["properties"]["limit"].get("format").is_none(),
        "uint32 is not a strict format"
    );
}

#[test]
fn defaulted_parameters_are_nullable_too() {
    let case = corpus::corpus()
        .into_iter()
        .find(|c| c.name == "Defaults")
        .unwrap();
    let tools = openai::chat_tools(&corpus::catalog_of(&case)).unwrap();
    let p = &tools[0]["function"]["parameters"];
    assert_eq!(
        p["properties"]["retries"]["type"],
        json!(["integer", "null"])
    );
    assert!(p["properties"]["retries"].get("default").is_none());
}

#[test]
fn documented_unit_variants_become_one_enum_with_their_docs() {
    let case = corpus::corpus()
        .into_iter()
        .find(|c| c.name == "DocumentedEnum")
        .unwrap();
    let tools = openai::chat_tools(&corpus::catalog_of(&case)).unwrap();
    let volume = &tools[0]["function"]["parameters"]["properties"]["volume"];
    assert_eq!(volume["enum"], json!(["whisper", "normal", "very_loud"]));
    assert!(
        volume["description"]
            .as_str()
            .unwrap()
            .contains("`whisper`: Barely audible.")
    );
    let fallback = &tools[0]["function"]["parameters"]["properties"]["fallback"];
    assert!(
        fallback["anyOf"]
            .as_array()
            .unwrap()
            .contains(&json!({"type": "null"})),
        "{fallback}"
    );
}

#[test]
fn recursion_stays_a_reference_to_the_root_or_defs() {
    let case = corpus::corpus()
        .into_iter()
        .find(|c| c.name == "Calc")
        .unwrap();
    let tools = openai::chat_tools(&corpus::catalog_of(&case)).unwrap();
    let p = &tools[0]["function"]["parameters"];
    assert!(p["$defs"]["Expr"]["anyOf"].is_array());
    assert_openai_strict(p, "calc");
}

#[test]
fn strict_nulls_for_optional_parameters_are_dropped_at_every_level() {
    let case = corpus::corpus()
        .into_iter()
        .find(|c| c.name == "OptionalNested")
        .unwrap();
    let catalog = corpus::catalog_of(&case);
    let response = json!({"tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "corpus__optionalnested",
        "arguments": "{\"shape\": null, \"paging\": {\"size\": 5, \"offset\": null}}"}}]});
    let calls = openai::parse_chat_calls(&response, &catalog).unwrap();
    assert_eq!(calls[0].args, json!({"paging": {"size": 5}}));
    let check = (case.serde)(&calls[0].args);
    assert!(check.is_ok(), "{check:?}");
}

#[tokio::test]
async fn chat_completion_round_trip_parses_calls_and_renders_tool_messages() {
    let kit = kit::kit();
    let calls =
        openai::parse_chat_calls(&kit::fixture("openai_chat_completion.json"), kit.catalog())
            .unwrap();
    assert_eq!(
        calls,
        vec![
            ToolCall::new("call_seoul", "weather__current", json!({"city": "Seoul"})),
            ToolCall::new(
                "call_atlantis",
                "weather__current",
                json!({"city": "Atlantis", "unit": "celsius"})
            ),
            ToolCall::new(
                "call_broken",
                "weather__forecast",
                json!("{\"city\": \"Busan\", \"days\": ")
            ),
            ToolCall::new("call_array", "weather__forecast", json!(["Busan", 3])),
        ]
    );
    let mut results = Vec::new();
    for call in calls {
        results.push(kit.execute(call).await);
    }
    results[0].assert_output(json!({"city": "Seoul", "temp": 21, "unit": "C"}));
    results[1].assert_error("E_WEATHER_CITY");
    results[2].assert_error("E_TOOL_INVALID_ARGS");
    results[3].assert_error("E_TOOL_INVALID_ARGS");

    let messages: Vec<Value> = results.iter().map(openai::chat_result).collect();
    assert_eq!(
        messages[0],
        json!({"role": "tool", "tool_call_id": "call_seoul",
               "content": "{\"city\":\"Seoul\",\"temp\":21,\"unit\":\"C\"}"})
    );
    let error = messages[1]["content"].as_str().unwrap();
    assert!(
        error.starts_with("error E_WEATHER_CITY (CityNotFound): city not found: Atlantis"),
        "{error}"
    );
    assert!(
        error.contains("suggestion: use a city that exists"),
        "{error}"
    );
    for m in &messages {
        assert_eq!(m["role"], "tool");
        assert!(m["tool_call_id"].is_string() && m["content"].is_string());
    }
    assert!(
        messages[2]["content"]
            .as_str()
            .unwrap()
            .contains("E_TOOL_INVALID_ARGS")
    );
}

#[tokio::test]
async fn responses_round_trip_uses_call_id_and_renders_function_call_output() {
    let kit = kit::kit();
    let calls =
        openai::parse_responses_calls(&kit::fixture("openai_responses.json"), kit.catalog())
            .unwrap();
    assert_eq!(
        calls,
        vec![
            ToolCall::new(
                "call_12345xyz",
                "weather__current",
                json!({"city": "Paris", "unit": "fahrenheit"})
            ),
            ToolCall::new(
                "call_67890abc",
                "weather__forecast",
                json!({"city": "Bogotá", "days": "3"})
            ),
        ]
    );
    let ok = kit.execute(calls[0].clone()).await;
    let refused = kit.execute(calls[1].clone()).await;
    refused.assert_error("E_TOOL_INVALID_ARGS");
    assert_eq!(
        openai::responses_result(&ok),
        json!({"type": "function_call_output", "call_id": "call_12345xyz",
               "output": "{\"city\":\"Paris\",\"temp\":21,\"unit\":\"F\"}"})
    );
    let out = openai::responses_result(&refused);
    assert_eq!(out["type"], "function_call_output");
    assert!(
        out["output"]
            .as_str()
            .unwrap()
            .contains("E_TOOL_INVALID_ARGS")
    );
}

#[test]
fn a_response_without_tool_calls_has_no_calls_and_a_broken_one_is_an_error() {
    let kit = kit::kit();
    let none = json!({"choices": [{"message": {"role": "assistant", "content": "hi"}}]});
    assert!(
        openai::parse_chat_calls(&none, kit.catalog())
            .unwrap()
            .is_empty()
    );
    // A call without a name is broken; one without an id gets `call_{i}` (servers omit it).
    let broken = json!({"tool_calls": [{"id": "c", "type": "function", "function": {}}]});
    let err = openai::parse_chat_calls(&broken, kit.catalog()).unwrap_err();
    assert_eq!(err.path, "/tool_calls/0/function/name");
    let no_id = json!({"tool_calls": [{"type": "function", "function": {"name": "x__y"}}]});
    let calls = openai::parse_chat_calls(&no_id, kit.catalog()).unwrap();
    assert_eq!(calls[0].id, "call_0");
    let bad_id =
        json!({"tool_calls": [{"id": 7, "type": "function", "function": {"name": "x__y"}}]});
    let err = openai::parse_chat_calls(&bad_id, kit.catalog()).unwrap_err();
    assert_eq!(err.path, "/tool_calls/0/id");
}

/// The reason strict mode cannot take a schema, from [`Dialect::strict_problems`].
fn strict_problem(catalog: &ToolCatalog) -> goondan_runtime::dialect::DialectError {
    let mut problems = Dialect::OPENAI_CHAT.strict_problems(catalog);
    assert_eq!(problems.len(), 1, "{problems:?}");
    problems.remove(0)
}

#[test]
fn nesting_deeper_than_the_limit_is_not_strict() {
    let mut schema = json!({"type": "string"});
    for _ in 0..=openai::MAX_DEPTH {
        schema = json!({"type": "object", "properties": {"n": schema}, "required": ["n"]});
    }
    let catalog = corpus::catalog_with("deep", schema);
    let err = strict_problem(&catalog);
    assert!(err.reason.contains("deeper than 10"), "{err}");
    assert_eq!(
        openai::chat_tools(&catalog).unwrap()[0]["function"]["strict"],
        false
    );
}

#[test]
fn all_of_and_untyped_values_are_never_passed_through_as_strict() {
    let all_of = json!({"type": "object", "properties": {"a": {"allOf": [{"type": "string"}]}}});
    let catalog = corpus::catalog_with("allof", all_of);
    assert_eq!(strict_problem(&catalog).path, "/properties/a/allOf");
    assert_eq!(
        openai::chat_tools(&catalog).unwrap()[0]["function"]["strict"],
        false
    );
    let untyped = json!({"type": "object", "properties": {"a": {"description": "anything"}}});
    let catalog = corpus::catalog_with("untyped", untyped);
    assert_eq!(strict_problem(&catalog).path, "/properties/a");
    assert_eq!(
        openai::chat_tools(&catalog).unwrap()[0]["function"]["strict"],
        false
    );
}

#[test]
fn parameters_that_are_not_an_object_are_still_an_error() {
    let catalog = corpus::catalog_with("scalar", json!({"type": "string"}));
    let err = openai::chat_tools(&catalog).unwrap_err();
    assert_eq!(err.path, "");
}

#[test]
fn a_nested_flattened_enum_becomes_a_union_of_complete_objects() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Outer {
        step: corpus::FlattenedEnum,
    }
    let schema = (*goondan_runtime::tools::schema::schema_for::<Outer>()).clone();
    let tools = openai::chat_tools(&corpus::catalog_with("outer", schema)).unwrap();
    let p = &tools[0]["function"]["parameters"];
    assert_openai_strict(p, "outer");
    let branches = p["properties"]["step"]["anyOf"].as_array().unwrap();
    assert_eq!(branches.len(), 3);
    for b in branches {
        assert!(b["properties"]["id"].is_object(), "{b}");
        assert!(
            b["required"].as_array().unwrap().contains(&json!("id")),
            "{b}"
        );
    }
}

#[test]
fn odd_schemas_give_a_schema_or_an_error_never_a_panic() {
    for schema in corpus::odd_schemas() {
        let catalog = corpus::catalog_with("odd", schema.clone());
        for dialect in Dialect::ALL {
            if let Ok(tools) = dialect.tools(&catalog)
                && dialect == Dialect::OPENAI_CHAT
            {
                // Strict only when strict mode can take it; otherwise loose, with a reason.
                let f = &tools[0]["function"];
                if f["strict"] == true {
                    assert_openai_strict(&f["parameters"], &schema.to_string());
                } else {
                    assert_eq!(f["strict"], false, "{schema}");
                    assert_eq!(dialect.strict_problems(&catalog).len(), 1, "{schema}");
                }
            }
        }
    }
}

#[test]
fn strict_nulls_are_dropped_inside_enum_variants_lists_and_recursive_types() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    #[serde(tag = "kind")]
    enum Job {
        Copy {
            from: String,
            #[serde(default)]
            overwrite: bool,
        },
        Wait {
            #[serde(default)]
            seconds: u32,
        },
    }
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Plan {
        jobs: Vec<Job>,
        #[serde(default)]
        next: Option<Box<Plan>>,
    }
    let schema = goondan_runtime::tools::schema::schema_for::<Plan>();
    let mut args = json!({
        "jobs": [{"kind": "Copy", "from": "a", "overwrite": null}, {"kind": "Wait", "seconds": null}],
        "next": {"jobs": [{"kind": "Wait", "seconds": null}], "next": null}
    });
    openai::drop_optional_nulls(&mut args, &schema);
    assert_eq!(
        args,
        json!({"jobs": [{"kind": "Copy", "from": "a"}, {"kind": "Wait"}],
               "next": {"jobs": [{"kind": "Wait"}]}})
    );
    assert!(serde_json::from_value::<Plan>(args).is_ok());
}

/// Responses takes images in a `function_call_output` list
/// (`input_image`); Chat Completions takes only text in a tool message, so the image is
/// announced there and sent in a user message.
#[test]
fn a_result_with_content_parts_in_responses_and_chat_completions() {
    use goondan_runtime::tools::content::Content;
    let r = goondan_runtime::ToolCallResult::ok("call_1", "paint__pixel", Value::Null)
        .with_content(vec![
            Content::image_png(vec![1, 2, 3]),
            Content::audio_wav(vec![0; 4]),
        ]);
    let item = openai::responses_result(&r);
    assert_eq!(item["type"], "function_call_output");
    let output = item["output"].as_array().unwrap();
    assert_eq!(
        output[0],
        json!({"type": "input_image", "image_url": "data:image/png;base64,AQID"})
    );
    assert!(
        output[1]["text"]
            .as_str()
            .unwrap()
            .starts_with("[audio audio/wav")
    );

    let tool = openai::chat_result(&r);
    let text = tool["content"].as_str().unwrap();
    assert!(
        text.contains("[image image/png follows in the next user message]"),
        "{text}"
    );
    assert!(text.contains("[audio audio/wav"), "{text}");
    let images = openai::chat_images([&r]).unwrap();
    assert_eq!(images["role"], "user");
    assert_eq!(
        images["content"][1],
        json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AQID"}})
    );
    let plain = goondan_runtime::ToolCallResult::ok("c", "a__b", json!(1));
    assert!(openai::chat_images([&plain]).is_none());
    assert_eq!(openai::responses_result(&plain)["output"], "1");
}
