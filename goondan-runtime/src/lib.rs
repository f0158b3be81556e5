//! # goondan-runtime
//!
//! Write LLM tools as typed Rust functions; run them under the Goondan Tool rules.
//!
//! - [`#[tool]`](macro@tool) turns a module, an `impl` block or a function into a Tool
//!   resource: an export per function, a JSON Schema per export, a handler per export.
//! - [`ToolRegistry`] holds every tool the agent can execute; [`ToolCatalog`] is what one Step
//!   shows the model, and the allow-list of calls.
//! - [`ToolExecutor::execute`] runs a model's [`ToolCall`] and always answers with a
//!   [`ToolCallResult`]: failures are data (`status: "error"`), never a panic or an `Err`.
//!
//! The modules, by layer: [`tools`] (what a tool is, what it gets and what it answers),
//! [`calls`] (running calls: the executor, middleware, approvals, pending results), then the
//! agent's side with the `host` feature and others (`extension`, `bundle`, `dialect`, `step`,
//! `provider`, `mcp`, `agents`), and [`testing`]. A module imports only from the layers below.
//!
//! New here? The [`guide`] walks through it all, one short page per chapter, every example run
//! by `cargo test --doc`.
//!
//! ```
//! use goondan_runtime::prelude::*;
//! use goondan_runtime::testing::TestKit;
//!
//! /// Text utilities.
//! #[tool(name = "text-utils")]
//! pub mod text_utils {
//!     use super::*;
//!
//!     /// Convert text to uppercase.
//!     pub async fn uppercase(
//!         /// The text to convert.
//!         text: String,
//!     ) -> Result<String, ToolError> {
//!         Ok(text.to_uppercase())
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let kit = TestKit::with_tools([text_utils::TOOL])?;
//! let result = kit.call("text-utils__uppercase", serde_json::json!({"text": "hi"})).await;
//! assert_eq!(result.output, Some(serde_json::json!("HI")));
//!
//! let refused = kit.call("text-utils__uppercase", serde_json::json!({"text": 5})).await;
//! assert_eq!(refused.error_code(), Some("E_TOOL_INVALID_ARGS"));
//! # Ok(())
//! # }
//! ```

#[cfg(all(feature = "host", unix))]
pub mod agents;
#[cfg(feature = "host")]
pub mod bundle;
pub mod calls;
#[cfg(feature = "code-mode")]
pub mod code;
#[cfg(feature = "host")]
pub mod dialect;
#[cfg(feature = "host")]
pub mod extension;
pub mod guide;
#[cfg(feature = "nats")]
mod kv;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "host")]
pub mod provider;
#[cfg(feature = "host")]
pub mod step;
pub mod telemetry;
pub mod testing;
#[cfg(any(feature = "mcp", feature = "providers", feature = "nats"))]
pub mod tls;
pub mod tools;

/// The value behind `m`, even when a thread panicked holding it: a panicking tool leaves the
/// state it touched (the step loop's, an MCP server's, a store's) usable.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub use goondan_macros::export;
/// `#[tool]`: typed Rust functions become a Goondan Tool, with a JSON Schema and a handler per
/// export.
///
/// # Example
///
/// ```
/// use goondan_runtime::prelude::*;
///
/// /// Text utilities.
/// #[tool(name = "text-utils")]
/// pub mod text_utils {
///     use super::*;
///
///     /// Convert text to uppercase.
///     pub async fn uppercase(
///         ctx: &ToolContext,
///         /// The text to convert.
///         text: String,
///     ) -> Result<String, ToolError> {
///         let _ = ctx.agent_name();
///         Ok(text.to_uppercase())
///     }
///
///     /// Count the words of a text.
///     #[export(name = "count-words", timeout_ms = 1000)]
///     pub fn count_words(input: CountInput) -> usize {
///         input.text.split_whitespace().count()
///     }
/// }
///
/// /// What `count-words` reads.
/// #[tool_input]
/// pub struct CountInput {
///     /// The text whose words to count.
///     pub text: String,
/// }
///
/// # fn main() -> Result<(), goondan_runtime::tools::tool::ToolDefinitionError> {
/// let tool = text_utils::TOOL.build()?;
/// let names: Vec<String> = tool.tool_names().map(|n| n.to_string()).collect();
/// assert_eq!(names, ["text-utils__uppercase", "text-utils__count-words"]);
/// assert_eq!(tool.description(), Some("Text utilities."));
/// // The functions stay plain functions.
/// assert_eq!(text_utils::count_words(CountInput { text: "a b".into() }), 2);
/// # Ok(())
/// # }
/// ```
///
/// # Reference
///
pub use goondan_macros::tool;
/// `#[tool_input]`: a tool's struct input, its serde and schemars derives through the runtime.
///
/// # Example
///
/// ```
/// use goondan_runtime::prelude::*;
///
/// /// What `count-words` reads.
/// #[tool_input]
/// pub struct CountInput {
///     /// The text whose words to count.
///     pub text: String,
///     /// Count only words at least this long.
///     #[serde(default)]
///     pub min_len: usize,
/// }
///
/// /// Counts words.
/// #[tool(name = "words")]
/// pub fn count(input: CountInput) -> usize {
///     input.text.split_whitespace().filter(|w| w.len() >= input.min_len).count()
/// }
///
/// # fn main() -> Result<(), goondan_runtime::tools::tool::ToolDefinitionError> {
/// let tool = count::TOOL.build()?;
/// let names: Vec<String> = tool.tool_names().map(|n| n.to_string()).collect();
/// assert_eq!(names, ["words__count"]);
/// # Ok(())
/// # }
/// ```
///
/// # Reference
///
pub use goondan_macros::tool_input;

#[cfg(feature = "host")]
pub use crate::bundle::{Bundle, ToolLibrary};
pub use crate::calls::executor::{CallPolicy, ToolExecutor};
pub use crate::calls::middleware::{CallContext, Middleware, Next, from_fn};
pub use crate::calls::pending::PendingResults;
#[cfg(feature = "host")]
pub use crate::dialect::Dialect;
#[cfg(feature = "host")]
pub use crate::extension::{Extension, ExtensionApi};
#[cfg(feature = "host")]
pub use crate::step::{AgentInstance, Model};
pub use crate::tools::agent::AgentRuntime;
pub use crate::tools::catalog::{CatalogItem, ToolCatalog};
pub use crate::tools::context::{Message, ToolContext};
pub use crate::tools::error::ToolError;
pub use crate::tools::handler::{Handler, Outcome, Pending, handler_fn};
pub use crate::tools::name::ToolName;
pub use crate::tools::registry::ToolRegistry;
pub use crate::tools::result::{ToolCall, ToolCallResult, ToolStatus};
pub use crate::tools::tool::{Export, IntoTool, StaticTool, Tool, ToolSource};

/// What a tool author needs in scope: the attribute, the context, the error, and the derives
/// for input types.
pub mod prelude {
    pub use crate::{
        IntoTool, Pending, ToolCall, ToolCallResult, ToolContext, ToolError, ToolRegistry,
    };
    pub use crate::{export, tool, tool_input};
    pub use schemars::JsonSchema;
    pub use serde::{Deserialize, Serialize};
}

/// What `#[tool]` expands to. Not a public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    use std::future::Future;

    pub use ::core;
    pub use ::inventory;
    pub use ::schemars;
    pub use ::serde;
    pub use ::serde_json;
    pub use ::std;

    pub use crate::tools::annotations::{ExportAnnotations, TaskSupport};
    pub use crate::tools::context::ToolContext;
    pub use crate::tools::error::ToolError;
    pub use crate::tools::handler::params::{ParamNames, ParamTuple};
    pub use crate::tools::handler::{InputType, IntoOutcome, IntoToolError, Outcome, ToolInput};
    pub use crate::tools::name;
    pub use crate::tools::ui::{ExportUi, Visibility};

    use crate::tools::handler::WholeInput;
    use crate::tools::handler::params::{NamedInput, named_schema};
    use crate::tools::schema::schema_for;
    use crate::tools::tool::export::lone_input;
    pub use crate::tools::tool::{
        Export, IntoTool, StaticTool, Tool, ToolBuilder, ToolDefinitionError, finish_generated,
    };

    /// An export whose handler gets the typed input `I`.
    pub fn export<I, F, Fut>(name: &'static str, f: F) -> Export
    where
        I: ToolInput,
        F: Fn(ToolContext, I) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Outcome, ToolError>> + Send + 'static,
    {
        Export::typed_outcome(name, schema_for::<I>(), WholeInput, f)
    }

    /// An export whose handler gets the values of the parameters `N` names, the tuple `T`.
    pub fn export_named<N, T, F, Fut>(name: &'static str, f: F) -> Export
    where
        N: ParamNames,
        T: ParamTuple,
        F: Fn(ToolContext, T) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Outcome, ToolError>> + Send + 'static,
    {
        Export::typed_outcome(name, named_schema::<N, T>(), NamedInput(N::NAMES), f)
    }

    /// [`export_named`] for a synchronous handler.
    pub fn export_sync_named<N, T, F>(name: &'static str, f: F) -> Export
    where
        N: ParamNames,
        T: ParamTuple,
        F: Fn(&ToolContext, T) -> Result<Outcome, ToolError> + Send + Sync + 'static,
    {
        Export::typed_sync_outcome(name, named_schema::<N, T>(), NamedInput(N::NAMES), f)
    }

    /// An export whose handler gets its lone parameter `T`, read as the whole input or as the
    /// one property `N` names, as `T`'s schema says (decided when the export is built).
    pub fn export_lone<N, T, F, Fut>(name: &'static str, f: F) -> Export
    where
        N: ParamNames,
        T: ToolInput,
        F: Fn(ToolContext, T) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Outcome, ToolError>> + Send + 'static,
    {
        let (parameters, read) = lone_input::<N, T>();
        Export::typed_outcome(name, parameters, read, f)
    }

    /// [`export_lone`] for a synchronous handler.
    pub fn export_sync_lone<N, T, F>(name: &'static str, f: F) -> Export
    where
        N: ParamNames,
        T: ToolInput,
        F: Fn(&ToolContext, T) -> Result<Outcome, ToolError> + Send + Sync + 'static,
    {
        let (parameters, read) = lone_input::<N, T>();
        Export::typed_sync_outcome(name, parameters, read, f)
    }

    /// An export whose synchronous handler gets the typed input `I` and answers at once.
    pub fn export_sync<I, F>(name: &'static str, f: F) -> Export
    where
        I: ToolInput,
        F: Fn(&ToolContext, I) -> Result<Outcome, ToolError> + Send + Sync + 'static,
    {
        Export::typed_sync_outcome(name, schema_for::<I>(), WholeInput, f)
    }

    /// The outcome of an infallible handler.
    pub fn output<T: IntoOutcome>(value: T) -> Result<Outcome, ToolError> {
        value.into_outcome()
    }

    /// The output schema of `T`, for `#[export(output_schema)]`.
    pub fn output_schema<T: ::schemars::JsonSchema>() -> crate::tools::output_schema::OutputSchema {
        crate::tools::output_schema::OutputSchema::of::<T>()
    }

    /// A timeout in milliseconds.
    pub const fn millis(ms: u64) -> ::std::time::Duration {
        ::std::time::Duration::from_millis(ms)
    }
}

/// Public types that cross tasks are `Send + Sync`; this fails to compile otherwise.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ToolExecutor>();
    assert_send_sync::<ToolRegistry>();
    assert_send_sync::<ToolCatalog>();
    assert_send_sync::<ToolContext>();
    assert_send_sync::<ToolCallResult>();
    assert_send_sync::<ToolError>();
    assert_send_sync::<Tool>();
    assert_send_sync::<Export>();
    assert_send_sync::<StaticTool>();
    assert_send_sync::<PendingResults>();
    assert_send_sync::<testing::TestKit>();
};
