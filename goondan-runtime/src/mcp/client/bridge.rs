//! [`McpExtension`]: the extension that bridges MCP servers' tools into an agent's registry,
//! keeps them in step with the servers' lists, and hides withdrawn ones from the catalog.

use std::sync::{Arc, Mutex, Weak};

use super::access::Access;
use super::auth::McpAuth;
use super::config::{McpConfigError, McpExtensionConfig};
use super::link::{ServerLink, ServerStatus, ToolsChanged};
use super::screen::LeftOutTool;
use super::skills::{self, BridgedSkill, SkillContent};
use super::token_store::TokenStore;
use crate::calls::middleware::Middleware;
use crate::calls::refusal;
use crate::extension::{Extension, ExtensionApi, ExtensionError, PipelineMiddleware};
use crate::lock;
use crate::step::{StepContext, StepFuture, StepNext, StepResult};
use crate::tools::context::ToolContext;
use crate::tools::error::ToolError;
use crate::tools::handler::{Handler, HandlerError, HandlerFuture};
use crate::tools::registry::ToolRegistry;
use crate::tools::result::JsonObject;
use crate::tools::tool::{SourceKind, ToolSource};

/// Why an MCP extension could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpClientError {
    /// The configuration is refused.
    #[error(transparent)]
    Config(#[from] McpConfigError),
    /// A server could not be started or reached.
    #[error("MCP server `{server}` of extension `{extension}` is unavailable: {reason}")]
    Unavailable {
        /// The extension.
        extension: String,
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
    /// A server wants an OAuth authorization the bridge does not hold (`E_MCP_AUTH`).
    #[error("MCP server `{server}` of extension `{extension}` is not authorized: {reason}")]
    Unauthorized {
        /// The extension.
        extension: String,
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
}

/// An extension whose tools come from MCP servers (item `source: {type: mcp, name, mcp:
/// {extensionName, serverName}}`, CAT-6).
///
/// [`connect`](Self::connect) starts every server and lists its tools; adding the extension
/// to an agent instance registers them as `{server}__{tool}`, so they are in the registry
/// before the first Step (those of a server that is not up yet come when it is). Every call
/// goes through the agent's executor like any other tool.
/// When a server announces `notifications/tools/list_changed`, its new tools are registered
/// and the withdrawn ones are left out of the next Step's catalog. A stdio server that stops
/// is started again with backoff; meanwhile its tools answer `E_MCP_UNAVAILABLE`.
///
/// ```no_run
/// use std::sync::Arc;
/// use goondan_runtime::mcp::client::{McpExtension, McpExtensionConfig, McpServerConfig};
/// use goondan_runtime::step::{AgentInstance, ScriptedModel};
/// use goondan_runtime::ToolRegistry;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let config = McpExtensionConfig::new("mcp").server(
///     McpServerConfig::stdio("everything", "mcp-server-everything").exclude(["get-env"]),
/// );
/// let mcp = McpExtension::connect(config).await?;
/// let registry = Arc::new(ToolRegistry::new());
/// let agent = AgentInstance::builder("helper", registry, Arc::new(ScriptedModel::new([])))
///     .extension(mcp)
///     .build()?;
/// assert!(agent.registry().contains("everything__echo"));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct McpExtension {
    name: String,
    links: Arc<[Arc<ServerLink>]>,
    registrar: Arc<Registrar>,
}

impl std::fmt::Debug for McpExtension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpExtension")
            .field("name", &self.name)
            .field(
                "servers",
                &self
                    .links
                    .iter()
                    .map(|l| l.config.name())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl McpExtension {
    /// Starts every server of `config` and waits, each at most its startup timeout and all at
    /// once, until each is up and its tools listed, or has failed. A server that is not up
    /// then is left out with a `goondan::mcp` warning (its [`status`](Self::status) says why)
    /// and keeps being started again with backoff; its tools are registered when it is up.
    /// Fails, stopping them all, only when a [required](super::McpServerConfig::required) server is
    /// not up.
    pub async fn connect(config: McpExtensionConfig) -> Result<Self, McpClientError> {
        config.check()?;
        let registrar = Arc::new(Registrar {
            extension: config.name.clone(),
            sinks: Mutex::new(Vec::new()),
        });
        let access = Access {
            // The user's store is looked for (the OS keyring asked) only when a server has
            // tokens to keep.
            tokens: config.tokens.clone().or_else(|| {
                config
                    .servers
                    .iter()
                    .any(|s| !matches!(s.auth, McpAuth::None))
                    .then(TokenStore::for_user)
                    .flatten()
            }),
            authorizer: config.authorizer.0.clone(),
            ..Access::default()
        };
        let links: Arc<[Arc<ServerLink>]> = config
            .servers
            .into_iter()
            .map(|s| {
                let changed: Arc<dyn ToolsChanged> = Arc::clone(&registrar) as _;
                ServerLink::start(&config.name, s, changed, access.clone())
            })
            .collect();
        let settled = futures_util::future::join_all(
            links
                .iter()
                .map(|link| link.settled(link.config.startup_timeout)),
        )
        .await;
        for (link, status) in links.iter().zip(settled) {
            let unauthorized = matches!(status, ServerStatus::Unauthorized { .. });
            let reason = match status {
                ServerStatus::Up { .. } => continue,
                ServerStatus::Down { reason } | ServerStatus::Unauthorized { reason } => reason,
                ServerStatus::Starting => format!(
                    "it did not start within {} ms",
                    link.config.startup_timeout.as_millis()
                ),
            };
            let server = link.config.name.clone();
            if !link.config.required {
                tracing::warn!(
                    target: "goondan::mcp",
                    extension = %config.name,
                    server = %server,
                    "MCP server `{server}` is {}: {reason}; its tools are left out until it is up",
                    if unauthorized { "not authorized" } else { "unavailable" },
                );
                continue;
            }
            for l in links.iter() {
                l.shutdown();
            }
            let extension = config.name;
            return Err(if unauthorized {
                McpClientError::Unauthorized {
                    extension,
                    server,
                    reason,
                }
            } else {
                McpClientError::Unavailable {
                    extension,
                    server,
                    reason,
                }
            });
        }
        Ok(Self {
            name: config.name,
            links,
            registrar,
        })
    }

    /// Where the server `server` stands; `None` for a server this extension does not have.
    pub fn status(&self, server: &str) -> Option<ServerStatus> {
        self.link(server).map(|l| l.status())
    }

    /// Each server, in the configuration's order, and where it stands.
    pub fn statuses(&self) -> Vec<(String, ServerStatus)> {
        self.links
            .iter()
            .map(|l| (l.config.name().to_owned(), l.status()))
            .collect()
    }

    /// The local names of the tools the server `server` lists now (after `include`/`exclude`),
    /// sorted.
    pub fn tool_names(&self, server: &str) -> Vec<String> {
        self.link(server)
            .map(|l| l.tools().into_keys().collect())
            .unwrap_or_default()
    }

    /// The tools the server `server` lists that are left out, and why: one the bridge cannot
    /// read (it nests deeper than rmcp reads), one whose local name another of the server's
    /// tools would have too (a name mapped onto another), one the registry refused (its name
    /// is another source's). Each was named in a `goondan::mcp` warning.
    pub fn left_out(&self, server: &str) -> Vec<LeftOutTool> {
        self.link(server).map(|l| l.left_out()).unwrap_or_default()
    }

    /// The skills of every server that is up and serves the Skills extension, in the
    /// configuration's order, listed now (`skills/list`, at most [`MAX_SKILLS`](super::MAX_SKILLS)
    /// per server). No file is read. A server whose listing fails is left out with a warning.
    pub async fn skills(&self) -> Vec<BridgedSkill> {
        let mut all = Vec::new();
        for link in self.links.iter() {
            if !matches!(link.status(), ServerStatus::Up { .. }) {
                continue;
            }
            let Ok((peer, _)) = link.peer().await else {
                continue;
            };
            let serves = peer
                .peer_info()
                .is_some_and(|info| info.capabilities.supports_skills());
            if !serves {
                continue;
            }
            let server = link.config.name();
            match tokio::time::timeout(link.config.call_timeout, skills::list(server, &peer)).await
            {
                Ok(Ok(listed)) => all.extend(listed),
                Ok(Err(e)) => {
                    tracing::warn!(target: "goondan::mcp", server, "its skills are left out: {}", e.message());
                }
                Err(_) => {
                    tracing::warn!(target: "goondan::mcp", server, "its skills are left out: `skills/list` timed out");
                }
            }
        }
        all
    }

    /// Loads the skill `uri` of `server`: its `SKILL.md`, read now and checked against the
    /// skill's entry in the server's listing: its size, its sha256 digest and its front
    /// matter. A file that does not match is [`E_MCP_SKILL_MISMATCH`](super::E_MCP_SKILL_MISMATCH).
    pub async fn load_skill(&self, server: &str, uri: &str) -> Result<String, ToolError> {
        let link = self.skill_server(server)?;
        let (peer, _) = link.peer().await?;
        bounded(&link.config, skills::load(server, &peer, uri)).await
    }

    /// Reads the file `file` of the skill `skill` of `server`, checked against the listing
    /// (size and sha256 digest). Only a file the skill lists can be read.
    pub async fn read_skill_file(
        &self,
        server: &str,
        skill: &str,
        file: &str,
    ) -> Result<SkillContent, ToolError> {
        let link = self.skill_server(server)?;
        let (peer, _) = link.peer().await?;
        bounded(&link.config, skills::read(server, &peer, skill, file)).await
    }

    fn skill_server(&self, server: &str) -> Result<&Arc<ServerLink>, ToolError> {
        self.link(server).ok_or_else(|| {
            ToolError::new(format!(
                "the extension `{}` has no server `{server}`",
                self.name
            ))
            .with_code(crate::tools::error::codes::INVALID_ARGS)
        })
    }

    /// Stops every server; their tools answer `E_MCP_UNAVAILABLE` from now on.
    pub fn shutdown(&self) {
        for l in self.links.iter() {
            l.shutdown();
        }
    }

    fn link(&self, server: &str) -> Option<&Arc<ServerLink>> {
        self.links.iter().find(|l| l.config.name() == server)
    }
}

impl Extension for McpExtension {
    fn name(&self) -> &str {
        &self.name
    }

    fn register(&self, api: &mut ExtensionApi) -> Result<(), ExtensionError> {
        let registry = api.tools.registry();
        for link in self.links.iter() {
            register_tools(registry, &self.name, link);
        }
        let mut sinks = lock(&self.registrar.sinks);
        sinks.retain(|s| s.strong_count() > 0);
        sinks.push(Arc::downgrade(registry));
        api.pipeline.register(
            PipelineMiddleware::step(Withdrawn {
                extension: self.name.clone(),
                links: Arc::clone(&self.links),
            }),
            0,
        );
        Ok(())
    }
}

/// `work`, bounded by the server's call timeout.
async fn bounded<T>(
    config: &super::McpServerConfig,
    work: impl std::future::Future<Output = Result<T, ToolError>>,
) -> Result<T, ToolError> {
    let limit = config.call_timeout;
    tokio::time::timeout(limit, work)
        .await
        .unwrap_or_else(|_| Err(refusal::timed_out(limit)))
}

/// The registries the extension registered into; a new tool list registers its new tools in
/// each. Held weakly: a registry holds the tools' handlers, which hold the links, which hold
/// this; a strong handle would keep registries and servers alive forever.
struct Registrar {
    extension: String,
    sinks: Mutex<Vec<Weak<ToolRegistry>>>,
}

impl ToolsChanged for Registrar {
    fn tools_changed(&self, link: &Arc<ServerLink>) {
        let registries: Vec<_> = lock(&self.sinks).iter().filter_map(Weak::upgrade).collect();
        for registry in &registries {
            register_tools(registry, &self.extension, link);
        }
    }
}

/// Registers the tools of `link` that `registry` does not have yet, with the source
/// `{type: mcp, name: <extension>, mcp: {extensionName: <extension>, serverName}}` (CAT-6). A
/// tool whose schema changed keeps its first schema (registry entries are immutable, REG-3):
/// a warning says so.
fn register_tools(registry: &ToolRegistry, extension: &str, link: &Arc<ServerLink>) {
    let server = link.config.name();
    for (local, tool) in link.tools() {
        // Registered already by this server: kept. A name another source holds (the agent's
        // own tool, another extension's) goes to the registry, which refuses it.
        let bridged_here = |e: &crate::tools::registry::RegisteredExport| {
            let source = e.resource().source();
            source.kind == SourceKind::Mcp
                && source.mcp.as_ref().is_some_and(|m| {
                    m.extension_name == extension && m.server_name.as_deref() == Some(server)
                })
        };
        if let Some(existing) = registry.get(&local).filter(|e| bridged_here(e)) {
            if existing.export().parameters() != &tool.parameters {
                tracing::warn!(
                    target: "goondan::mcp",
                    server,
                    tool = %local,
                    "the MCP server changed the schema of `{local}`; the registry keeps the first one until the agent restarts"
                );
            }
            continue;
        }
        let handler = BridgedTool {
            link: Arc::clone(link),
            remote: tool.remote.clone(),
        };
        let source = ToolSource::mcp(extension, extension, Some(server.to_owned()));
        let registered =
            registry.register_item(&local, tool.description, tool.parameters, handler, source);
        if let Err(e) = registered {
            tracing::warn!(target: "goondan::mcp", server, tool = %local, "cannot register the MCP tool: {e}");
            link.refused(&tool.remote, format!("`{local}` is refused: {e}"));
        }
    }
}

/// The handler of one bridged tool: the call goes to the server.
struct BridgedTool {
    link: Arc<ServerLink>,
    remote: String,
}

impl Handler for BridgedTool {
    fn call(&self, ctx: &ToolContext, args: JsonObject) -> HandlerFuture {
        let link = Arc::clone(&self.link);
        let ctx = ctx.clone();
        let remote = self.remote.clone();
        Box::pin(async move {
            link.call(ctx, remote, args)
                .await
                .map_err(HandlerError::Failed)
        })
    }
}

/// Leaves out of each Step's catalog the tools of this extension that their server no longer
/// lists.
struct Withdrawn {
    extension: String,
    links: Arc<[Arc<ServerLink>]>,
}

impl Middleware<StepContext> for Withdrawn {
    fn handle(
        self: Arc<Self>,
        mut step: StepContext,
        next: StepNext,
    ) -> StepFuture<'static, StepResult> {
        step.tool_catalog.retain(|item| {
            let Some((source, Some(mcp))) = item.source().map(|s| (s, s.mcp.as_ref())) else {
                return true;
            };
            if source.kind != SourceKind::Mcp || mcp.extension_name != self.extension {
                return true;
            }
            self.links
                .iter()
                .find(|l| Some(l.config.name()) == mcp.server_name.as_deref())
                .is_none_or(|l| l.lists(item.name().as_str()))
        });
        next.run(step)
    }
}
