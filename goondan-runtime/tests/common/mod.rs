//! Tools shared by the runtime's integration tests, built by hand (no macro) so the runtime's
//! rules are tested on their own.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::time::Duration;

use goondan_runtime::{Export, Pending, Tool, ToolError, handler_fn};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TextIn {
    /// The text.
    pub text: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Many {
    pub a: i64,
    pub b: String,
    pub c: bool,
    pub d: Vec<u32>,
    pub e: Option<f64>,
    pub f: u8,
    pub g: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FailIn {
    /// How long the message is.
    pub len: usize,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SleepIn {
    pub ms: u64,
}

/// `text__upper`, `text__many`, `text__fail`, `text__panic`, `text__sleep`, `text__later`,
/// `text__workdir`, with the given error message limit.
pub fn text_tool(limit: Option<usize>) -> Tool {
    let mut b = Tool::builder("text")
        .description("Text utilities")
        .export(
            Export::typed("upper", |_ctx, i: TextIn| async move {
                Ok::<_, ToolError>(json!({"result": i.text.to_uppercase()}))
            })
            .with_description("Uppercase"),
        )
        .export(Export::typed("many", |_ctx, i: Many| async move {
            Ok::<_, ToolError>(i.a)
        }))
        .export(Export::typed("fail", |_ctx, i: FailIn| async move {
            Err::<Value, _>(
                ToolError::new("x".repeat(i.len))
                    .with_code("E_DEMO")
                    .with_name("DemoError"),
            )
        }))
        .export(Export::typed("panic", |_ctx, _i: FailIn| async move {
            if true {
                panic!("handler exploded");
            }
            Ok::<_, ToolError>(0)
        }))
        .export(
            Export::typed("sleep", |_ctx, i: SleepIn| async move {
                tokio::time::sleep(Duration::from_millis(i.ms)).await;
                Ok::<_, ToolError>(i.ms)
            })
            .with_timeout(Duration::from_millis(200)),
        )
        .export(Export::typed("later", |_ctx, i: SleepIn| async move {
            Ok::<_, ToolError>(Pending::new(async move {
                tokio::time::sleep(Duration::from_millis(i.ms)).await;
                Ok::<_, ToolError>(json!({"slept": i.ms}))
            }))
        }))
        .export(Export::typed("workdir", |ctx, _i: Empty| async move {
            Ok::<_, ToolError>(ctx.workdir().display().to_string())
        }));
    if let Some(l) = limit {
        b = b.error_message_limit(l);
    }
    b.build().unwrap()
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// A tool whose handler takes raw JSON, validated by the executor against a hand-written
/// schema: `weather__get {city: string}`.
pub fn weather_tool() -> Tool {
    Tool::builder("weather")
        .export(Export::new(
            "get",
            json!({"type": "object", "properties": {"city": {"type": "string", "minLength": 1}},
                   "required": ["city"], "additionalProperties": false}),
            handler_fn(|_ctx, args| async move {
                let city = args
                    .get("city")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                Ok::<_, ToolError>(json!({"city": city, "celsius": 21}))
            }),
        ))
        .build()
        .unwrap()
}
