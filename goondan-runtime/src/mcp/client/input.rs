//! A bridged server that asks for input mid-call (elicitation, sampling, roots) is answered
//! the way our own tools' questions are: through the call's [`ToolContext`] and whoever
//! called it ([`Caller`](crate::tools::context::Caller)). On 2026-07-28 the questions come
//! as an input-required result and the call is sent again with the answers and the server's
//! `requestState`; before, they come as requests from the server while the call runs.
//!
//! A question nobody can answer (the call has no caller, or one without the capability) is
//! answered as MCP lets a client that cannot ask: a form is declined, the roots are none, and
//! sampling is refused.

use rmcp::model::{InputRequiredResult, InputResponses};
use serde_json::{Value, json};

use std::sync::Mutex;

use crate::lock;
use crate::tools::context::{AskError, Question, ToolContext};

/// How many input-required rounds one call may take before the bridge gives up on it.
pub(crate) const MAX_INPUT_ROUNDS: usize = 8;

/// The question of a server's request `method` with `params`; `None` for a request this
/// bridge does not answer.
pub(crate) fn question_of(method: &str, params: &Value) -> Option<Question> {
    match method {
        "elicitation/create" => {
            // URL-mode elicitation sends the user elsewhere; only forms are asked here.
            let schema = params.get("requestedSchema")?.clone();
            let message = params.get("message").and_then(Value::as_str).unwrap_or("");
            Some(Question::elicit(message, schema))
        }
        "sampling/createMessage" => Some(Question::Sample(params.clone())),
        "roots/list" => Some(Question::Roots),
        _ => None,
    }
}

/// Asks `question` through `ctx` (named `key` among the call's questions, when the server
/// named it), or answers as a client that cannot ask.
pub(crate) async fn answer(
    ctx: &ToolContext,
    key: Option<&str>,
    question: Question,
    sampling: bool,
) -> Result<Value, String> {
    if !sampling && matches!(question, Question::Sample(_)) {
        return Err("this bundle does not let this server sample the agent's model".to_owned());
    }
    let asked = match key {
        Some(key) => ctx.ask_as(key, question.clone()).await,
        None => ctx.ask(question.clone()).await,
    };
    match asked {
        Ok(answer) => Ok(answer),
        Err(AskError::NoCaller | AskError::Unsupported { .. }) => match question {
            Question::Elicit { .. } => Ok(json!({ "action": "decline" })),
            Question::Roots => Ok(json!({ "roots": [] })),
            _ => Err("nobody here can answer a sampling request for this call".to_owned()),
        },
        Err(e) => Err(e.to_string()),
    }
}

/// The answers to an input-required result, and the state to send back with them.
pub(crate) async fn answer_all(
    ctx: &ToolContext,
    needed: InputRequiredResult,
    sampling: bool,
) -> Result<(Option<InputResponses>, Option<String>), String> {
    let requests = needed.input_requests.unwrap_or_default();
    if requests.is_empty() && needed.request_state.is_none() {
        return Err("the server asked for input but named none".to_owned());
    }
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        let wire = serde_json::to_value(&request).map_err(|e| e.to_string())?;
        let method = wire.get("method").and_then(Value::as_str).unwrap_or("");
        let params = wire.get("params").cloned().unwrap_or(Value::Null);
        let question = question_of(method, &params).ok_or_else(|| {
            format!("the server asked for `{method}`, which this bridge does not answer")
        })?;
        let answered = answer(ctx, Some(&key), question, sampling).await?;
        responses.insert(key, answered);
    }
    Ok((
        (!responses.is_empty()).then_some(responses),
        needed.request_state,
    ))
}

/// The calls running on a server, latest last. MCP does not say which call a server's own
/// request belongs to, so it goes to the latest one.
#[derive(Default)]
pub(crate) struct Asking {
    next: std::sync::atomic::AtomicU64,
    running: Mutex<Vec<(u64, ToolContext)>>,
}

/// A call's place in [`Asking`], given up when dropped.
pub(crate) struct AskingGuard<'a> {
    asking: &'a Asking,
    id: u64,
}

impl Asking {
    pub(crate) fn enter(&self, ctx: &ToolContext) -> AskingGuard<'_> {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lock(&self.running).push((id, ctx.clone()));
        AskingGuard { asking: self, id }
    }

    pub(crate) fn latest(&self) -> Option<ToolContext> {
        lock(&self.running).last().map(|(_, ctx)| ctx.clone())
    }
}

impl Drop for AskingGuard<'_> {
    fn drop(&mut self) {
        lock(&self.asking.running).retain(|(id, _)| *id != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_s_requests_become_our_questions() {
        let form = json!({"message": "Your name?", "requestedSchema": {"type": "object"}});
        assert_eq!(
            question_of("elicitation/create", &form),
            Some(Question::elicit("Your name?", json!({"type": "object"})))
        );
        assert_eq!(
            question_of("roots/list", &Value::Null),
            Some(Question::Roots)
        );
        assert!(matches!(
            question_of("sampling/createMessage", &json!({"maxTokens": 5})),
            Some(Question::Sample(_))
        ));
        // A URL-mode elicitation has no form to fill.
        assert_eq!(
            question_of(
                "elicitation/create",
                &json!({"mode": "url", "url": "https://x"})
            ),
            None
        );
        assert_eq!(question_of("tools/call", &Value::Null), None);
    }

    #[tokio::test]
    async fn with_nobody_to_ask_a_form_is_declined_roots_are_none_and_sampling_is_refused() {
        let ctx = ToolContext::builder("/tmp").build().for_call("c1", "s__t");
        let form = answer(
            &ctx,
            None,
            Question::elicit("?", json!({"type": "object"})),
            true,
        )
        .await;
        assert_eq!(form, Ok(json!({"action": "decline"})));
        assert_eq!(
            answer(&ctx, None, Question::Roots, true).await,
            Ok(json!({"roots": []}))
        );
        assert!(
            answer(&ctx, None, Question::sample_text("hi", 5), true)
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn a_server_the_bundle_does_not_let_sample_is_refused_even_with_a_model_to_ask() {
        struct Model;
        impl crate::tools::context::Caller for Model {
            fn can_answer(&self, _q: &Question) -> bool {
                true
            }
            fn ask(&self, _k: Option<&str>, _q: Question) -> crate::tools::context::AnswerFuture {
                Box::pin(async { Ok(json!({"role": "assistant"})) })
            }
            fn log(&self, _l: crate::tools::context::LogLevel, _d: Value) {}
        }
        let ctx = ToolContext::builder("/tmp")
            .caller(std::sync::Arc::new(Model))
            .build()
            .for_call("c1", "s__t");
        let q = || Question::sample_text("hi", 5);
        assert!(answer(&ctx, None, q(), true).await.is_ok());
        let refused = answer(&ctx, None, q(), false).await.unwrap_err();
        assert!(
            refused.contains("does not let this server sample"),
            "{refused}"
        );
    }
}
