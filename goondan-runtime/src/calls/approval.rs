//! Approvals, a person in the loop: an [`Approvals`] `toolCall` middleware asks an
//! [`Approver`] before a risky call runs, and a denial is an error the model reads
//! (`E_TOOL_DENIED`, the reason as its suggestion).
//!
//! Which calls are asked about is a [`Policy`] per tool name or name pattern, the first
//! matching pattern winning, with a default for the rest. The default is
//! [`Policy::AskWhenRisky`]: ask when the export is marked destructive or open-world
//! ([`ExportAnnotations`]). The approver decides: approve, approve with edited arguments
//! (validated against the export's schema like any arguments), or deny with a reason.
//! Every decision is a tracing event on target `goondan::approval`: `approval.approved`,
//! `approval.denied`.
//!
//! ```
//! use goondan_runtime::calls::approval::{Approvals, Decision, Policy, approver_fn};
//! use goondan_runtime::prelude::*;
//! use goondan_runtime::testing::TestKit;
//!
//! /// Notes.
//! #[tool(name = "notes")]
//! pub mod notes {
//!     use super::*;
//!     /// Delete every note.
//!     #[export(destructive)]
//!     pub async fn clear() -> Result<String, ToolError> {
//!         Ok("cleared".into())
//!     }
//!     /// Count the notes.
//!     #[export(read_only)]
//!     pub async fn count() -> Result<u32, ToolError> {
//!         Ok(3)
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let approvals = Approvals::new(approver_fn(|request| async move {
//!     Decision::Deny { reason: format!("nobody may run {} today", request.tool_name()) }
//! }));
//! let kit = TestKit::builder().tool(notes::TOOL).middleware(0, approvals).build()?;
//!
//! let denied = kit.call("notes__clear", serde_json::json!({})).await;
//! assert_eq!(denied.error_code(), Some("E_TOOL_DENIED"));
//! let error = denied.error.as_ref().map(|e| e.suggestion());
//! assert_eq!(error, Some(Some("nobody may run notes__clear today")));
//!
//! // Not destructive, not open-world: not asked.
//! let counted = kit.call("notes__count", serde_json::json!({})).await;
//! assert_eq!(counted.output, Some(serde_json::json!(3)));
//! # Ok(())
//! # }
//! ```

#[cfg(feature = "host")]
mod memory;
#[cfg(feature = "nats")]
mod nats;
#[cfg(feature = "host")]
mod question;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "host")]
mod waiting;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;

use crate::calls::middleware::{CallContext, Middleware, MiddlewareFuture, Next};
use crate::tools::annotations::ExportAnnotations;
use crate::tools::context::ToolContext;
use crate::tools::error::ToolError;
use crate::tools::name::glob_matches;
use crate::tools::result::JsonObject;
use crate::tools::result::ToolCallResult;

#[cfg(feature = "host")]
pub use self::memory::MemoryQuestions;
#[cfg(feature = "nats")]
pub use self::nats::NatsQuestions;
#[cfg(feature = "host")]
pub use self::question::{
    AnswerOutcome, Answered, BY_EXPIRY, EXPIRED, Listing, Question, QuestionError, QuestionFuture,
    QuestionStore, now_ms,
};
#[cfg(feature = "sqlite")]
pub use self::sqlite::SqliteQuestions;
#[cfg(feature = "host")]
pub use self::waiting::{BY_LIVE, WaitingApprover};

/// The code of a call an approver or a policy refused.
pub const DENIED: &str = "E_TOOL_DENIED";

/// The argument by which a call asks for more than its tool gives without a person (`bash`:
/// to run outside its sandbox), an object with the `reason`. A call that carries it is always
/// asked about, whatever the policy says (only [`Policy::Deny`] refuses it without asking), and
/// the tool runs it so only when a person approved it
/// ([`ToolContext::approved_by_person`]): where nobody can be asked, it is refused.
pub const ESCALATION_ARG: &str = "escalate";

/// The longest `reason` of an [`ESCALATION_ARG`], in characters: a longer one is refused
/// before anyone is asked.
pub const ESCALATION_REASON_MAX: usize = 2000;

/// Why an escalating call is asked about.
const ESCALATION_WHY: &str = "the call asks to run with more than its tool's sandbox allows";

/// When a call needs an approver's yes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Ask before every call (`always`).
    Ask,
    /// Never ask: let every call through (`never`).
    Allow,
    /// Ask when the export is marked destructive or open-world (`risky`).
    AskWhenRisky,
    /// Ask when the export is marked destructive (`destructive`).
    AskWhenDestructive,
    /// Refuse every call without asking (`deny`).
    Deny,
}

impl Policy {
    /// Why a call under this policy needs asking, or `None` when it does not.
    fn reason_to_ask(self, annotations: &ExportAnnotations) -> Option<&'static str> {
        let destructive = annotations.destructive == Some(true);
        let open_world = annotations.open_world == Some(true);
        match self {
            Policy::Ask => Some("every call of this tool is asked about"),
            Policy::AskWhenRisky if destructive => Some("the tool is marked destructive"),
            Policy::AskWhenRisky if open_world => Some("the tool reaches the open world"),
            Policy::AskWhenDestructive if destructive => Some("the tool is marked destructive"),
            Policy::AskWhenRisky | Policy::AskWhenDestructive | Policy::Allow | Policy::Deny => {
                None
            }
        }
    }

    /// The word of [`FromStr`].
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Ask => "always",
            Policy::Allow => "never",
            Policy::AskWhenRisky => "risky",
            Policy::AskWhenDestructive => "destructive",
            Policy::Deny => "deny",
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A word that names no [`Policy`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown approval policy `{0}`: use always, never, risky, destructive or deny")]
pub struct UnknownPolicy(String);

impl FromStr for Policy {
    type Err = UnknownPolicy;

    /// `always` (ask every time), `never` (never ask), `risky`, `destructive`, `deny`.
    ///
    /// ```
    /// use goondan_runtime::calls::approval::Policy;
    /// assert_eq!("risky".parse(), Ok(Policy::AskWhenRisky));
    /// assert!("sometimes".parse::<Policy>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "always" | "ask" => Ok(Policy::Ask),
            "never" | "allow" => Ok(Policy::Allow),
            "risky" => Ok(Policy::AskWhenRisky),
            "destructive" => Ok(Policy::AskWhenDestructive),
            "deny" => Ok(Policy::Deny),
            _ => Err(UnknownPolicy(s.to_owned())),
        }
    }
}

/// What an approver is asked about: the call and why it is asked.
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    tool_name: String,
    tool_call_id: String,
    args: JsonObject,
    annotations: ExportAnnotations,
    why: &'static str,
    ctx: ToolContext,
}

impl ApprovalRequest {
    /// The full tool name, `{resource}__{export}`.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// The call's id.
    pub fn tool_call_id(&self) -> &str {
        &self.tool_call_id
    }

    /// The arguments as they would run.
    pub fn args(&self) -> &JsonObject {
        &self.args
    }

    /// The export's title and effect hints.
    pub fn annotations(&self) -> &ExportAnnotations {
        &self.annotations
    }

    /// Why the policy asks, in a few words ("the tool is marked destructive").
    pub fn why(&self) -> &str {
        self.why
    }

    /// The call's context: agent, turn, trace, cancellation.
    pub fn context(&self) -> &ToolContext {
        &self.ctx
    }
}

/// An approver's answer. As JSON (in a kept question's answer): `"approve"`,
/// `{"approveWith": {...}}`, `{"deny": {"reason": "..."}}`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Decision {
    /// Run the call as it is.
    Approve,
    /// Run the call with these arguments instead (checked against the schema as usual).
    ApproveWith(JsonObject),
    /// Do not run it; the model reads the reason as the error's suggestion.
    Deny {
        /// Why, for the model.
        reason: String,
    },
}

/// The future an [`Approver`] returns.
pub type DecisionFuture<'a> = Pin<Box<dyn Future<Output = Decision> + Send + 'a>>;

/// Decides on calls the policy asks about: a terminal prompt, a Rust callback
/// ([`approver_fn`]), an MCP client's elicitation.
pub trait Approver: Send + Sync + 'static {
    /// Approves, edits or denies `request`.
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> DecisionFuture<'a>;
}

struct FnApprover<F>(F);

impl<F, Fut> Approver for FnApprover<F>
where
    F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Decision> + Send + 'static,
{
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> DecisionFuture<'a> {
        Box::pin((self.0)(request.clone()))
    }
}

/// An approver from an async closure.
pub fn approver_fn<F, Fut>(f: F) -> impl Approver
where
    F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Decision> + Send + 'static,
{
    FnApprover(f)
}

/// The `toolCall` middleware that asks an [`Approver`] (see the [module](self)).
#[derive(Clone)]
pub struct Approvals {
    approver: Arc<dyn Approver>,
    /// Name patterns, each the full name or with `*` standing for any run of characters
    /// (`bash__*`, `*__write`, `*`), and their policies.
    rules: Vec<(String, Policy)>,
    default: Policy,
}

impl fmt::Debug for Approvals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Approvals")
            .field("rules", &self.rules)
            .field("default", &self.default)
            .finish_non_exhaustive()
    }
}

impl Approvals {
    /// Asks `approver` about destructive or open-world calls ([`Policy::AskWhenRisky`]).
    pub fn new(approver: impl Approver) -> Self {
        Self::from_arc(Arc::new(approver))
    }

    /// [`Approvals::new`] with a shared approver.
    pub fn from_arc(approver: Arc<dyn Approver>) -> Self {
        Self {
            approver,
            rules: Vec::new(),
            default: Policy::AskWhenRisky,
        }
    }

    /// The policy of tools no pattern matches.
    #[must_use]
    pub fn default_policy(mut self, policy: Policy) -> Self {
        self.default = policy;
        self
    }

    /// The policy of the tools `pattern` matches: a full name or a pattern with `*`. Patterns
    /// are tried in the order given; the first match wins.
    ///
    /// ```
    /// use goondan_runtime::calls::approval::{Approvals, Decision, Policy, approver_fn};
    /// let approvals = Approvals::new(approver_fn(|_| async { Decision::Approve }))
    ///     .policy("file-system__read*", Policy::Allow)
    ///     .policy("bash__*", Policy::Ask)
    ///     .default_policy(Policy::AskWhenDestructive);
    /// assert_eq!(approvals.policy_for("bash__exec"), Policy::Ask);
    /// assert_eq!(approvals.policy_for("file-system__readFile"), Policy::Allow);
    /// assert_eq!(approvals.policy_for("http-fetch__get"), Policy::AskWhenDestructive);
    /// ```
    #[must_use]
    pub fn policy(mut self, pattern: &str, policy: Policy) -> Self {
        self.rules.push((pattern.to_owned(), policy));
        self
    }

    /// The policy that applies to `tool_name`.
    pub fn policy_for(&self, tool_name: &str) -> Policy {
        self.rules
            .iter()
            .find(|(pattern, _)| glob_matches(pattern, tool_name))
            .map_or(self.default, |(_, policy)| *policy)
    }

    async fn handle_call(&self, mut call: CallContext, next: Next) -> ToolCallResult {
        let policy = self.policy_for(call.tool_name());
        if policy == Policy::Deny {
            let reason = format!("the approval policy denies `{}`", call.tool_name());
            return denied(&call, &reason, "policy");
        }
        let escalation = call.args.get(ESCALATION_ARG).filter(|v| !v.is_null());
        if let Some(escalation) = escalation {
            let reason = escalation.get("reason").and_then(|r| r.as_str());
            let fits = reason.is_some_and(|r| {
                !r.trim().is_empty() && r.chars().nth(ESCALATION_REASON_MAX).is_none()
            });
            if !fits {
                let err = ToolError::new(format!(
                    "`{ESCALATION_ARG}` needs a `reason` of 1 to {ESCALATION_REASON_MAX} characters"
                ))
                .with_code(crate::tools::error::codes::INVALID_ARGS)
                .with_suggestion("say in a sentence or two why the call needs it");
                return ToolCallResult::error(call.tool_call_id(), call.tool_name(), err);
            }
        }
        let why = if escalation.is_some() {
            ESCALATION_WHY
        } else {
            match policy.reason_to_ask(call.annotations()) {
                Some(why) => why,
                None => return next.run(call).await,
            }
        };
        let request = ApprovalRequest {
            tool_name: call.tool_name().to_owned(),
            tool_call_id: call.tool_call_id().to_owned(),
            args: call.args.clone(),
            annotations: call.annotations().clone(),
            why,
            ctx: call.context().clone(),
        };
        let cancellation = call.context().cancellation().clone();
        let decision = tokio::select! {
            decision = self.approver.decide(&request) => decision,
            () = cancellation.cancelled() => {
                let err = ToolError::new("the call was cancelled while waiting for approval")
                    .with_code(crate::tools::error::codes::CANCELLED);
                return ToolCallResult::error(call.tool_call_id(), call.tool_name(), err);
            }
        };
        let edited = match decision {
            Decision::Approve => false,
            Decision::ApproveWith(args) => {
                call.args = args;
                true
            }
            Decision::Deny { reason } => return denied(&call, &reason, "approver"),
        };
        tracing::info!(
            name: "approval.approved",
            target: "goondan::approval",
            trace_id = call.context().trace_id(),
            tool = call.tool_name(),
            tool_call_id = call.tool_call_id(),
            edited,
            "approval.approved"
        );
        call.context_mut().mark_approved();
        next.run(call).await
    }
}

impl Middleware for Approvals {
    fn handle(self: Arc<Self>, call: CallContext, next: Next) -> MiddlewareFuture {
        Box::pin(async move { self.handle_call(call, next).await })
    }
}

/// The result of a call `by` (the policy or the approver) denied, and the `approval.denied`
/// event saying so.
fn denied(call: &CallContext, reason: &str, by: &'static str) -> ToolCallResult {
    tracing::info!(
        name: "approval.denied",
        target: "goondan::approval",
        trace_id = call.context().trace_id(),
        tool = call.tool_name(),
        tool_call_id = call.tool_call_id(),
        by,
        reason,
        "approval.denied"
    );
    let reason = if reason.trim().is_empty() {
        "the call was not approved; do not retry it unchanged"
    } else {
        reason
    };
    let err = ToolError::new(format!("`{}` was not approved", call.tool_name()))
        .with_code(DENIED)
        .with_name("ToolDenied")
        .with_suggestion(reason);
    ToolCallResult::error(call.tool_call_id(), call.tool_name(), err)
}

#[cfg(test)]
mod tests {
    use super::glob_matches as matches;

    #[test]
    fn patterns_match_whole_names_and_stars() {
        assert!(matches("bash__exec", "bash__exec"));
        assert!(!matches("bash__exec", "bash__execute"));
        assert!(matches("bash__*", "bash__exec"));
        assert!(!matches("bash__*", "bash"));
        assert!(matches("*__write", "file-system__write"));
        assert!(!matches("*__write", "file-system__writeFile"));
        assert!(matches("*", "anything__at_all"));
        assert!(matches("f*__*e", "file-system__write"));
        assert!(!matches("a*a", "a"));
        assert!(matches("a*a", "aa"));
    }
}
