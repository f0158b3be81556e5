//! `kind: Model` resources ([`ModelSpec`]), the Model an Agent picks with `modelRef`, and the
//! Agent's system prompt.
//!
//! ```yaml
//! apiVersion: goondan.ai/v1
//! kind: Model
//! metadata: {name: local}
//! spec:
//!   provider: openai            # openai | openai-responses | anthropic | gemini
//!   model: qwen3:8b
//!   endpoint: "http://127.0.0.1:11434/v1"   # the base URL (optional)
//!   apiKey: {valueFrom: {env: OPENAI_API_KEY}}
//!   options:
//!     temperature: 0.2
//!     maxTokens: 1024
//!     timeoutSeconds: 120
//!     maxRetries: 3
//!     stream: true
//!     # whether the model must call a tool: auto | required | none | a tool's name
//!     # (ToolChoice); firstStepToolChoice is for each Turn's first Step instead
//!     toolChoice: auto
//!     firstStepToolChoice: file-system__write
//! ```
//!
//! An Agent picks it with `spec.modelConfig.modelRef` (or `spec.modelRef`), and may set
//! `spec.modelConfig.params` (`temperature`, `maxTokens`, `toolChoice`, `firstStepToolChoice`),
//! which win over the Model's options.
//! A bundle is checked when it is read: a field that is present must have the right type and
//! value. `provider` and `model` are required when an Agent's model is built
//! ([`Bundle::agent_model`]).

use std::time::Duration;

use serde_json::Value;

use super::diagnostic::{Diagnostic, Locus};
use super::resource::{Kind, ObjectRef, Resource};
use super::{Bundle, BundleError};
use crate::tools::catalog::ToolChoice;

/// The built-in providers a Model's `spec.provider` may name (and any provider registered at
/// run time).
pub const PROVIDERS: [&str; 5] = [
    "openai",
    "openai-responses",
    "anthropic",
    "gemini",
    "google",
];

/// The names (and aliases) of the providers registered at run time, which a Model's
/// `spec.provider` may name too: the provider table adds each registered provider here.
static REGISTERED: std::sync::RwLock<Vec<&'static str>> = std::sync::RwLock::new(Vec::new());

/// Accepts `name` and `aliases` in `spec.provider` from now on (a provider was registered).
pub(crate) fn accept_provider(name: &'static str, aliases: &'static [&'static str]) {
    let mut registered = REGISTERED.write().unwrap_or_else(|e| e.into_inner());
    for n in std::iter::once(name).chain(aliases.iter().copied()) {
        if !registered.contains(&n) {
            registered.push(n);
        }
    }
}

/// The registered providers' names, as `` , `name` `` for the message.
fn registered_providers(p: &str) -> Option<String> {
    let registered = REGISTERED.read().unwrap_or_else(|e| e.into_inner());
    if registered.contains(&p) {
        return None;
    }
    Some(registered.iter().map(|n| format!(", `{n}`")).collect())
}

/// A Model resource, as an Agent uses it: the Agent's `modelConfig.params` applied.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    /// The Model resource's name.
    pub name: String,
    /// `spec.provider`: one of [`PROVIDERS`], or a provider registered at run time.
    pub provider: String,
    /// `spec.model`: the provider's model name.
    pub model: String,
    /// `spec.endpoint`: the base URL, when not the provider's own.
    pub endpoint: Option<String>,
    /// `spec.apiKey.valueFrom.env`: the environment variable holding the key.
    pub api_key_env: Option<String>,
    /// `options.temperature` (or the Agent's `params.temperature`).
    pub temperature: Option<f64>,
    /// `options.maxTokens` (or the Agent's `params.maxTokens`).
    pub max_tokens: Option<u32>,
    /// `options.timeoutSeconds`.
    pub timeout: Option<Duration>,
    /// `options.maxRetries`: retries after the first attempt, on 429, 5xx and timeouts.
    pub max_retries: Option<u32>,
    /// `options.stream` (default: streamed).
    pub stream: Option<bool>,
    /// `options.toolChoice` (or the Agent's `params.toolChoice`): every Step's [`ToolChoice`].
    pub tool_choice: Option<ToolChoice>,
    /// `options.firstStepToolChoice` (or the Agent's `params.firstStepToolChoice`): the first
    /// Step's, instead.
    pub first_step_tool_choice: Option<ToolChoice>,
}

/// Every problem of a Model resource's present fields.
pub(crate) fn check(r: &Resource, out: &mut Vec<Diagnostic>) {
    let Some(spec) = r.spec() else {
        return;
    };
    let at = |field: &str| r.locus_of(&format!("/spec/{field}"));
    for field in ["provider", "model"] {
        match spec.get(field) {
            None => {}
            Some(Value::String(s)) if !s.trim().is_empty() => {}
            Some(v) => out.push(at(field).error(format!(
                "`spec.{field}` must be a non-empty string, found {v}"
            ))),
        }
    }
    if let Some(p) = spec.get("provider").and_then(Value::as_str)
        && !p.trim().is_empty()
        && !PROVIDERS.contains(&p)
        && let Some(others) = registered_providers(p)
    {
        out.push(at("provider").error(format!(
            "unknown provider `{p}`: expected one of `openai` (Chat Completions, also vLLM, llama.cpp, Ollama, LM Studio), `openai-responses`, `anthropic`, `gemini`{others}"
        )));
    }
    if let Some(v) = spec.get("endpoint") {
        let ok = v
            .as_str()
            .is_some_and(|s| s.starts_with("http://") || s.starts_with("https://"));
        if !ok {
            out.push(at("endpoint").error(format!(
                "`spec.endpoint` must be an http:// or https:// URL, found {v}"
            )));
        }
    }
    if let Some(v) = spec.get("apiKey")
        && let Err(message) = api_key_env(v)
    {
        out.push(at("apiKey").error(message));
    }
    check_options(r, "/spec/options", out);
}

/// The options at `pointer`, when there: a mapping of options each [`check_option`] accepts.
pub(crate) fn check_options(r: &Resource, pointer: &str, out: &mut Vec<Diagnostic>) {
    match r.value.pointer(pointer) {
        None | Some(Value::Null) => {}
        Some(Value::Object(options)) => {
            for (key, value) in options {
                if let Err(message) = check_option(key, value) {
                    out.push(r.locus_of(&format!("{pointer}/{key}")).error(message));
                }
            }
        }
        Some(v) => out.push(r.locus_of(pointer).error(format!(
            "`{}` must be a mapping, found {v}",
            pointer[1..].replace('/', ".")
        ))),
    }
}

/// `apiKey: {valueFrom: {env: NAME}}` as the name; a key written in the bundle is refused.
fn api_key_env(v: &Value) -> Result<String, String> {
    if v.get("value").is_some() {
        return Err(
            "`spec.apiKey.value` puts a secret in the bundle: set an environment variable and write `apiKey: {valueFrom: {env: NAME}}`".to_owned(),
        );
    }
    v.pointer("/valueFrom/env")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| "`spec.apiKey` must be `{valueFrom: {env: NAME}}`".to_owned())
}

fn check_option(key: &str, value: &Value) -> Result<(), String> {
    let ok = match key {
        "temperature" => value.as_f64().is_some_and(|t| (0.0..=2.0).contains(&t)),
        "maxTokens" => value
            .as_u64()
            .is_some_and(|n| n > 0 && u32::try_from(n).is_ok()),
        "timeoutSeconds" => value.as_f64().is_some_and(|t| t > 0.0 && t <= 86_400.0),
        "maxRetries" => value.as_u64().is_some_and(|n| n <= 10),
        "stream" => value.is_boolean(),
        "toolChoice" | "firstStepToolChoice" => {
            return match value.as_str().map(str::parse::<ToolChoice>) {
                Some(Ok(_)) => Ok(()),
                Some(Err(e)) => Err(format!("`{key}`: {e}")),
                None => Err(format!(
                    "`{key}` must be `auto`, `required`, `none` or a tool's name, found {value}"
                )),
            };
        }
        _ => return Ok(()),
    };
    if ok {
        return Ok(());
    }
    let expected = match key {
        "temperature" => "a number from 0 to 2",
        "maxTokens" => "a positive integer",
        "timeoutSeconds" => "a positive number of seconds",
        "maxRetries" => "an integer from 0 to 10",
        _ => "true or false",
    };
    Err(format!("`options.{key}` must be {expected}, found {value}"))
}

fn option_f64(options: Option<&Value>, key: &str) -> Option<f64> {
    options?.get(key)?.as_f64()
}

fn option_choice(options: Option<&Value>, key: &str) -> Option<ToolChoice> {
    options?.get(key)?.as_str()?.parse().ok()
}

fn option_u32(options: Option<&Value>, key: &str) -> Option<u32> {
    u32::try_from(options?.get(key)?.as_u64()?).ok()
}

impl Bundle {
    /// The Model the Agent `agent` picks with `spec.modelConfig.modelRef` (or `spec.modelRef`),
    /// with the Agent's `modelConfig.params` applied. Fails, with the file and line, when the
    /// Agent names no Model, the Model is missing, or it lacks `provider` or `model`.
    ///
    /// ```
    /// use goondan_runtime::bundle::Bundle;
    /// let yaml = r#"
    /// apiVersion: goondan.ai/v1
    /// kind: Model
    /// metadata: {name: local}
    /// spec: {provider: openai, model: qwen3, endpoint: "http://127.0.0.1:11434/v1", options: {temperature: 0.2}}
    /// ---
    /// apiVersion: goondan.ai/v1
    /// kind: Agent
    /// metadata: {name: helper}
    /// spec: {modelConfig: {modelRef: "Model/local", params: {maxTokens: 300}}}
    /// "#;
    /// let model = Bundle::from_yaml(yaml, "goondan.yaml").agent_model("helper")?;
    /// assert_eq!((model.provider.as_str(), model.model.as_str()), ("openai", "qwen3"));
    /// assert_eq!((model.temperature, model.max_tokens), (Some(0.2), Some(300)));
    /// # Ok::<(), goondan_runtime::bundle::BundleError>(())
    /// ```
    pub fn agent_model(&self, agent: &str) -> Result<ModelSpec, BundleError> {
        let a = self.agent(agent)?;
        let spec = a.spec();
        let config = spec.and_then(|s| s.get("modelConfig"));
        let (reference, pointer) = match config.and_then(|m| m.get("modelRef")) {
            Some(v) => (Some(v), "/spec/modelConfig/modelRef"),
            None => (spec.and_then(|s| s.get("modelRef")), "/spec/modelRef"),
        };
        let invalid = |at: Locus, message: String| BundleError::Invalid {
            diagnostics: vec![at.error(message)],
        };
        let Some(reference) = reference else {
            return Err(invalid(
                a.locus_of("/spec"),
                format!(
                    "agent `{agent}` names no model: add `spec.modelConfig.modelRef: Model/NAME`"
                ),
            ));
        };
        let name = ObjectRef::parse(reference)
            .map(|r| r.name)
            .or_else(|| reference.as_str().map(str::to_owned))
            .unwrap_or_default();
        let Some(m) = self.get(&Kind::Model, &name) else {
            return Err(invalid(
                a.locus_of(pointer),
                format!(
                    "E_CONFIG_REF_NOT_FOUND: agent `{agent}` references Model `{name}`, which this bundle does not have"
                ),
            ));
        };
        let ms = m.spec();
        let required = |field: &str| {
            ms.and_then(|s| s.get(field))
                .and_then(Value::as_str)
                .filter(|s| !s.trim().is_empty())
                .map(str::to_owned)
                .ok_or_else(|| {
                    invalid(
                        m.locus_of(&format!("/spec/{field}")),
                        format!("Model `{name}` needs `spec.{field}`"),
                    )
                })
        };
        let provider = required("provider")?;
        let model = required("model")?;
        let mut problems = Vec::new();
        check(m, &mut problems);
        if !problems.is_empty() {
            return Err(BundleError::Invalid {
                diagnostics: problems,
            });
        }
        let options = ms.and_then(|s| s.get("options"));
        let params = config.and_then(|c| c.get("params"));
        Ok(ModelSpec {
            name,
            provider,
            model,
            endpoint: ms
                .and_then(|s| s.get("endpoint"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            api_key_env: ms
                .and_then(|s| s.get("apiKey"))
                .and_then(|k| api_key_env(k).ok()),
            temperature: option_f64(params, "temperature")
                .or_else(|| option_f64(options, "temperature")),
            max_tokens: option_u32(params, "maxTokens")
                .or_else(|| option_u32(options, "maxTokens")),
            timeout: option_f64(options, "timeoutSeconds").map(Duration::from_secs_f64),
            max_retries: option_u32(options, "maxRetries"),
            stream: options
                .and_then(|o| o.get("stream"))
                .and_then(Value::as_bool),
            tool_choice: option_choice(params, "toolChoice")
                .or_else(|| option_choice(options, "toolChoice")),
            first_step_tool_choice: option_choice(params, "firstStepToolChoice")
                .or_else(|| option_choice(options, "firstStepToolChoice")),
        })
    }

    /// The Agent's system prompt: `spec.prompts.systemPrompt` (or `spec.systemPrompt`), then the
    /// text of the file `spec.prompts.systemRef` (or `spec.prompt.systemRef`) names, relative to
    /// the bundle file; `None` when it has neither.
    pub fn system_prompt(&self, agent: &str) -> Result<Option<String>, BundleError> {
        let a = self.agent(agent)?;
        let spec = a.spec();
        let field = |path: &[&str]| {
            let mut v = spec?.get(path[0])?;
            for key in &path[1..] {
                v = v.get(key)?;
            }
            v.as_str()
        };
        let mut parts = Vec::new();
        if let Some(text) = field(&["prompts", "systemPrompt"]).or_else(|| field(&["systemPrompt"]))
        {
            parts.push(text.to_owned());
        }
        for holder in ["prompts", "prompt"] {
            let Some(rel) = field(&[holder, "systemRef"]) else {
                continue;
            };
            let path = self
                .file()
                .parent()
                .unwrap_or(std::path::Path::new(""))
                .join(rel);
            let text = std::fs::read_to_string(&path).map_err(|source| BundleError::Io {
                path: path.clone(),
                source,
            })?;
            parts.push(text);
            break;
        }
        Ok((!parts.is_empty()).then(|| parts.join("\n\n")))
    }

    /// The Agent named `agent`, or an error listing the bundle's Agents.
    pub(crate) fn agent(&self, agent: &str) -> Result<&Resource, BundleError> {
        self.get(&Kind::Agent, agent)
            .ok_or_else(|| BundleError::UnknownAgent {
                name: agent.to_owned(),
                known: self.of_kind(&Kind::Agent).map(|a| a.name.clone()).collect(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_checked_by_type_and_range() {
        assert!(check_option("temperature", &serde_json::json!(2.5)).is_err());
        assert!(check_option("temperature", &serde_json::json!(0.5)).is_ok());
        assert!(check_option("maxTokens", &serde_json::json!(0)).is_err());
        assert!(check_option("organization", &serde_json::json!("x")).is_ok());
    }
}
