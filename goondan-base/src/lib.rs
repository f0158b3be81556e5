//! # goondan-base
//!
//! The base tools of goondan-rs, safe by default:
//!
//! - [`Bash`] (`bash__exec`, `bash__script`): shell commands in the workdir, each call in the
//!   [`sandbox`] (the kernel keeps it to the workdir, without network or other processes) and
//!   its own cgroup, so that no descendant outlives it, with capped output.
//! - [`FileSystem`] (`file-system__read`, `__write`, `__list`, `__mkdir`): files of the
//!   workdir, every path and link confined to it.
//! - [`HttpFetch`] (`http-fetch__get`, `__post`): HTTP(S) requests that refuse private,
//!   loopback, link-local and metadata addresses, checked on every redirect.
//!
//! [`tools`] gives all of them with default policies; referencing it also links this crate.
//! Agents name them as `ref: {kind: Tool, name: bash, package: "@goondan/base"}`, which
//! [`resolve_ref`] answers (BASE-5). The [`guide`] shows them in use.
//!
//! Features:
//!
//! - `http-tools` (default): the tools that make HTTP requests, `http-fetch`, `telegram` and
//!   `slack`, with hyper as their client. Without it they are not built and [`tools`],
//!   [`library`] and [`resolve_ref`] leave them out; [`HttpPolicy`] stays (the sandbox's
//!   network proxy checks addresses with it).
//! - `tls` (default, with `http-tools`): https for those tools (rustls with ring and the
//!   Mozilla roots); without it they refuse `https` with `E_HTTP_SCHEME`.
//! - `mcp`: bridged MCP servers started in the sandbox ([`sandbox`]).
//! - `cli`: the `goondan` program (`cli` and the binary), with every feature above and the
//!   runtime's MCP, providers, SQLite, NATS, OpenTelemetry and keyring.
//! - `test-agent-hosts` (internal): the agent-process programs the tests re-execute.
//!
//! ```standalone_crate
//! use goondan_runtime::testing::{ResultAssertions, TestKit};
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // `bash` runs commands in the sandbox, whose helper is this program itself.
//!     goondan_base::sandbox::serve_if_asked();
//!     tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//!         let kit = TestKit::with_tools(goondan_base::tools())?;
//!         let out = kit.call("bash__exec", serde_json::json!({"command": "echo hi"})).await;
//!         assert_eq!(out.assert_ok()["stdout"], "hi\n");
//!         Ok(())
//!     })
//! }
//! ```

pub mod agents;
pub mod bash;
#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "code-mode")]
pub mod code_worker;
pub mod extensions;
pub mod file_system;
#[doc = include_str!("guide.md")]
pub mod guide {}
pub mod http_fetch;
pub mod json_query;
pub mod sandbox;
pub mod self_restart;
#[cfg(feature = "http-tools")]
pub mod slack;
#[cfg(feature = "http-tools")]
pub mod telegram;
pub mod text_transform;
pub mod wait;
#[cfg(feature = "http-tools")]
pub mod web_api;
pub mod workspace;

/// The README's Rust examples, run as doc tests. Only under `cfg(doctest)`: the README lives
/// outside this crate's directory, and a packaged crate builds without it.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

use goondan_runtime::tools::tool::ToolDefinitionError;
use goondan_runtime::{IntoTool, Tool};

pub use crate::agents::Agents;
pub use crate::bash::{Bash, BashPolicy};
pub use crate::file_system::{FileSystem, FsPolicy};
#[cfg(feature = "http-tools")]
pub use crate::http_fetch::HttpFetch;
pub use crate::http_fetch::HttpPolicy;
pub use crate::json_query::JsonQuery;
pub use crate::self_restart::SelfRestart;
#[cfg(feature = "http-tools")]
pub use crate::slack::{Slack, SlackPolicy};
#[cfg(feature = "http-tools")]
pub use crate::telegram::{Telegram, TelegramPolicy};
pub use crate::text_transform::TextTransform;
pub use crate::wait::{Wait, WaitPolicy};

/// The package name agents use to reference these tools (BASE-5).
pub const PACKAGE: &str = "@goondan/base";

/// The resource names this crate provides (`http-fetch`, `telegram` and `slack` with the
/// feature `http-tools`).
pub const TOOL_NAMES: &[&str] = &[
    Bash::NAME,
    FileSystem::NAME,
    #[cfg(feature = "http-tools")]
    HttpFetch::NAME,
    Agents::NAME,
    JsonQuery::NAME,
    TextTransform::NAME,
    Wait::NAME,
    SelfRestart::NAME,
    #[cfg(feature = "http-tools")]
    Telegram::NAME,
    #[cfg(feature = "http-tools")]
    Slack::NAME,
];

/// Every base tool, with default policies, each as built: registries, kits and libraries take
/// them as they are and report a failed build with the tool's name.
pub fn tools() -> Vec<Result<Tool, ToolDefinitionError>> {
    TOOL_NAMES
        .iter()
        .filter_map(|name| resolve_ref(PACKAGE, name))
        .collect()
}

/// Every tool linked into this program (`#[tool]` items anywhere in it) and the base tools,
/// with `@goondan/base` as a package: what a bundle's Tool resources and `ref`s resolve against.
///
/// ```
/// let library = goondan_base::library();
/// assert!(library.iter().any(|t| t.name() == "bash"));
/// ```
pub fn library() -> goondan_runtime::bundle::ToolLibrary {
    goondan_runtime::bundle::ToolLibrary::linked()
        .tools(tools())
        .package_tools(PACKAGE, tools())
}

/// The tool an Agent's `ref: {kind: Tool, name, package}` names, with its default policy, or
/// `None` when `package` is not [`PACKAGE`] or `name` is not a base tool (BASE-5).
///
/// ```
/// let bash = goondan_base::resolve_ref("@goondan/base", "bash").transpose()?;
/// assert_eq!(bash.as_ref().map(|t| t.name()), Some("bash"));
/// assert!(goondan_base::resolve_ref("@other/pkg", "bash").is_none());
/// # Ok::<(), goondan_runtime::tools::tool::ToolDefinitionError>(())
/// ```
pub fn resolve_ref(package: &str, name: &str) -> Option<Result<Tool, ToolDefinitionError>> {
    if package != PACKAGE {
        return None;
    }
    match name {
        Bash::NAME => Some(Bash::default().into_tool()),
        FileSystem::NAME => Some(FileSystem::default().into_tool()),
        #[cfg(feature = "http-tools")]
        HttpFetch::NAME => Some(HttpFetch::default().into_tool()),
        Agents::NAME => Some(Agents.into_tool()),
        JsonQuery::NAME => Some(JsonQuery.into_tool()),
        TextTransform::NAME => Some(TextTransform.into_tool()),
        Wait::NAME => Some(Wait::default().into_tool()),
        SelfRestart::NAME => Some(SelfRestart.into_tool()),
        #[cfg(feature = "http-tools")]
        Telegram::NAME => Some(Telegram::default().into_tool()),
        #[cfg(feature = "http-tools")]
        Slack::NAME => Some(Slack::default().into_tool()),
        _ => None,
    }
}
