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

use std::any::{Any, TypeId};
use std::sync::Arc;

use serde_json::Value;

use crate::calls::middleware::{CallContext, Middleware, MiddlewareList, Stage};
use crate::tools::handler::Handler;
use crate::tools::registry::{RegistryError, ToolRegistry};
use crate::tools::tool::ToolSource;

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

/// A middleware for one of the pipelines: `toolCall` ([`PipelineMiddleware::tool_call`]),
/// `step` and `turn` (`PipelineMiddleware::step`, `PipelineMiddleware::turn`, defined beside
/// the step loop, which runs extensions), or any [`Stage`] ([`PipelineMiddleware::of`]).
pub struct PipelineMiddleware {
    stage: &'static str,
    /// An `Arc<dyn Middleware<C>>` for the stage `C` that `push` was made for.
    item: Box<dyn Any + Send + Sync>,
    push: fn(&mut PipelineApi, Box<dyn Any + Send + Sync>, i32),
}

impl PipelineMiddleware {
    /// A middleware of stage `C`.
    pub fn of<C: Stage>(mw: impl Middleware<C>) -> Self {
        Self::from_arc::<C>(Arc::new(mw))
    }

    /// A shared middleware of stage `C`.
    pub fn from_arc<C: Stage>(mw: Arc<dyn Middleware<C>>) -> Self {
        Self {
            stage: C::NAME,
            item: Box::new(mw),
            push: push_into::<C>,
        }
    }

    /// A `toolCall` middleware.
    pub fn tool_call(mw: impl Middleware) -> Self {
        Self::of::<CallContext>(mw)
    }

    /// The stage's name: `toolCall`, `step`, `turn`.
    pub fn stage(&self) -> &'static str {
        self.stage
    }
}

fn push_into<C: Stage>(api: &mut PipelineApi, item: Box<dyn Any + Send + Sync>, priority: i32) {
    // `item` was made by `from_arc::<C>`, the only maker of a `push_into::<C>`.
    if let Ok(mw) = item.downcast::<Arc<dyn Middleware<C>>>() {
        api.list_mut::<C>().push(priority, *mw);
    }
}

impl std::fmt::Debug for PipelineMiddleware {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("PipelineMiddleware")
            .field(&self.stage)
            .finish()
    }
}

/// `api.pipeline`: middleware with a priority. Lower priorities are outermost; at equal
/// priority the first registered is the outermost (MW-3), across all extensions.
#[derive(Default)]
pub struct PipelineApi {
    /// One `MiddlewareList<C>` per stage that has any.
    lists: Vec<StageList>,
}

/// The middlewares of one stage, its type erased (the step loop's stages are defined above
/// this module).
struct StageList {
    stage: TypeId,
    name: &'static str,
    /// A `MiddlewareList<C>` for the `C` whose `TypeId` is `stage`.
    list: Box<dyn Any + Send + Sync>,
    len: fn(&(dyn Any + Send + Sync)) -> usize,
}

fn len_of<C: Stage>(list: &(dyn Any + Send + Sync)) -> usize {
    list.downcast_ref::<MiddlewareList<C>>()
        .map_or(0, MiddlewareList::len)
}

impl PipelineApi {
    /// Registers `middleware` with `priority`.
    pub fn register(&mut self, middleware: PipelineMiddleware, priority: i32) {
        (middleware.push)(self, middleware.item, priority);
    }

    fn list_mut<C: Stage>(&mut self) -> &mut MiddlewareList<C> {
        let found = self.lists.iter().position(|l| l.stage == TypeId::of::<C>());
        let at = found.unwrap_or_else(|| {
            self.lists.push(StageList {
                stage: TypeId::of::<C>(),
                name: C::NAME,
                list: Box::new(MiddlewareList::<C>::default()),
                len: len_of::<C>,
            });
            self.lists.len() - 1
        });
        match self.lists[at].list.downcast_mut::<MiddlewareList<C>>() {
            Some(list) => list,
            // Unreachable: the entry of `TypeId::of::<C>()` holds a `MiddlewareList<C>`.
            None => unreachable!("the pipeline list of `{}` has another type", C::NAME),
        }
    }

    /// Takes the middlewares of stage `C`, in chain order.
    pub(crate) fn take<C: Stage>(&mut self) -> MiddlewareList<C> {
        std::mem::take(self.list_mut::<C>())
    }
}

impl std::fmt::Debug for PipelineApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut map = f.debug_map();
        for l in &self.lists {
            map.entry(&l.name, &(l.len)(l.list.as_ref()));
        }
        map.finish()
    }
}
