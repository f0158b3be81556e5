//! [`StepCalls`]: the route of the calls a call makes within its Step. The step loop gives it
//! to the calls of a Step that offers code mode (the code tool): each call the program makes
//! is a tool call of the Step through the Step's executor, checked against the catalog it
//! carries, under the code call; or, for a program run again after a crash, the answer the
//! run journal has for it.

use std::future::Future;
use std::pin::Pin;

use super::ToolContext;
use crate::tools::catalog::ToolCatalog;
use crate::tools::error::ToolError;
use crate::tools::result::{ToolCall, ToolCallResult};

/// What a call made within a Step answers: its result, or an error that stops the program
/// (the code call's answer).
pub(crate) type CallFuture =
    Pin<Box<dyn Future<Output = Result<ToolCallResult, ToolError>> + Send + 'static>>;

/// The calls a call may make within its Step.
pub(crate) trait StepCalls: Send + Sync + 'static {
    /// The catalog those calls are checked against (the allow-list).
    fn catalog(&self) -> &ToolCatalog;

    /// Runs `call`, the `index`th (from 1) that the call whose context is `parent` makes, as
    /// a call of the Step inside it; or answers it from the run journal, when `parent` was
    /// resumed after a crash. An error when the journal has another call at that place: the
    /// caller stops, and answers with the error.
    fn call(&self, call: ToolCall, index: usize, parent: &ToolContext) -> CallFuture;

    /// The call whose context is `parent` made its last call, its `made`th. An error when the
    /// run journal has more calls of it than that.
    fn ended(&self, parent: &ToolContext, made: usize) -> Result<(), ToolError>;
}
