//! Anthropic tool use: `{name, description, input_schema}` with no top-level
//! `oneOf`/`anyOf`/`allOf`, checked on every corpus type, and the Messages round trip.

use crate::corpus;
use crate::kit;

use goondan_runtime::ToolCall;
use goondan_runtime::dialect::Dialect;
use goondan_runtime::provider::anthropic;
use goondan_runtime::testing::ResultAssertions;
use goondan_runtime::tools::schema::check_metaschema;
use serde_json::{Value, json};

/// Asserts Anthropic's rules on a tool definition.
fn assert_anthropic(tool: &Value, name: &str) {
    assert_eq!(tool["name"], name);
    let keys: Vec<&str> = tool
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert!(
        keys.iter()
            .all(|k| ["name", "description", "input_schema"].contains(k)),
        "{keys:?}"
    );
    let schema = &tool["input_schema"];
    assert_eq!(schema["type"], "object", "{name}");
    for k in ["oneOf", "anyOf", "allOf"] {
        assert!(schema.get(k).is_none(), "{name}: top-level {k}");
    }
    check_metaschema(schema).unwrap();
}

#[test]
fn every_corpus_type_is_an_input_schema_except_an_enum_input() {
    for case in corpus::corpus() {
        let catalog = corpus::catalog_of(&case);
        let name = format!("corpus__{}", corpus::export_name(&case));
        match Dialect::ANTHROPIC.tools(&catalog) {
            Ok(tools) => {
                assert_anthropic(&tools[0], &name);
                assert_eq!(
                    tools[0]["input_schema"], *case.schema,
                    "{name}: the neutral schema as it is"
                );
            }
            Err(e) => {
                assert!(["Command", "FlattenedEnum"].contains(&case.name), "{e}");
                assert_eq!(
                    (e.tool.as_str(), e.path.as_str()),
                    (name.as_str(), "/oneOf")
                );
            }
        }
    }
}

#[tokio::test]
async fn messages_round_trip_turns_tool_use_into_calls_and_results_into_tool_result_blocks() {
    let kit = kit::kit();
    let calls = anthropic::parse_calls(&kit::fixture("anthropic_message.json")).unwrap();
    assert_eq!(
        calls,
        vec![
            ToolCall::new(
                "toolu_01A09q90qw90lq917835lq9",
                "weather__current",
                json!({"city": "San Francisco", "unit": "celsius"})
            ),
            ToolCall::new(
                "toolu_01B09q90qw90lq917835lq9",
                "weather__forecast",
                json!("Busan for 3 days")
            ),
        ]
    );
    let ok = kit.execute(calls[0].clone()).await;
    let refused = kit.execute(calls[1].clone()).await;
    refused.assert_error("E_TOOL_INVALID_ARGS");
    assert_eq!(
        anthropic::tool_result(&ok),
        json!({"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
               "content": "{\"city\":\"San Francisco\",\"temp\":21,\"unit\":\"C\"}", "is_error": false})
    );
    let block = anthropic::tool_result(&refused);
    assert_eq!(block["is_error"], true);
    let text = block["content"].as_str().unwrap();
    assert!(text.starts_with("error E_TOOL_INVALID_ARGS"), "{text}");
    assert!(text.contains("suggestion:"), "{text}");
    let message = anthropic::user_message([&ok, &refused]);
    assert_eq!(message["role"], "user");
    assert_eq!(
        message["content"][1]["tool_use_id"],
        "toolu_01B09q90qw90lq917835lq9"
    );
}

/// An image goes in the `tool_result` as an image block; audio, which
/// Anthropic does not take there, as a note; the output's text first.
#[test]
fn a_result_with_content_parts_is_a_tool_result_with_image_blocks() {
    use goondan_runtime::tools::content::Content;
    let r = goondan_runtime::ToolCallResult::ok("toolu_1", "paint__pixel", json!({"n": 1}))
        .with_content(vec![
            Content::image_png(vec![1, 2, 3]),
            Content::audio_wav(vec![0; 10]),
            Content::resource_text("file:///a.txt", "text/plain", "hello"),
        ]);
    let block = anthropic::tool_result(&r);
    let content = block["content"].as_array().unwrap();
    assert_eq!(content[0], json!({"type": "text", "text": "{\"n\":1}"}));
    assert_eq!(
        content[1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                            "data": "AQID"}})
    );
    assert_eq!(content[2]["type"], "text");
    assert!(
        content[2]["text"]
            .as_str()
            .unwrap()
            .starts_with("[audio audio/wav, 10 bytes")
    );
    assert_eq!(content[3]["text"], "[resource file:///a.txt]\nhello");
    assert_eq!(block["is_error"], false);
}
