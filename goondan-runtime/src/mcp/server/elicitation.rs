//! [`ElicitationApprover`]: approvals asked of the person behind the call's caller, as a form
//! (for an MCP client, MCP elicitation: `elicitation/create`).
//!
//! The approver asks the call's caller through the call's context (its
//! [`ApprovalRequest::context`]), the way a tool asks through
//! [`ToolContext::elicit`](crate::ToolContext::elicit): for a call over MCP, a
//! server-initiated request on a 2025-11-25 session, an input-required result on a
//! 2026-07-28 request. A caller that cannot answer a form (a client that did not declare
//! elicitation, a call without a caller) is not asked: the approver then gives its fallback
//! decision, a denial unless told otherwise.

use std::time::Duration;

use rmcp::model::ElicitationSchema;
use serde_json::Value;

use crate::calls::approval::{ApprovalRequest, Approver, Decision, DecisionFuture};
use crate::tools::context::{ElicitAction, Elicitation, Question};

/// The key of the approval question among the call's questions.
const APPROVAL_KEY: &str = "goondan_approval";

/// How much of the arguments the question shows.
const SHOWN_ARGS_CHARS: usize = 2_000;

/// Asks the MCP client's user, through a form elicitation, whether a call may run.
///
/// The form has three fields: `approve` (a yes/no), `reason` (told to the model on a
/// denial) and `arguments` (optional: a JSON object replacing the call's arguments).
///
/// ```
/// use goondan_runtime::ToolExecutor;
/// use goondan_runtime::calls::approval::{Approvals, Decision};
/// use goondan_runtime::mcp::server::ElicitationApprover;
/// # let registry = std::sync::Arc::new(goondan_runtime::ToolRegistry::new());
/// let approver = ElicitationApprover::new().otherwise(Decision::Deny {
///     reason: "approvals need a client that supports elicitation".into(),
/// });
/// let executor = ToolExecutor::builder(registry).middleware(Approvals::new(approver)).build();
/// # drop(executor);
/// ```
#[derive(Debug, Clone)]
pub struct ElicitationApprover {
    otherwise: Decision,
    timeout: Option<Duration>,
}

impl Default for ElicitationApprover {
    fn default() -> Self {
        Self::new()
    }
}

impl ElicitationApprover {
    /// Asks the client; denies when it cannot be asked; waits for the answer without limit
    /// (the call's own cancellation still ends the wait).
    pub fn new() -> Self {
        Self {
            otherwise: Decision::Deny {
                reason: "this call needs approval and the MCP client cannot be asked (it does \
                         not support elicitation)"
                    .into(),
            },
            timeout: None,
        }
    }

    /// The decision when the client cannot be asked.
    #[must_use]
    pub fn otherwise(mut self, decision: Decision) -> Self {
        self.otherwise = decision;
        self
    }

    /// How long to wait for the user's answer; past it the call is denied.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    async fn ask(&self, request: &ApprovalRequest) -> Decision {
        let ctx = request.context();
        let schema = serde_json::to_value(form()).unwrap_or(Value::Null);
        let question = Question::elicit(question(request), schema);
        if !ctx.can_ask(&question) {
            return self.otherwise.clone();
        }
        let asked = ctx.ask_as(APPROVAL_KEY, question);
        let answer = match self.timeout {
            Some(limit) => match tokio::time::timeout(limit, asked).await {
                Ok(answer) => answer,
                Err(_) => {
                    return deny("nobody answered the approval in time");
                }
            },
            None => asked.await,
        };
        let answer = match answer.and_then(|a| Elicitation::from_answer(&a)) {
            Ok(answer) => answer,
            Err(e) => return deny(&format!("the approval could not be asked: {e}")),
        };
        match answer.action {
            ElicitAction::Accept => read_form(answer.content.map(Value::Object).as_ref()),
            ElicitAction::Decline => deny("the user declined the call"),
            ElicitAction::Cancel => deny("the user dismissed the approval without answering"),
        }
    }
}

impl Approver for ElicitationApprover {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> DecisionFuture<'a> {
        Box::pin(self.ask(request))
    }
}

fn question(request: &ApprovalRequest) -> String {
    let args = Value::Object(request.args().clone()).to_string();
    let shown: String = args.chars().take(SHOWN_ARGS_CHARS).collect();
    let cut = if shown.len() < args.len() { " ..." } else { "" };
    let title = request
        .annotations()
        .title
        .as_deref()
        .map(|t| format!(" ({t})"))
        .unwrap_or_default();
    format!(
        "Allow `{}`{title}? {}.\nArguments: {shown}{cut}",
        request.tool_name(),
        request.why()
    )
}

fn form() -> ElicitationSchema {
    let builder = ElicitationSchema::builder()
        .title("Tool call approval")
        .required_bool_with("approve", |b| {
            b.title("Approve").description("Run the call")
        })
        .optional_string_with("reason", |s| {
            s.title("Reason")
                .description("If you deny: why, for the model")
        })
        .optional_string_with("arguments", |s| {
            s.title("Arguments")
                .description("If you approve: a JSON object to run the call with instead")
        });
    // Every required field is a property above, the one thing `build` checks.
    builder
        .build()
        .unwrap_or_else(|_| ElicitationSchema::new(Default::default()))
}

/// The decision in an accepted form. Anything unreadable denies: approving is never a guess.
fn read_form(content: Option<&Value>) -> Decision {
    let Some(fields) = content.and_then(Value::as_object) else {
        return deny("the approval form came back empty");
    };
    let reason = fields
        .get("reason")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|r| !r.is_empty());
    match fields.get("approve") {
        Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => {
            return deny(reason.unwrap_or("the user denied the call"));
        }
        _ => return deny("the approval form had no yes or no"),
    }
    let edited = fields
        .get("arguments")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|a| !a.is_empty());
    match edited.map(serde_json::from_str::<Value>) {
        None => Decision::Approve,
        Some(Ok(Value::Object(args))) => Decision::ApproveWith(args),
        Some(_) => deny("the edited arguments were not a JSON object; the call did not run"),
    }
}

fn deny(reason: &str) -> Decision {
    Decision::Deny {
        reason: reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Decision, read_form};

    #[test]
    fn forms_read_as_decisions_and_anything_odd_denies() {
        assert_eq!(
            read_form(Some(&json!({"approve": true}))),
            Decision::Approve
        );
        assert_eq!(
            read_form(Some(&json!({"approve": true, "arguments": " {\"a\": 1} "}))),
            Decision::ApproveWith(json!({"a": 1}).as_object().cloned().unwrap_or_default())
        );
        assert_eq!(
            read_form(Some(&json!({"approve": false, "reason": "too risky"}))),
            Decision::Deny {
                reason: "too risky".into()
            }
        );
        for odd in [
            json!({}),
            json!({"approve": "yes"}),
            json!({"approve": true, "arguments": "[1]"}),
            json!({"approve": true, "arguments": "{"}),
            json!(null),
        ] {
            assert!(
                matches!(read_form(Some(&odd)), Decision::Deny { .. }),
                "{odd}"
            );
        }
        assert!(matches!(read_form(None), Decision::Deny { .. }));
    }
}
