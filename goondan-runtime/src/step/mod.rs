//! The step loop: an [`AgentInstance`] runs Turns; each Turn runs Steps; each Step builds its
//! catalog, asks a [`Model`], runs the calls and appends the results to the conversation.
//!
//! - [`Model`] is the door to a language model; [`ScriptedModel`] answers from a list, for
//!   tests and examples.
//! - [`StepMiddleware`] wraps a Step and may edit its catalog (CAT-3); [`TurnMiddleware`] wraps
//!   a Turn. Extensions register both ([`crate::extension`]).

mod caller;
mod durable;
mod instance;
pub mod journal;
mod model;
mod pipeline;
#[cfg(feature = "code-mode")]
mod resumed;
mod submissions;
mod tool_message;

use std::path::PathBuf;

pub use self::instance::{AgentInstance, AgentInstanceBuilder, DEFAULT_MAX_STEPS_PER_TURN};
pub use self::model::{
    DeltaSink, Model, ModelDelta, ModelError, ModelFactory, ModelFuture, ModelRequest,
    ModelResponse, ScriptedModel, TokenUsage,
};
pub use self::pipeline::{
    ANSWERED_BY, StepContext, StepFuture, StepMiddleware, StepNext, StepResult, TurnContext,
    TurnEnd, TurnMiddleware, TurnNext, TurnOutcome, step_fn, turn_fn,
};
pub use self::tool_message::tool_message;

/// Why a Turn could not run. Tool failures are not here: they are results the model sees.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// The Agent declares tools the registry does not have.
    #[error(transparent)]
    Catalog(#[from] crate::tools::catalog::CatalogError),
    /// The Agent's toolsets do not make a catalog (a clash, an invalid name, an empty set).
    #[error(transparent)]
    Toolset(#[from] crate::tools::toolset::ToolsetError),
    /// The model gave no answer.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// An extension failed to register.
    #[error(transparent)]
    Extension(#[from] crate::extension::ExtensionError),
    /// The workdir cannot be created.
    #[error("cannot create the workdir `{}`: {source}", path.display())]
    Workdir {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The run journal could not be read or written: the Turn stops rather than act on what
    /// is not written.
    #[error(transparent)]
    Journal(#[from] journal::JournalError),
    /// A Turn a crash left unfinished must be resumed first
    /// ([`AgentInstance::resume`]).
    #[error("turn `{turn_id}` was left unfinished by a crash; resume it before starting another")]
    Unfinished {
        /// The unfinished Turn.
        turn_id: String,
    },
    /// A tool failed more often in the Turn than its retry budget allows
    /// ([`AgentInstanceBuilder::retry_budget`]): the Turn stops rather than loop on it.
    #[error(
        "`{tool}` failed {failures} times in this turn, more than its retry budget allows; the turn stopped. Its last error: {error}"
    )]
    RetryBudget {
        /// The tool (`resource__export`).
        tool: String,
        /// How many of its failures the Turn saw.
        failures: u32,
        /// Its last error.
        error: crate::tools::error::ToolError,
    },
    /// A middleware stopped the Step or Turn.
    #[error("{message}")]
    Stopped {
        /// Why.
        message: String,
    },
}

/// Public types that cross tasks are `Send + Sync`; this fails to compile otherwise.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<AgentInstance>();
    assert_send_sync::<ScriptedModel>();
    assert_send_sync::<StepContext>();
    assert_send_sync::<StepResult>();
    assert_send_sync::<TurnOutcome>();
    assert_send_sync::<StepError>();
    assert_send_sync::<crate::bundle::Bundle>();
    assert_send_sync::<crate::bundle::ToolLibrary>();
    assert_send_sync::<crate::extension::ToolsApi>();
};
