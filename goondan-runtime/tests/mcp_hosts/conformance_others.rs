//! The fixture's resources, prompts and completion: not tools, so not Goondan's. They are
//! the user's own rmcp handler, composed with our server through `McpServerBuilder::others`,
//! as any program that needs them would do. Answers are written as the protocol's JSON and
//! read into rmcp's types.

#![allow(deprecated)]

use std::collections::HashSet;
use std::sync::Mutex;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, InputRequiredResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, ServerCapabilities, ServerConfig, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A 1x1 PNG.
pub(crate) const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// Resources, prompts and completion of the conformance suite's scenarios.
#[derive(Default)]
pub(crate) struct Others {
    subscriptions: Mutex<HashSet<String>>,
}

/// Reads a result written as JSON, stamped as 2026-07-28 wants it (`resultType`, and for
/// lists the caching hints); rmcp strips them for older sessions.
fn read<T: DeserializeOwned>(mut value: Value) -> Result<T, ErrorData> {
    if let Value::Object(map) = &mut value {
        map.entry("resultType").or_insert_with(|| json!("complete"));
        let list = ["resources", "resourceTemplates", "prompts"]
            .iter()
            .any(|k| map.contains_key(*k));
        if list {
            map.entry("ttlMs").or_insert_with(|| json!(0));
            map.entry("cacheScope").or_insert_with(|| json!("private"));
        }
    }
    serde_json::from_value(value).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

fn prompt_text(text: String) -> Value {
    json!({"messages": [{"role": "user", "content": {"type": "text", "text": text}}]})
}

impl ServerHandler for Others {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_prompts()
                .enable_completions()
                .build(),
        )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        read(json!({"resources": [
            {"uri": "test://static-text", "name": "static-text", "title": "Static Text Resource",
             "description": "A static text resource for testing", "mimeType": "text/plain"},
            {"uri": "test://static-binary", "name": "static-binary",
             "title": "Static Binary Resource",
             "description": "A static binary resource (image) for testing",
             "mimeType": "image/png"},
            {"uri": "test://watched-resource", "name": "watched-resource",
             "title": "Watched Resource", "description": "A resource that can be watched",
             "mimeType": "text/plain"}
        ]}))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        read(json!({"resourceTemplates": [
            {"uriTemplate": "test://template/{id}/data", "name": "template",
             "title": "Resource Template",
             "description": "A resource template with parameter substitution",
             "mimeType": "application/json"}
        ]}))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let contents = match uri {
            "test://static-text" => json!({"uri": uri, "mimeType": "text/plain",
                "text": "This is the content of the static text resource."}),
            "test://static-binary" => {
                json!({"uri": uri, "mimeType": "image/png", "blob": PNG_BASE64})
            }
            "test://watched-resource" => {
                json!({"uri": uri, "mimeType": "text/plain", "text": "Watched resource content"})
            }
            _ => match uri
                .strip_prefix("test://template/")
                .and_then(|rest| rest.strip_suffix("/data"))
            {
                Some(id) => json!({"uri": uri, "mimeType": "application/json",
                    "text": json!({"id": id, "templateTest": true,
                                   "data": format!("Data for ID: {id}")}).to_string()}),
                None => {
                    return Err(ErrorData::resource_not_found(
                        format!("Resource not found: {uri}"),
                        Some(json!({"uri": uri})),
                    ));
                }
            },
        };
        let result: ReadResourceResult = read(json!({"contents": [contents]}))?;
        Ok(ReadResourceResponse::Complete(result))
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut subs) = self.subscriptions.lock() {
            subs.insert(request.uri);
        }
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut subs) = self.subscriptions.lock() {
            subs.remove(&request.uri);
        }
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        read(json!({"prompts": [
            {"name": "test_simple_prompt", "title": "Simple Test Prompt",
             "description": "A simple prompt without arguments"},
            {"name": "test_prompt_with_arguments", "title": "Prompt With Arguments",
             "description": "A prompt with required arguments",
             "arguments": [
                {"name": "arg1", "description": "First test argument", "required": true},
                {"name": "arg2", "description": "Second test argument", "required": true}]},
            {"name": "test_prompt_with_embedded_resource",
             "title": "Prompt With Embedded Resource",
             "description": "A prompt that includes an embedded resource",
             "arguments": [{"name": "resourceUri", "description": "URI of the resource to embed",
                            "required": true}]},
            {"name": "test_prompt_with_image", "title": "Prompt With Image",
             "description": "A prompt that includes image content"},
            {"name": "test_input_required_result_prompt",
             "description": "A prompt that asks the user for context first"}
        ]}))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let arg = |name: &str| {
            request
                .arguments
                .as_ref()
                .and_then(|a| a.get(name))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let body = match request.name.as_str() {
            "test_simple_prompt" => prompt_text("This is a simple prompt for testing.".into()),
            "test_prompt_with_arguments" => prompt_text(format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                arg("arg1"),
                arg("arg2")
            )),
            "test_prompt_with_embedded_resource" => json!({"messages": [
                {"role": "user", "content": {"type": "resource", "resource": {
                    "uri": arg("resourceUri"), "mimeType": "text/plain",
                    "text": "Embedded resource content for testing."}}},
                {"role": "user", "content": {"type": "text",
                    "text": "Please process the embedded resource above."}}
            ]}),
            "test_prompt_with_image" => json!({"messages": [
                {"role": "user", "content": {"type": "image", "data": PNG_BASE64,
                                              "mimeType": "image/png"}},
                {"role": "user", "content": {"type": "text",
                                              "text": "Please analyze the image above."}}
            ]}),
            "test_input_required_result_prompt" => {
                let answer = request
                    .input_responses
                    .as_ref()
                    .and_then(|r| r.get("user_context"))
                    .and_then(|a| a.pointer("/content/context"))
                    .and_then(Value::as_str);
                match answer {
                    Some(context) => prompt_text(format!("Prompt with context: {context}")),
                    None => {
                        let more: InputRequiredResult = read(json!({
                            "resultType": "input_required",
                            "inputRequests": {"user_context": {
                                "method": "elicitation/create",
                                "params": {"mode": "form",
                                    "message": "What context should the prompt use?",
                                    "requestedSchema": {"type": "object",
                                        "properties": {"context": {"type": "string"}},
                                        "required": ["context"]}}}}
                        }))?;
                        return Ok(GetPromptResponse::InputRequired(more));
                    }
                }
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("Unknown prompt: {other}"),
                    None,
                ));
            }
        };
        let result: GetPromptResult = read(body)?;
        Ok(GetPromptResponse::Complete(result))
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        read(json!({"completion": {"values": [], "total": 0, "hasMore": false}}))
    }
}
