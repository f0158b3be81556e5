//! Guardrails: checks of a call's arguments before anything else sees them (approvals
//! included), and of its result before the model does. A tripped guardrail is an error the
//! model reads, `E_TOOL_GUARDRAIL`, naming the guardrail and its reason.
//!
//! A [`Guardrail`] checks the input ([`Guardrail::check_input`]: the arguments as the model
//! sent them), the output ([`Guardrail::check_output`]: the result, which it may change, as
//! [`SecretScanner`] does when it redacts), or both. [`Guardrails`] runs them as one `toolCall`
//! middleware, which belongs outermost ([`PRIORITY`]):
//!
//! 1. the input guardrails, in the order added; the first that trips ends the call, and no
//!    approval is asked for a call a guardrail refused;
//! 2. the rest of the chain: approvals, other middleware, the handler (arguments an approver
//!    edits are a person's choice and are not checked again);
//! 3. the output guardrails, in the order added, on every result, failed ones too; one that
//!    trips replaces the result (the call did run: its result is withheld). The completion of
//!    a submitted call (`pending`) goes through them too when it arrives, when the guardrails
//!    were given to the executor with `ExecutorBuilder::guardrails` (an agent instance does).
//!
//! Each check has its own time limit ([`Guardrail::timeout`], [`DEFAULT_TIMEOUT`]); a check
//! that panics or runs past it trips, so a broken guardrail never lets a call through and never
//! blocks one. Every trip is a tracing event `guardrail.tripped` on target `goondan::guardrail`.
//!
//! The two guardrails the runtime ships, also set from a bundle's `policy.guardrails`
//! (`secrets: true`, `allow: {paths, urls, pathArguments}`; see the guide's bundle chapter):
//! - [`SecretScanner`], for outputs: redacts keys and tokens of common shapes;
//! - [`AllowList`], for inputs: the paths and URLs a call may name (feature `allow-list`, which
//!   `host` and so the default features turn on).
//!
//! ```
//! use goondan_runtime::calls::guardrail::{AllowList, Guardrails, PRIORITY, SecretScanner};
//! use goondan_runtime::prelude::*;
//! use goondan_runtime::testing::TestKit;
//!
//! /// Web.
//! #[tool(name = "web")]
//! pub mod web {
//!     use super::*;
//!     /// Fetch a page.
//!     #[export]
//!     pub async fn get(url: String) -> Result<String, ToolError> {
//!         Ok(format!("page of {url}; token ghp_{}", "a".repeat(36)))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let guardrails = Guardrails::new()
//!     .with(AllowList::new().url("https://docs.rs/")?)
//!     .with(SecretScanner::new());
//! let kit = TestKit::builder().tool(web::TOOL).middleware(PRIORITY, guardrails).build()?;
//!
//! let refused = kit.call("web__get", serde_json::json!({"url": "https://example.com/"})).await;
//! assert_eq!(refused.error_code(), Some("E_TOOL_GUARDRAIL"));
//!
//! let fetched = kit.call("web__get", serde_json::json!({"url": "https://docs.rs/tokio"})).await;
//! assert_eq!(
//!     fetched.output,
//!     Some(serde_json::json!("page of https://docs.rs/tokio; token [REDACTED github-token]"))
//! );
//! # Ok(())
//! # }
//! ```

#[cfg(feature = "allow-list")]
mod allow_list;
#[cfg(feature = "host")]
mod policy;
mod secrets;

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;

use crate::calls::middleware::{CallContext, Middleware, MiddlewareFuture, Next};
use crate::calls::refusal::panic_text;
use crate::tools::context::ToolContext;
use crate::tools::error::ToolError;
use crate::tools::result::ToolCallResult;

#[cfg(feature = "allow-list")]
pub use self::allow_list::{AllowList, AllowListError, DEFAULT_PATH_ARGUMENTS};
pub use self::secrets::{SecretPatternError, SecretScanner};

/// The code of a call a guardrail stopped.
pub const GUARDRAIL: &str = "E_TOOL_GUARDRAIL";

/// Where [`Guardrails`] belongs in the `toolCall` chain: outermost, before approvals.
pub const PRIORITY: i32 = i32::MIN;

/// How long one check may take when its guardrail sets no limit.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// What a check decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Let the call (or its result) through.
    Pass,
    /// Stop it; the model reads the reason.
    Trip(String),
}

/// The future of a check.
pub type CheckFuture<'a> = Pin<Box<dyn Future<Output = Verdict> + Send + 'a>>;

/// A check of calls' arguments, results, or both. Both checks pass unless overridden.
///
/// ```
/// use goondan_runtime::calls::guardrail::{CheckFuture, Guardrail, Verdict};
/// use goondan_runtime::CallContext;
///
/// /// No call may ask for more than 100 items.
/// struct AtMost100;
///
/// impl Guardrail for AtMost100 {
///     fn name(&self) -> &str {
///         "at-most-100"
///     }
///     fn check_input<'a>(&'a self, call: &'a CallContext) -> CheckFuture<'a> {
///         let asked = call.args.get("limit").and_then(|v| v.as_u64()).unwrap_or(0);
///         Box::pin(async move {
///             if asked > 100 {
///                 Verdict::Trip(format!("{asked} items asked; at most 100"))
///             } else {
///                 Verdict::Pass
///             }
///         })
///     }
/// }
/// ```
pub trait Guardrail: Send + Sync + 'static {
    /// The name the model and the logs see.
    fn name(&self) -> &str;

    /// Checks a call's arguments before approvals and the handler.
    fn check_input<'a>(&'a self, call: &'a CallContext) -> CheckFuture<'a> {
        let _ = call;
        Box::pin(std::future::ready(Verdict::Pass))
    }

    /// Whether [`check_input`](Self::check_input) checks anything (when not, it is not called).
    fn checks_input(&self) -> bool {
        true
    }

    /// Checks (and may change) a call's result before the model sees it.
    fn check_output<'a>(
        &'a self,
        result: &'a mut ToolCallResult,
        ctx: &'a ToolContext,
    ) -> CheckFuture<'a> {
        let _ = (result, ctx);
        Box::pin(std::future::ready(Verdict::Pass))
    }

    /// Whether [`check_output`](Self::check_output) checks anything.
    fn checks_output(&self) -> bool {
        true
    }

    /// How long one check may take; past it, the check trips.
    fn timeout(&self) -> Duration {
        DEFAULT_TIMEOUT
    }
}

/// The `toolCall` middleware that runs guardrails (see the [module](self)). Give it to an
/// executor with `ExecutorBuilder::guardrails` (at [`PRIORITY`], and for the completions of
/// submitted calls too); `AgentInstanceBuilder::guardrail` does.
#[derive(Clone, Default)]
pub struct Guardrails {
    input: Vec<Arc<dyn Guardrail>>,
    output: Vec<Arc<dyn Guardrail>>,
}

impl fmt::Debug for Guardrails {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |list: &[Arc<dyn Guardrail>]| -> Vec<String> {
            list.iter().map(|g| g.name().to_owned()).collect()
        };
        f.debug_struct("Guardrails")
            .field("input", &names(&self.input))
            .field("output", &names(&self.output))
            .finish()
    }
}

impl Guardrails {
    /// No guardrail.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `guardrail`, after those already added.
    #[must_use]
    pub fn with(self, guardrail: impl Guardrail) -> Self {
        self.with_arc(Arc::new(guardrail))
    }

    /// Adds a shared guardrail.
    #[must_use]
    pub fn with_arc(mut self, guardrail: Arc<dyn Guardrail>) -> Self {
        if guardrail.checks_input() {
            self.input.push(Arc::clone(&guardrail));
        }
        if guardrail.checks_output() {
            self.output.push(guardrail);
        }
        self
    }

    /// Adds every guardrail of `other`, after these.
    #[must_use]
    pub fn extend(mut self, other: Guardrails) -> Self {
        self.input.extend(other.input);
        self.output.extend(other.output);
        self
    }

    /// Whether there is no check to run.
    pub fn is_empty(&self) -> bool {
        self.input.is_empty() && self.output.is_empty()
    }

    async fn handle_call(&self, call: CallContext, next: Next) -> ToolCallResult {
        for guardrail in &self.input {
            let verdict = run_check(&**guardrail, || guardrail.check_input(&call)).await;
            if let Verdict::Trip(reason) = verdict {
                let (ctx, id) = (call.context(), call.tool_call_id());
                return tripped(ctx, id, call.tool_name(), guardrail.name(), &reason, false);
            }
        }
        if self.output.is_empty() {
            return next.run(call).await;
        }
        let ctx = call.context().clone();
        let result = next.run(call).await;
        self.check_outputs(result, &ctx).await
    }

    /// Whether there are output checks (a submitted call's completion then goes through
    /// [`check_outputs`](Self::check_outputs) too).
    pub(crate) fn checks_outputs(&self) -> bool {
        !self.output.is_empty()
    }

    /// The output checks, in order, on `result`: the result as they left it, or the error of
    /// the first that tripped. The one route for a call's result and for the completion of a
    /// submitted call.
    pub(crate) async fn check_outputs(
        &self,
        mut result: ToolCallResult,
        ctx: &ToolContext,
    ) -> ToolCallResult {
        for guardrail in &self.output {
            let verdict =
                run_check(&**guardrail, || guardrail.check_output(&mut result, ctx)).await;
            if let Verdict::Trip(reason) = verdict {
                let (id, tool) = (&result.tool_call_id, &result.tool_name);
                return tripped(ctx, id, tool, guardrail.name(), &reason, true);
            }
        }
        result
    }
}

impl Middleware for Guardrails {
    fn handle(self: Arc<Self>, call: CallContext, next: Next) -> MiddlewareFuture {
        Box::pin(async move { self.handle_call(call, next).await })
    }
}

/// Runs one check under its guardrail's time limit, its panic caught: either trips.
async fn run_check<'a>(
    guardrail: &dyn Guardrail,
    start: impl FnOnce() -> CheckFuture<'a>,
) -> Verdict {
    let limit = guardrail.timeout();
    let started = match std::panic::catch_unwind(AssertUnwindSafe(start)) {
        Ok(check) => check,
        Err(panic) => return panicked(&*panic),
    };
    match tokio::time::timeout(limit, AssertUnwindSafe(started).catch_unwind()).await {
        Ok(Ok(verdict)) => verdict,
        Ok(Err(panic)) => panicked(&*panic),
        Err(_) => Verdict::Trip(format!(
            "the guardrail did not decide within {}",
            humanize(limit)
        )),
    }
}

fn panicked(payload: &(dyn Any + Send)) -> Verdict {
    let what = panic_text(payload, "a panic without a message");
    Verdict::Trip(format!("the guardrail failed: {what}"))
}

fn humanize(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// The result of call `id` to `tool` that guardrail `name` stopped (`ran`: on its output), and
/// the `guardrail.tripped` event saying so.
fn tripped(
    ctx: &ToolContext,
    id: &str,
    tool: &str,
    name: &str,
    reason: &str,
    ran: bool,
) -> ToolCallResult {
    tracing::warn!(
        name: "guardrail.tripped",
        target: "goondan::guardrail",
        trace_id = ctx.trace_id(),
        tool,
        tool_call_id = ctx.tool_call_id(),
        guardrail = name,
        on = if ran { "output" } else { "input" },
        reason,
        "guardrail.tripped"
    );
    let (message, suggestion) = if ran {
        (
            format!("the guardrail `{name}` withheld the result of `{tool}`: {reason}"),
            "the call ran, but its result cannot be shown; do not call it again unchanged",
        )
    } else {
        (
            format!("the guardrail `{name}` stopped `{tool}`: {reason}"),
            "change the arguments so the guardrail allows them, or use another tool",
        )
    };
    let err = ToolError::new(message)
        .with_code(GUARDRAIL)
        .with_name("ToolGuardrailError")
        .with_suggestion(suggestion);
    ToolCallResult::error(id, tool, err)
}
