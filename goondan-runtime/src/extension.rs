//! Extensions: code registered with an agent instance that adds tools at run time
//! (`api.tools.register`, CAT-4) and middleware around tool calls, Steps and Turns
//! (`api.pipeline.register`, MW-3).
//!
//! ```
//! use goondan_runtime::extension::{Extension, ExtensionApi, ExtensionError, PipelineMiddleware, ToolItem};
//! use goondan_runtime::{ToolError, from_fn, handler_fn};
//!
//! struct Clock;
//! impl Extension for Clock {
//!     fn name(&self) -> &str { "clock" }
//!     fn register(&self, api: &mut ExtensionApi) -> Result<(), ExtensionError> {
//!         let item = ToolItem::new("clock__now", serde_json::json!({"type": "object", "properties": {}}));
//!         api.tools.register(item, handler_fn(|_ctx, _args| async { Ok::<_, ToolError>(42) }))?;
//!         api.pipeline.register(PipelineMiddleware::tool_call(from_fn(|call, next| next.run(call))), 0);
//!         Ok(())
//!     }
//! }
//! # drop(Clock);
//! ```

use std::sync::Arc;

use serde_json::Value;

use crate::handler::Handler;
use crate::middleware::Middleware;
use crate::registry::{RegistryError, ToolRegistry};
use crate::step::{StepMiddleware, TurnMiddleware};
use crate::tool::ToolSource;

/// Code that extends an agent instance. `register` runs once, when the instance is built.
pub trait Extension: Send + Sync + 'static {
    /// The extension's name (the `source.name` of the tools it registers).
    fn name(&self) -> &str;

    /// Registers tools and middleware.
    fn register(&self, api: &mut ExtensionApi) -> Result<(), ExtensionError>;
}

/// Why an extension could not register.
#[derive(Debug, thiserror::Error)]
pub enum ExtensionError {
    /// A tool could not be registered.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The extension refused to start.
    #[error("extension `{extension}` failed to register: {message}")]
    Failed {
        /// The extension.
        extension: String,
        /// Why.
        message: String,
    },
}

/// What an extension gets: `tools` to register tools, `pipeline` to register middleware.
#[derive(Debug)]
pub struct ExtensionApi {
    /// Tool registration (CAT-4); may be cloned and kept to register later.
    pub tools: ToolsApi,
    /// Middleware registration (MW-3).
    pub pipeline: PipelineApi,
}

impl ExtensionApi {
    pub(crate) fn new(registry: Arc<ToolRegistry>) -> Self {
        Self {
            tools: ToolsApi {
                registry,
                extension: String::new(),
            },
            pipeline: PipelineApi::default(),
        }
    }

    pub(crate) fn for_extension(&mut self, name: &str) {
        self.tools.extension = name.to_owned();
    }
}

/// The description of a tool registered at run time: the seeds' `ToolCatalogItem`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolItem {
    /// The full `{resource}__{export}` name.
    pub name: String,
    /// What the model reads.
    pub description: Option<String>,
    /// The parameter schema (`type: object`).
    pub parameters: Value,
}

impl ToolItem {
    /// An item with a name and parameters.
    pub fn new(name: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: None,
            parameters,
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// `api.tools`: registers tools into the instance's registry. A tool registered while a Step
/// runs shows up from the next Step's catalog on (CAT-5).
#[derive(Debug, Clone)]
pub struct ToolsApi {
    registry: Arc<ToolRegistry>,
    extension: String,
}

impl ToolsApi {
    /// `api.tools.register(item, handler)` (CAT-4). Never replaces a tool (REG-3).
    pub fn register(&self, item: ToolItem, handler: impl Handler) -> Result<(), RegistryError> {
        self.registry.register_item(
            &item.name,
            item.description,
            item.parameters,
            handler,
            ToolSource::extension(self.extension.clone()),
        )
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.registry
    }
}

/// A middleware for one of the three pipelines.
#[derive(Clone)]
pub enum PipelineMiddleware {
    /// Around each tool call (MW-1).
    ToolCall(Arc<dyn Middleware>),
    /// Around each Step; may edit the catalog (CAT-3).
    Step(Arc<dyn StepMiddleware>),
    /// Around each Turn.
    Turn(Arc<dyn TurnMiddleware>),
}

impl PipelineMiddleware {
    /// A `toolCall` middleware.
    pub fn tool_call(mw: impl Middleware) -> Self {
        Self::ToolCall(Arc::new(mw))
    }

    /// A `step` middleware.
    pub fn step(mw: impl StepMiddleware) -> Self {
        Self::Step(Arc::new(mw))
    }

    /// A `turn` middleware.
    pub fn turn(mw: impl TurnMiddleware) -> Self {
        Self::Turn(Arc::new(mw))
    }
}

impl std::fmt::Debug for PipelineMiddleware {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::ToolCall(_) => "ToolCall",
            Self::Step(_) => "Step",
            Self::Turn(_) => "Turn",
        })
    }
}

/// `api.pipeline`: middleware with a priority. Lower priorities are outermost; at equal
/// priority the first registered is the outermost (MW-3), across all extensions.
#[derive(Default)]
pub struct PipelineApi {
    pub(crate) tool_call: Vec<(i32, Arc<dyn Middleware>)>,
    pub(crate) step: Vec<(i32, Arc<dyn StepMiddleware>)>,
    pub(crate) turn: Vec<(i32, Arc<dyn TurnMiddleware>)>,
}

impl PipelineApi {
    /// Registers `middleware` with `priority`.
    pub fn register(&mut self, middleware: PipelineMiddleware, priority: i32) {
        match middleware {
            PipelineMiddleware::ToolCall(m) => self.tool_call.push((priority, m)),
            PipelineMiddleware::Step(m) => self.step.push((priority, m)),
            PipelineMiddleware::Turn(m) => self.turn.push((priority, m)),
        }
    }
}

impl std::fmt::Debug for PipelineApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipelineApi")
            .field("tool_call", &self.tool_call.len())
            .field("step", &self.step.len())
            .field("turn", &self.turn.len())
            .finish()
    }
}
