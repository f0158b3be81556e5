//! The session link between `goondan run` and its agent processes: JSON lines over a Unix
//! socket whose path the host passes in [`ENV_SESSION`]. It is separate from the
//! Orchestrator's IPC (which carries the handoffs): it carries what a terminal needs while a
//! Turn runs.
//!
//! - agent to host ([`Note`]): hello, streamed text, each tool call's start and end, approval
//!   questions (and their answers from elsewhere), and forms a call asks the person to fill;
//! - host to agent ([`Order`]): an approver's decision, a filled form, and "cancel the current
//!   Turn".

use serde::{Deserialize, Serialize};
use serde_json::Value;

use goondan_runtime::tools::result::JsonObject;

/// The path of the session socket, set by `goondan run` on its agent processes.
pub(crate) const ENV_SESSION: &str = "GOONDAN_RUN_SESSION";
/// The run's state directory (conversations, `workspace/`).
pub(crate) const ENV_STATE: &str = "GOONDAN_RUN_STATE";
/// The approval policy of `--approve`.
pub(crate) const ENV_APPROVE: &str = "GOONDAN_RUN_APPROVE";
/// The per-tool policies of `--approve-tool`, one `PATTERN=POLICY` per line.
pub(crate) const ENV_APPROVE_TOOLS: &str = "GOONDAN_RUN_APPROVE_TOOLS";
/// `--journal`: the NATS server whose JetStream keeps the run journals (else SQLite files in
/// the state directory).
pub(crate) const ENV_JOURNAL: &str = "GOONDAN_RUN_JOURNAL";
/// `--journal-lease`, in milliseconds.
pub(crate) const ENV_JOURNAL_LEASE: &str = "GOONDAN_RUN_JOURNAL_LEASE_MS";
/// `--approval-expiry`, in milliseconds.
pub(crate) const ENV_APPROVAL_EXPIRY: &str = "GOONDAN_RUN_APPROVAL_EXPIRY_MS";
/// `--sandbox`: the mode that replaces each agent's `policy.sandbox` mode.
pub(crate) const ENV_SANDBOX: &str = "GOONDAN_RUN_SANDBOX";

/// What an agent process tells the terminal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub(crate) enum Note {
    /// The process is up (a second hello from the same instance is a restart).
    #[serde(rename_all = "camelCase")]
    Hello {
        /// `agent/instanceKey`.
        address: String,
        /// The process id.
        pid: u32,
    },
    /// More text of the answer being written.
    Delta {
        /// The text.
        text: String,
    },
    /// A bridged MCP server is not up, and its tools are left out until it is.
    #[serde(rename_all = "camelCase")]
    ServerLeftOut {
        /// The MCP extension.
        extension: String,
        /// The server.
        server: String,
        /// Why, as its status says.
        why: String,
    },
    /// A bridged MCP server is up, but some of its tools are left out.
    #[serde(rename_all = "camelCase")]
    ToolsLeftOut {
        /// The MCP extension.
        extension: String,
        /// The server.
        server: String,
        /// Which, and why.
        why: String,
    },
    /// A tool call started.
    #[serde(rename_all = "camelCase")]
    ToolStarted {
        /// The call id.
        call_id: String,
        /// The full tool name.
        tool: String,
        /// The arguments.
        args: JsonObject,
        /// The call it is made in (a code mode program's code call), if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        within: Option<String>,
    },
    /// What a running call reports of its progress (a code call: a line its program printed).
    #[serde(rename_all = "camelCase")]
    ToolProgress {
        /// The call's id.
        call_id: String,
        /// The report.
        message: String,
    },
    /// A tool call ended.
    #[serde(rename_all = "camelCase")]
    ToolFinished {
        /// The call id.
        call_id: String,
        /// The full tool name.
        tool: String,
        /// `ok`, `error` or `pending`.
        status: String,
        /// The output or the error, on one line.
        summary: String,
        /// How long it ran, in milliseconds.
        ms: u64,
    },
    /// A Turn of this instance is over: every note of it was sent before this one. Its answer
    /// travels on the Orchestrator's socket and may arrive first; the terminal waits for this
    /// note before it shows the answer.
    TurnEnded {
        /// `agent/instanceKey`.
        address: String,
    },
    /// The approver is asked about a call; the host answers with [`Order::Decide`].
    Approval {
        /// Ties the answer to the question.
        id: u64,
        /// The full tool name.
        tool: String,
        /// The arguments.
        args: JsonObject,
        /// Why the policy asks.
        why: String,
        /// The id of the kept question, for `goondan approvals answer` (none when the state
        /// directory keeps no questions).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        question: Option<String>,
    },
    /// Question `id` was answered elsewhere (`goondan approvals answer`, its expiry), or the
    /// call that asked it is over: the terminal stops asking it.
    ApprovalSettled {
        /// The id of [`Note::Approval`] or [`Note::Form`].
        id: u64,
    },
    /// A call asks the person to fill a form (MCP elicitation); the host answers with
    /// [`Order::Fill`].
    Form {
        /// Ties the answer to the form.
        id: u64,
        /// What the person is asked.
        message: String,
        /// The requested schema: a flat object of primitive fields.
        schema: Value,
    },
}

/// What the terminal tells an agent process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub(crate) enum Order {
    /// The answer to [`Note::Approval`] `id`.
    Decide {
        /// The question's id.
        id: u64,
        /// The decision.
        decision: Answer,
    },
    /// The answer to [`Note::Form`] `id`.
    Fill {
        /// The form's id.
        id: u64,
        /// What the person did.
        answer: FormAnswer,
    },
    /// Cancel the Turn that runs now.
    Cancel,
}

/// What the person did with a form, on the wire. The first three are MCP's `ElicitResult`
/// as they are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "camelCase")]
pub(crate) enum FormAnswer {
    /// Filled it in.
    Accept {
        /// The values, by field name.
        content: JsonObject,
    },
    /// Said no.
    Decline,
    /// Dismissed it.
    Cancel,
    /// The terminal cannot ask this form (why).
    Unanswerable {
        /// Why.
        reason: String,
    },
}

/// An approver's decision, on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Answer {
    /// Run the call.
    Approve,
    /// Run it with these arguments.
    Edit(JsonObject),
    /// Do not run it, for this reason.
    Deny(String),
}

/// One line of JSON, newline included.
pub(crate) fn line<T: Serialize>(value: &T) -> String {
    let mut text = serde_json::to_string(value).unwrap_or_else(|_| "{}".to_owned());
    text.push('\n');
    text
}

/// A value as one short line: at most `max` characters, cut with `…`.
pub(crate) fn short(value: &Value, max: usize) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let text = text.replace(['\n', '\r'], " ");
    if text.chars().count() <= max {
        return text;
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_and_orders_are_one_json_line_each_and_read_back() {
        let note = Note::ToolStarted {
            call_id: "c1".into(),
            tool: "file-system__write".into(),
            args: serde_json::Map::from_iter([("path".to_owned(), Value::from("a.txt"))]),
            within: Some("c0".into()),
        };
        let text = line(&note);
        assert!(text.ends_with('\n') && text.matches('\n').count() == 1);
        assert!(text.contains("\"type\":\"toolStarted\""), "{text}");
        assert_eq!(serde_json::from_str::<Note>(&text).ok(), Some(note));
        let order = Order::Decide {
            id: 3,
            decision: Answer::Deny("not now".into()),
        };
        assert_eq!(
            serde_json::from_str::<Order>(&line(&order)).ok(),
            Some(order)
        );
        // A filled form's answer is MCP's `ElicitResult` inside the order.
        let fill = Order::Fill {
            id: 4,
            answer: FormAnswer::Accept {
                content: serde_json::Map::from_iter([("name".to_owned(), Value::from("Ada"))]),
            },
        };
        let text = line(&fill);
        let wire: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            wire["answer"],
            serde_json::json!({"action": "accept", "content": {"name": "Ada"}})
        );
        assert_eq!(serde_json::from_str::<Order>(&text).ok(), Some(fill));
    }

    #[test]
    fn short_cuts_long_values_on_one_line() {
        assert_eq!(short(&Value::from("a\nb"), 10), "a b");
        assert_eq!(short(&Value::from("abcdefghij"), 5), "abcd…");
        assert_eq!(short(&serde_json::json!({"a": 1}), 20), "{\"a\":1}");
    }
}
