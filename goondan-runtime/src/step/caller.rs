//! [`AgentCaller`]: whoever called, for the tool calls of an agent's Steps. What a tool asks
//! mid-call (and what a bridged MCP server asks through it) is answered here: a sampling
//! request by the agent's own model, within the request's `maxTokens`; the roots by the
//! agent's working directory; a form by the person the host gave
//! ([`AgentInstanceBuilder::person`](super::AgentInstanceBuilder::person)), else it cannot be
//! asked.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::model::{Model, ModelRequest};
use crate::tools::catalog::{ToolCatalog, ToolChoice};
use crate::tools::context::{AnswerFuture, AskError, Caller, LogLevel, Message, Question};

/// The longest answer a sampling request may ask for when it names no `maxTokens`.
const DEFAULT_SAMPLING_TOKENS: u32 = 1024;

/// The caller of an agent's tool calls.
pub(crate) struct AgentCaller {
    pub(crate) agent: String,
    pub(crate) model: Arc<dyn Model>,
    pub(crate) workdir: PathBuf,
    pub(crate) person: Option<Arc<dyn Caller>>,
}

impl Caller for AgentCaller {
    fn can_answer(&self, question: &Question) -> bool {
        match question {
            Question::Sample(_) | Question::Roots => true,
            _ => self.person.as_ref().is_some_and(|p| p.can_answer(question)),
        }
    }

    fn ask(&self, key: Option<&str>, question: Question) -> AnswerFuture {
        match question {
            Question::Sample(params) => {
                let model = Arc::clone(&self.model);
                let agent = self.agent.clone();
                Box::pin(async move { sample(model.as_ref(), &agent, &params).await })
            }
            Question::Roots => {
                let uri = url::Url::from_directory_path(&self.workdir)
                    .map(String::from)
                    .unwrap_or_else(|()| format!("file://{}", self.workdir.display()));
                let answer = json!({"roots": [{"uri": uri, "name": self.agent}]});
                Box::pin(async move { Ok(answer) })
            }
            question => match &self.person {
                Some(person) if person.can_answer(&question) => person.ask(key, question),
                _ => {
                    let capability = question.capability();
                    Box::pin(async move { Err(AskError::Unsupported { capability }) })
                }
            },
        }
    }

    fn log(&self, level: LogLevel, data: Value) {
        if let Some(person) = &self.person {
            person.log(level, data);
        }
    }
}

/// The text of one sampling message's content (a block, or a list of blocks).
fn text_of(content: &Value) -> Result<String, AskError> {
    let blocks = match content {
        Value::Array(blocks) => blocks.iter().collect(),
        block => vec![block],
    };
    let mut text = Vec::new();
    for block in blocks {
        match (block.get("type").and_then(Value::as_str), block.get("text")) {
            (Some("text"), Some(Value::String(t))) => text.push(t.as_str()),
            (kind, _) => {
                return Err(AskError::Failed {
                    reason: format!(
                        "this agent's model answers text sampling requests only, not `{}`",
                        kind.unwrap_or("?")
                    ),
                });
            }
        }
    }
    Ok(text.join("\n"))
}

/// Answers the sampling request `params` (`sampling/createMessage`'s) with `model`: its
/// messages, its system prompt, no tools, at most its `maxTokens`.
async fn sample(model: &dyn Model, agent: &str, params: &Value) -> Result<Value, AskError> {
    let failed = |reason: String| AskError::Failed { reason };
    let mut messages = Vec::new();
    let listed = params["messages"]
        .as_array()
        .ok_or_else(|| failed("a sampling request needs `messages`".to_owned()))?;
    for (i, m) in listed.iter().enumerate() {
        let role = match m["role"].as_str() {
            Some(r @ ("user" | "assistant")) => r,
            other => return Err(failed(format!("message {i} has the role {other:?}"))),
        };
        let mut message = Message::assistant(format!("sampling-{i}"), None, Vec::new());
        message.role = role.to_owned();
        message.content = Some(text_of(&m["content"])?);
        messages.push(message);
    }
    let max_tokens = params["maxTokens"]
        .as_u64()
        .map_or(DEFAULT_SAMPLING_TOKENS, |n| {
            u32::try_from(n).unwrap_or(u32::MAX)
        });
    let request = ModelRequest {
        system: params["systemPrompt"].as_str().map(str::to_owned),
        agent_name: agent.to_owned(),
        turn_id: "sampling".to_owned(),
        step: 0,
        messages,
        catalog: ToolCatalog::default(),
        tool_choice: Some(ToolChoice::None),
        max_tokens: Some(max_tokens),
        deltas: None,
        cancellation: CancellationToken::new(),
    };
    let answer = model
        .respond(&request)
        .await
        .map_err(|e| failed(format!("the agent's model failed: {e}")))?;
    Ok(json!({
        "role": "assistant",
        "content": {"type": "text", "text": answer.content.unwrap_or_default()},
        "model": agent,
        "stopReason": "endTurn",
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::step::{ModelResponse, ScriptedModel};

    fn caller(model: Arc<ScriptedModel>) -> AgentCaller {
        AgentCaller {
            agent: "helper".into(),
            model,
            workdir: PathBuf::from("/srv/work"),
            person: None,
        }
    }

    #[tokio::test]
    async fn sampling_is_the_agent_s_model_with_the_request_s_limit_and_no_tools() {
        let model = Arc::new(ScriptedModel::new([ModelResponse::text("a haiku")]));
        let answer = caller(Arc::clone(&model))
            .ask(
                None,
                Question::Sample(json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": "Write a haiku"}}],
                    "systemPrompt": "You are terse.",
                    "maxTokens": 40,
                })),
            )
            .await
            .unwrap();
        assert_eq!(answer["content"]["text"], "a haiku");
        assert_eq!(answer["role"], "assistant");
        let seen = model.requests();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].max_tokens, Some(40));
        assert_eq!(seen[0].system.as_deref(), Some("You are terse."));
        assert_eq!(seen[0].tool_choice, Some(ToolChoice::None));
        assert_eq!(
            seen[0].messages[0].content.as_deref(),
            Some("Write a haiku")
        );
    }

    #[tokio::test]
    async fn roots_are_the_workdir_a_form_without_a_person_cannot_be_asked_and_images_are_refused()
    {
        let c = caller(Arc::new(ScriptedModel::new([])));
        let roots = c.ask(None, Question::Roots).await.unwrap();
        assert_eq!(roots["roots"][0]["uri"], "file:///srv/work/");
        let form = c
            .ask(None, Question::elicit("Name?", json!({"type": "object"})))
            .await;
        assert_eq!(
            form,
            Err(AskError::Unsupported {
                capability: "elicitation"
            })
        );
        assert!(!c.can_answer(&Question::elicit("Name?", json!({}))));
        let image = c
            .ask(
                None,
                Question::Sample(json!({"messages": [{"role": "user", "content": {"type": "image", "data": "", "mimeType": "image/png"}}]})),
            )
            .await;
        assert!(matches!(image, Err(AskError::Failed { .. })), "{image:?}");
    }
}
