//! The fixture server of `tests/it/mcp_conformance.rs`: our Streamable HTTP server with the tools
//! the MCP conformance suite's server scenarios call, written with `#[tool]`. The suite expects
//! fixed names (`test_simple_text`) that are not Goondan names, so they are published under
//! those names with `publish_as`; every call still runs through the executor. It serves the
//! skills of `tests/fixtures/skills` for the Skills extension's scenarios. Prints its URL
//! on the first line of stdout, then serves until stdin closes. Built only for the tests.

#[path = "conformance_others.rs"]
mod others;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use goondan_runtime::mcp::server::McpServer;
use goondan_runtime::prelude::*;
use goondan_runtime::tools::content::{Content, ToolReturn};
use goondan_runtime::tools::context::{ElicitAction, LogLevel, Question};
use goondan_runtime::{Export, Pending, Tool, handler_fn};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

/// The served registry, for the tool that registers another one at run time.
static REGISTRY: OnceLock<Weak<ToolRegistry>> = OnceLock::new();

/// The tools of the conformance suite's tool scenarios.
#[tool(name = "conformance")]
pub mod conformance {
    use super::*;

    /// Returns a simple text.
    pub fn simple_text() -> String {
        "This is a simple text response for testing.".to_owned()
    }

    /// Always fails, with a structured error.
    pub fn error_handling() -> Result<String, ToolError> {
        Err(
            ToolError::new("This tool intentionally returns an error for testing")
                .with_code("E_CONFORMANCE_FIXTURE")
                .with_suggestion("nothing to fix: the failure is the test"),
        )
    }

    /// Reports progress 0, 50 and 100 out of 100.
    pub async fn tool_with_progress(ctx: &ToolContext) -> String {
        for done in [0.0, 50.0, 100.0] {
            ctx.progress(done, Some(100.0), None);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        "Progress completed".to_owned()
    }

    /// Answers with an image.
    pub fn image_content() -> Content {
        Content::image_png(png())
    }

    /// Answers with audio.
    pub fn audio_content() -> Content {
        Content::audio_wav(WAV.to_vec())
    }

    /// Answers with an embedded resource.
    pub fn embedded_resource() -> Content {
        Content::resource_text(
            "test://embedded-resource",
            "text/plain",
            "This is an embedded resource content.",
        )
    }

    /// Answers with text, an image and a resource.
    pub fn multiple_content_types() -> ToolReturn {
        ToolReturn::parts(vec![
            Content::text("Multiple content types test:"),
            Content::image_png(png()),
            Content::resource_text(
                "test://mixed-content-resource",
                "application/json",
                json!({"test": "data", "value": 123}).to_string(),
            ),
        ])
    }

    /// Writes three log lines while it runs.
    pub async fn tool_with_logging(ctx: &ToolContext) -> String {
        for line in [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ] {
            ctx.log(LogLevel::Info, line);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        "Tool with logging executed successfully".to_owned()
    }

    /// Writes one log line, which reaches only a client that asked for log lines.
    pub fn logging_tool(ctx: &ToolContext) -> String {
        ctx.log(LogLevel::Info, "Diagnostic trace logging activated");
        "Logging evaluated".to_owned()
    }

    /// Asks the client's model.
    pub async fn sampling(
        ctx: &ToolContext,
        /// The prompt to send to the LLM.
        prompt: String,
    ) -> String {
        match ctx.ask(Question::sample_text(prompt, 100)).await {
            Ok(answer) => {
                let text = answer
                    .pointer("/content/text")
                    .and_then(Value::as_str)
                    .unwrap_or("No response");
                format!("LLM response: {text}")
            }
            Err(e) => format!("Sampling not supported or error: {e}"),
        }
    }

    /// Asks the user for a response.
    pub async fn elicitation(
        ctx: &ToolContext,
        /// The message to show the user.
        message: String,
    ) -> String {
        let schema = json!({
            "type": "object",
            "properties": {"response": {"type": "string", "description": "User's response"}},
            "required": ["response"],
        });
        form_answer(
            ctx.ask(Question::elicit(message, schema)).await,
            "User response",
        )
    }

    /// Asks the user a form whose fields have defaults (SEP-1034).
    pub async fn elicitation_sep1034_defaults(ctx: &ToolContext) -> String {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {"type": "string", "description": "User status",
                           "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "description": "Verification status",
                             "default": true}
            },
            "required": []
        });
        let question = Question::elicit(
            "Please review and update the form fields with defaults",
            schema,
        );
        form_answer(ctx.ask(question).await, "Elicitation completed")
    }

    /// Asks the user a form with every kind of enum (SEP-1330).
    pub async fn elicitation_sep1330_enums(ctx: &ToolContext) -> String {
        let schema = json!({
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "description": "Select one option",
                                   "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "description": "Select one option with titles",
                                 "oneOf": [{"const": "value1", "title": "First Option"},
                                           {"const": "value2", "title": "Second Option"},
                                           {"const": "value3", "title": "Third Option"}]},
                "legacyEnum": {"type": "string", "description": "Select one option (legacy)",
                               "enum": ["opt1", "opt2", "opt3"],
                               "enumNames": ["Option One", "Option Two", "Option Three"]},
                "untitledMulti": {"type": "array", "description": "Select multiple options",
                                  "minItems": 1, "maxItems": 3,
                                  "items": {"type": "string",
                                            "enum": ["option1", "option2", "option3"]}},
                "titledMulti": {"type": "array",
                                "description": "Select multiple options with titles",
                                "minItems": 1, "maxItems": 3,
                                "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                                    {"const": "value2", "title": "Second Choice"},
                                                    {"const": "value3", "title": "Third Choice"}]}}
            },
            "required": []
        });
        let question = Question::elicit("Please select options from the enum fields", schema);
        form_answer(ctx.ask(question).await, "Elicitation completed")
    }

    /// Needs the client's model: a client without sampling gets the protocol's
    /// missing-capability error.
    pub async fn missing_capability(ctx: &ToolContext) -> Result<String, ToolError> {
        ctx.ask(Question::sample_text("Say hello", 10)).await?;
        Ok("Success".to_owned())
    }

    /// Asks the user's name, then greets them.
    pub async fn input_required_result_elicitation(ctx: &ToolContext) -> Result<String, ToolError> {
        let answer = ctx
            .ask_as("user_name", name_question("What is your name?"))
            .await?;
        Ok(format!("Hello, {}!", field(&answer, "name")))
    }

    /// Asks the client's model a question.
    pub async fn input_required_result_sampling(ctx: &ToolContext) -> Result<String, ToolError> {
        let q = Question::sample_text("What is the capital of France?", 100);
        let answer = ctx.ask_as("sample_request", q).await?;
        let text = answer.pointer("/content/text").and_then(Value::as_str);
        Ok(format!(
            "Sampling result: {}",
            text.unwrap_or("no response")
        ))
    }

    /// Asks the client's roots.
    pub async fn input_required_result_list_roots(ctx: &ToolContext) -> Result<String, ToolError> {
        let answer = ctx.ask_as("roots_request", Question::Roots).await?;
        let roots = answer
            .get("roots")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        Ok(format!("Found {roots} root(s)"))
    }

    /// Asks for a confirmation; the answer travels back in the sealed request state.
    pub async fn input_required_result_request_state(
        ctx: &ToolContext,
    ) -> Result<String, ToolError> {
        let answer = ctx.ask_as("confirm", confirm_question()).await?;
        if answer.pointer("/content/ok") == Some(&Value::Bool(true)) {
            Ok("state-ok: requestState validated".to_owned())
        } else {
            Ok("state-not-confirmed".to_owned())
        }
    }

    /// Asks three questions at once: the user, the client's model and its roots.
    pub async fn input_required_result_multiple_inputs(
        ctx: &ToolContext,
    ) -> Result<String, ToolError> {
        let (name, greeting, roots) = tokio::join!(
            ctx.ask_as("user_name", name_question("What is your name?")),
            ctx.ask_as("greeting", Question::sample_text("Generate a greeting", 50)),
            ctx.ask_as("client_roots", Question::Roots),
        );
        let (name, greeting, roots) = (name?, greeting?, roots?);
        let greeting = greeting
            .pointer("/content/text")
            .and_then(Value::as_str)
            .unwrap_or("Hello there!");
        let roots = roots
            .get("roots")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        Ok(format!(
            "Name: {}; Greeting: {greeting}; Roots: {roots}",
            field(&name, "name")
        ))
    }

    /// Asks two questions, one after the other.
    pub async fn input_required_result_multi_round(ctx: &ToolContext) -> Result<String, ToolError> {
        let name = ctx
            .ask_as("step1", name_question("Step 1: What is your name?"))
            .await?;
        let schema = json!({
            "type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]
        });
        let q = Question::elicit("Step 2: What is your favorite color?", schema);
        let color = ctx.ask_as("step2", q).await?;
        Ok(format!(
            "Multi-round complete for {} who likes {}",
            field(&name, "name"),
            field(&color, "color")
        ))
    }

    /// Asks for a confirmation; a tampered request state never reaches it.
    pub async fn input_required_result_tampered_state(
        ctx: &ToolContext,
    ) -> Result<String, ToolError> {
        ctx.ask_as("confirm", confirm_question()).await?;
        Ok("integrity-ok: state verified".to_owned())
    }

    /// Asks only what the client declared it can answer.
    pub async fn input_required_result_capabilities(
        ctx: &ToolContext,
    ) -> Result<String, ToolError> {
        let schema = json!({
            "type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]
        });
        let elicit = Question::elicit("Elicitation input", schema);
        let sample = Question::sample_text("Sample request", 50);
        let mut asked = Vec::new();
        if ctx.can_ask(&elicit) {
            asked.push(("elicit_input", elicit));
        }
        if ctx.can_ask(&sample) {
            asked.push(("sample_input", sample));
        }
        if asked.is_empty() {
            return Ok("No supported capabilities declared".to_owned());
        }
        let keys: Vec<&str> = asked.iter().map(|(k, _)| *k).collect();
        let answers =
            futures_util::future::join_all(asked.iter().map(|(k, q)| ctx.ask_as(k, q.clone())))
                .await;
        for answer in answers {
            answer?;
        }
        Ok(format!("capabilities-ok: received {}", keys.join(",")))
    }

    /// Takes a moment, long enough for the client's stream to be closed and resumed.
    pub async fn reconnection() -> String {
        tokio::time::sleep(Duration::from_millis(100)).await;
        "Reconnection test completed".to_owned()
    }

    /// Reports progress, then answers.
    pub fn streaming_elicitation(ctx: &ToolContext) -> String {
        ctx.progress(50.0, Some(100.0), None);
        "Streaming complete".to_owned()
    }

    /// Registers a new tool at run time, which changes the served tool list.
    pub fn trigger_tool_change() -> Result<String, ToolError> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let registry = REGISTRY
            .get()
            .and_then(Weak::upgrade)
            .ok_or_else(|| ToolError::new("the registry is gone"))?;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tool = Tool::builder(format!("added-{n}"))
            .export(
                Export::new(
                    "noop",
                    json!({"type": "object"}),
                    handler_fn(|_ctx, _args| async move { Ok::<_, ToolError>("noop") }),
                )
                .with_description("A tool registered at run time; does nothing"),
            )
            .build()
            .map_err(|e| ToolError::new(e.to_string()))?;
        registry
            .register(tool)
            .map_err(|e| ToolError::new(e.to_string()))?;
        Ok("Mutation triggered".to_owned())
    }
}

/// The tools of the tasks extension's scenarios: pending results, which a client with the
/// extension sees as tasks.
#[tool(name = "tasks")]
pub mod tasks {
    use super::*;

    /// Greets, at once.
    pub fn greet(
        /// Whom.
        name: String,
    ) -> String {
        format!("Hello, {name}!")
    }

    /// Sleeps `seconds` in the background, then answers.
    #[export(task_support = "optional")]
    pub fn slow_compute(
        /// How long.
        seconds: f64,
        /// A label echoed in the answer.
        label: Option<String>,
    ) -> Pending {
        let label = label.unwrap_or_default();
        Pending::new(async move {
            tokio::time::sleep(Duration::from_secs_f64(seconds.clamp(0.0, 600.0))).await;
            Ok::<_, ToolError>(format!("computed {label} after {seconds} s"))
        })
    }

    /// Fails in the background, as a tool failure; only runs as a task.
    #[export(task_support = "required")]
    pub fn failing_job() -> Pending {
        Pending::new(async {
            Err::<String, _>(ToolError::new("the job failed on purpose").with_code("E_JOB"))
        })
    }

    /// Panics in the background: a failure of the server, not of the tool.
    pub fn protocol_error_job() -> Pending {
        Pending::new(async {
            if std::hint::black_box(true) {
                panic!("the job broke");
            }
            Ok::<_, ToolError>("unreachable")
        })
    }

    /// Asks the user in the background whether to delete a file.
    pub fn confirm_delete(
        ctx: &ToolContext,
        /// Which.
        filename: String,
    ) -> Pending {
        let ctx = ctx.clone();
        Pending::new(async move {
            let schema = json!({
                "type": "object", "properties": {"confirm": {"type": "boolean"}},
                "required": ["confirm"]
            });
            let q = Question::elicit(format!("Delete {filename}?"), schema);
            let answer = ctx.ask_as("confirm", q).await?;
            if answer.pointer("/content/confirm") == Some(&Value::Bool(true)) {
                Ok::<_, ToolError>(format!("deleted {filename}"))
            } else {
                Ok(format!("kept {filename}"))
            }
        })
    }

    /// Asks the user two questions at once in the background.
    pub fn multi_input(ctx: &ToolContext) -> Pending {
        let ctx = ctx.clone();
        Pending::new(async move {
            let schema = json!({
                "type": "object",
                "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}}
            });
            let (a, b) = tokio::join!(
                ctx.ask_as("first", Question::elicit("First?", schema.clone())),
                ctx.ask_as("second", Question::elicit("Second?", schema)),
            );
            let (a, b) = (a?, b?);
            Ok::<_, ToolError>(format!(
                "answers: {} and {}",
                field(&a, "name"),
                field(&b, "name")
            ))
        })
    }

    /// Asks the user's name first, then works on in the background, as a task.
    #[export(task_support = "required")]
    pub async fn tool_with_task(ctx: &ToolContext) -> Result<Pending, ToolError> {
        let answer = ctx
            .ask_as("user_name", name_question("What is your name?"))
            .await?;
        let name = field(&answer, "name");
        Ok(Pending::new(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok::<_, ToolError>(format!("Hello, {name}, from a task"))
        }))
    }
}

/// The input of a tool whose `region` a client mirrors into the `Mcp-Param-Region` header
/// (SEP-2243), so HTTP infrastructure can route on it; the server checks the two agree.
#[tool_input]
pub struct RegionQuery {
    /// Where to search; also sent as the `Mcp-Param-Region` header.
    #[schemars(extend("x-mcp-header" = "Region"))]
    pub region: String,
    /// What to search for.
    pub query: String,
}

/// A tool with a header-mapped parameter.
#[tool(name = "headers")]
pub fn custom_headers(input: RegionQuery) -> String {
    format!("searched {} in {}", input.query, input.region)
}

/// A one-pixel PNG.
fn png() -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(others::PNG_BASE64)
        .unwrap_or_default()
}

/// A minimal WAV file.
const WAV: &[u8] = &[
    b'R', b'I', b'F', b'F', 38, 0, 0, 0, b'W', b'A', b'V', b'E', b'f', b'm', b't', b' ', 16, 0, 0,
    0, 1, 0, 1, 0, 0x40, 0x1f, 0, 0, 0x80, 0x3e, 0, 0, 2, 0, 16, 0, b'd', b'a', b't', b'a', 2, 0,
    0, 0, 0, 0,
];

/// A form asking for a name.
fn name_question(message: &str) -> Question {
    let schema = json!({
        "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]
    });
    Question::elicit(message, schema)
}

/// A form asking for a yes.
fn confirm_question() -> Question {
    let schema = json!({
        "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]
    });
    Question::elicit("Please confirm", schema)
}

/// The text of field `name` of an accepted form.
fn field(answer: &Value, name: &str) -> String {
    match answer.pointer(&format!("/content/{name}")) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "unknown".to_owned(),
    }
}

/// A form's answer as the suite's text.
fn form_answer(
    answer: Result<Value, goondan_runtime::tools::context::AskError>,
    label: &str,
) -> String {
    let answer = match answer
        .and_then(|a| goondan_runtime::tools::context::Elicitation::from_answer(&a).map(|e| (a, e)))
    {
        Ok(answer) => answer,
        Err(e) => return format!("Elicitation not supported or error: {e}"),
    };
    let action = match answer.1.action {
        ElicitAction::Accept => "accept",
        ElicitAction::Decline => "decline",
        ElicitAction::Cancel => "cancel",
    };
    let content = answer
        .0
        .get("content")
        .cloned()
        .unwrap_or_else(|| json!({}));
    format!("{label}: action={action}, content={content}")
}

/// A tool whose input schema uses JSON Schema 2020-12 keywords, served as it is.
fn json_schema_tool() -> Result<Tool, goondan_runtime::tools::tool::ToolDefinitionError> {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    });
    Tool::builder("json-schema")
        .export(
            Export::new(
                "tool_2020_12",
                schema,
                handler_fn(|_ctx, args| async move { Ok::<_, ToolError>(args) }),
            )
            .with_description("Tool with JSON Schema 2020-12 features"),
        )
        .build()
}

// The URL on stdout is this program's whole interface to the test.
#[allow(clippy::print_stdout)]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Arc::new(
        ToolRegistry::builder()
            .tool(conformance::TOOL)
            .tool(json_schema_tool())
            .tool(custom_headers::TOOL)
            .tool(tasks::TOOL)
            .build()?,
    );
    let _ = REGISTRY.set(Arc::downgrade(&registry));
    let skills = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/skills");
    let mut server = McpServer::builder(registry)
        .others(others::Others::default())
        .skills(skills)
        .publish_as("json-schema__tool_2020_12", "json_schema_2020_12_tool")
        .publish_as("headers__custom_headers", "test_custom_headers")
        .publish_as("tasks__tool_with_task", "test_tool_with_task");
    for export in [
        "greet",
        "slow_compute",
        "failing_job",
        "protocol_error_job",
        "confirm_delete",
        "multi_input",
    ] {
        server = server.publish_as(format!("tasks__{export}"), export);
    }
    // Every export of `conformance` is published as the suite calls it: `test_` + its name.
    for export in [
        "image_content",
        "audio_content",
        "embedded_resource",
        "multiple_content_types",
        "simple_text",
        "error_handling",
        "tool_with_progress",
        "tool_with_logging",
        "logging_tool",
        "sampling",
        "elicitation",
        "elicitation_sep1034_defaults",
        "elicitation_sep1330_enums",
        "missing_capability",
        "input_required_result_elicitation",
        "input_required_result_sampling",
        "input_required_result_list_roots",
        "input_required_result_request_state",
        "input_required_result_multiple_inputs",
        "input_required_result_multi_round",
        "input_required_result_tampered_state",
        "input_required_result_capabilities",
        "streaming_elicitation",
        "trigger_tool_change",
        "reconnection",
    ] {
        server = server.publish_as(format!("conformance__{export}"), format!("test_{export}"));
    }
    let server = server.build()?;
    let http = server.serve_http("127.0.0.1:0".parse()?).await?;
    println!("{}", http.url());
    let mut sink = Vec::new();
    tokio::io::stdin().read_to_end(&mut sink).await?;
    http.shutdown().await?;
    Ok(())
}
