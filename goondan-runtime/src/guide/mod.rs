//! The guide: one page per chapter, each example compiled and run by `cargo test --doc`.
//!
//! Read them in order the first time; each page is short.
//!
//! 1. [`tools`]: a first tool, inputs and outputs, tools with state, the attribute's arguments.
//! 2. [`calls`]: the registry, the catalog and the executor; what is validated, and when.
//! 3. [`middleware`]: middleware around calls, Steps and Turns; approvals; guardrails.
//! 4. [`testing`]: testing a tool with [`TestKit`](crate::testing::TestKit).
//! 5. [`models`]: provider formats in and out, model providers, a real model in the tests.
//! 6. [`base_tools`]: the base tools of `goondan-base`.
//! 7. [`sandbox`]: the sandbox of a model's commands.
//! 8. [`bundles`]: bundles, the step loop, extensions and the `goondan` command.
//! 9. [`agents`]: agents in their own processes, handoff, swarms across machines.
//! 10. [`durable`]: durable runs: the run journal, resuming after a crash.
//! 11. [`mcp`]: serving tools over MCP, and using tools from MCP servers.
//! 12. [`code_mode`]: the model writes one program that calls the Step's tools.
//! 13. [`features`]: the workspace's crates, and which cargo features to pick.
//! 14. [`errors`]: failures as data, error codes and their `helpUrl`.
//!
//! # Nine nouns
//!
//! Tools and calls take nine nouns; everything else in the crate is one of these seen from
//! another side (a middleware's [`CallContext`](crate::CallContext) is a call on its way to the
//! handler, a [`CatalogItem`](crate::CatalogItem) is a registry entry as one Step shows it: the
//! entry itself, plus whatever that Step's middleware overrode).
//!
//! | noun | what it is |
//! |---|---|
//! | [`Tool`](crate::Tool) | a Tool resource: a name (`text-utils`) and its exports; what `#[tool]` makes |
//! | [`Export`](crate::Export) | one function of a tool: its name, description, input schema and handler; the model calls it as `{tool}__{export}` |
//! | [`Handler`](crate::Handler) | the code behind an export: your function, as the executor runs it |
//! | [`ToolRegistry`](crate::ToolRegistry) | every export the process can run |
//! | [`ToolCatalog`](crate::ToolCatalog) | the exports one Step shows the model, and the only ones it may call |
//! | [`ToolExecutor`](crate::ToolExecutor) | runs a call: the name and catalog checks, the middleware, validation, the handler, the result |
//! | [`ToolContext`](crate::ToolContext) | what a handler gets besides its arguments: who calls, the working directory, cancellation, a logger |
//! | [`ToolCall`](crate::ToolCall) / [`ToolCallResult`](crate::ToolCallResult) | a call as the model asked it, and its answer (`ok`, `error` or `pending`) |
//! | [`ToolError`](crate::ToolError) | a failure as data: a code, a message, a suggestion and a help URL |
//!
//! All nine in one program:
//!
//! ```
//! use std::sync::Arc;
//! use goondan_runtime::{Export, Tool, ToolCatalog, ToolExecutor};
//! use goondan_runtime::prelude::*; // ToolCall, ToolCallResult, ToolContext, ToolError, ToolRegistry, ...
//! use serde_json::json;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Input {
//!     /// The text to shout.
//!     text: String,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // An Export whose Handler is a typed function; a Tool holding it.
//! let shout = Export::typed("shout", |_ctx: ToolContext, input: Input| async move {
//!     if input.text.is_empty() {
//!         return Err(ToolError::new("nothing to shout").with_suggestion("pass some text"));
//!     }
//!     Ok(input.text.to_uppercase())
//! });
//! let tool = Tool::builder("text").export(shout).build()?;
//!
//! // The ToolRegistry holds it; this Step's ToolCatalog shows it; the ToolExecutor runs it.
//! let registry = Arc::new(ToolRegistry::builder().tool(tool).build()?);
//! let catalog = ToolCatalog::build(&registry, ["text"])?;
//! let executor = ToolExecutor::new(Arc::clone(&registry));
//! let ctx = ToolContext::builder(".").agent_name("coder").build();
//!
//! // A ToolCall gives a ToolCallResult; a ToolError comes back as data.
//! let call = ToolCall::new("call_1", "text__shout", json!({"text": "hi"}));
//! let result: ToolCallResult = executor.execute(call, &ctx, &catalog).await;
//! assert_eq!(result.output, Some(json!("HI")));
//!
//! let call = ToolCall::new("call_2", "text__shout", json!({"text": ""}));
//! let failed = executor.execute(call, &ctx, &catalog).await;
//! let error = failed.error.as_ref().map(ToolError::suggestion);
//! assert_eq!(error, Some(Some("pass some text")));
//! # Ok(())
//! # }
//! ```
//!
//! The pages that need the runtime's default features (`host`, `mcp`, `providers`) hold their
//! examples only when those features are on; without them the page says which feature it needs.
//! Examples that need `goondan-base` (the base tools, the `goondan` command) are doc tests of
//! `goondan_base::guide`, which these pages link to.
//!
//! Beside the guide, in the repository: `docs/errors.md` (every error code: what it means, the
//! usual causes, the fix; where each `helpUrl` points), `docs/benchmarks.md` (what it costs,
//! against rmcp and a floor), `docs/rules.md` (every rule of the Goondan Tool system, by ID),
//! `docs/conformance.md` (the tests that prove each rule) and `docs/fuzzing.md`.

#[doc = include_str!("tools.md")]
pub mod tools {}

#[doc = include_str!("calls.md")]
pub mod calls {}

#[doc = include_str!("middleware.md")]
pub mod middleware {}

#[doc = include_str!("testing.md")]
pub mod testing {}

#[cfg_attr(feature = "providers", doc = include_str!("models.md"))]
#[cfg_attr(
    not(feature = "providers"),
    doc = "Models: provider formats and model providers (this page needs the `providers` feature)."
)]
pub mod models {}

#[doc = include_str!("base_tools.md")]
pub mod base_tools {}

#[doc = include_str!("sandbox.md")]
pub mod sandbox {}

#[cfg_attr(feature = "host", doc = include_str!("bundles.md"))]
#[cfg_attr(
    not(feature = "host"),
    doc = "Bundles, the step loop and the `goondan` command (this page needs the `host` feature)."
)]
pub mod bundles {}

#[cfg_attr(all(feature = "host", unix), doc = include_str!("agents.md"))]
#[cfg_attr(
    not(all(feature = "host", unix)),
    doc = "Agents and swarms (this page needs the `host` feature, on Unix)."
)]
pub mod agents {}

#[cfg_attr(feature = "sqlite", doc = include_str!("durable.md"))]
#[cfg_attr(
    not(feature = "sqlite"),
    doc = "Durable runs: the run journal (this page needs the `sqlite` feature)."
)]
pub mod durable {}

#[cfg_attr(feature = "mcp", doc = include_str!("mcp.md"))]
#[cfg_attr(
    not(feature = "mcp"),
    doc = "MCP both ways (this page needs the `mcp` feature)."
)]
pub mod mcp {}

#[cfg_attr(feature = "code-mode", doc = include_str!("code_mode.md"))]
#[cfg_attr(
    not(feature = "code-mode"),
    doc = "Code mode: one program calls the Step's tools (this page needs the `code-mode` feature)."
)]
pub mod code_mode {}

#[doc = include_str!("features.md")]
pub mod features {}

#[doc = include_str!("errors.md")]
pub mod errors {}
