//! [`StepCalls`]: the route of the calls a call makes within its Step. The step loop gives it
//! to the calls of a Step that offers code mode (the code tool): each call the program makes
//! is a tool call of the Step through the Step's executor, checked against the catalog it
//! carries, under the code call.

use std::future::Future;
use std::pin::Pin;

use super::ToolContext;
use crate::tools::catalog::ToolCatalog;
use crate::tools::result::{ToolCall, ToolCallResult};

/// What a call made within a Step answers.
pub(crate) type CallFuture = Pin<Box<dyn Future<Output = ToolCallResult> + Send + 'static>>;

/// The calls a call may make within its Step.
pub(crate) trait StepCalls: Send + Sync + 'static {
    /// The catalog those calls are checked against (the allow-list).
    fn catalog(&self) -> &ToolCatalog;

    /// Runs `call` as a call of the Step, inside the call whose context is `parent`.
    fn call(&self, call: ToolCall, parent: &ToolContext) -> CallFuture;
}
