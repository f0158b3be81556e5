//! Tools from MCP servers: an [`McpExtension`] connects to servers (child processes over stdio,
//! or Streamable HTTP endpoints) with rmcp's client and registers each server's tools as
//! `{server}__{tool}` with `source: {type: mcp, name, mcp: {extensionName, serverName}}`
//! (CAT-6). Calls go through the agent's executor (catalog gate, middleware, validation,
//! timeouts, truncation) and then to the server.
//!
//! - [`McpExtensionConfig`] and [`McpServerConfig`] say which servers and which of their tools
//!   (`include`/`exclude`); a bundle's `kind: Extension` with `spec.mcp` gives the same
//!   ([`Bundle::mcp_extension`](crate::bundle::Bundle::mcp_extension)).
//! - [`local_name`] maps remote names our names cannot hold; each mapping is reported once as
//!   a `goondan::mcp` tracing event.
//! - A tool the bridge cannot take is left out and its server's other tools serve
//!   ([`McpExtension::left_out`] names it and says why, as a `goondan::mcp` warning does): one
//!   that nests deeper than rmcp reads, one whose local name another of the server's tools
//!   would have too, one the registry refuses (a name another source holds).
//! - Errors: a remote `isError` is [`E_MCP_TOOL_ERROR`], a protocol error [`E_MCP_REMOTE`], a
//!   server that is not running [`E_MCP_UNAVAILABLE`]; a timeout or a cancelled context sends
//!   `notifications/cancelled` to the server and answers `E_TOOL_TIMEOUT`/`E_TOOL_CANCELLED`.
//! - Skills (the MCP Skills extension): [`McpExtension::skills`] lists the skills of the servers
//!   that serve them, [`McpExtension::load_skill`] reads a skill's `SKILL.md` and
//!   [`McpExtension::read_skill_file`] one of its files, each checked against the listing
//!   (size, sha256 digest, front matter; [`E_MCP_SKILL_MISMATCH`] when it does not match), and
//!   nothing read before it is asked for.
//! - A server that answers a call with a task (the SEP-2663 tasks extension, which this client
//!   announces) gives a pending result; its completion comes from polling `tasks/get`, and a
//!   cancelled context sends `tasks/cancel`.

mod access;
mod auth;
mod bridge;
mod config;
mod declaration;
mod dpop;
mod enterprise;
mod input;
mod launcher;
mod link;
mod listing;
mod loopback;
mod naming;
mod outcome;
mod screen;
mod skills;
mod stdio;
mod streamable;
mod task;
mod token_endpoint;
mod token_store;
mod workload;

pub use self::auth::{
    AuthorizeFuture, Authorizer, ClientCredentials, EnterpriseGrant, IdentityProvider,
    JwtAlgorithm, McpAuth, OAuthClient, Secret, WorkloadIdentity,
};
pub use self::bridge::{McpClientError, McpExtension};
pub use self::config::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, FIRST_RESTART_BACKOFF, MAX_RESTART_BACKOFF,
    McpConfigError, McpExtensionConfig, McpServerConfig, McpTransport,
};
pub use self::launcher::{Launched, Launcher, StdioCommand};
pub use self::link::ServerStatus;
pub use self::loopback::{LoopbackAuthorizer, ShowUrl};
pub use self::naming::{LocalName, local_name};
pub use self::outcome::{E_MCP_AUTH, E_MCP_REMOTE, E_MCP_TOOL_ERROR, E_MCP_UNAVAILABLE};
pub use self::screen::LeftOutTool;
pub use self::skills::{
    BridgedSkill, E_MCP_SKILL_MISMATCH, MAX_SKILL_FILE_BYTES, MAX_SKILLS, SkillContent, SkillFile,
    SkillsShown,
};
#[cfg(feature = "keyring")]
pub use self::token_store::KeyringUnavailable;
pub use self::token_store::{
    AuthState, TOKEN_STORE_ENV, TokenLocation, TokenStore, TokenStoreError,
};
