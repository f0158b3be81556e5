//! Serve Goondan tools over MCP: [`McpServer`] implements rmcp's `ServerHandler` over a
//! [`ToolRegistry`], the catalog it exposes and a [`ToolExecutor`].
//!
//! Every Goondan rule holds over MCP, because every `tools/call` goes through
//! [`ToolExecutor::execute`]:
//!
//! - the catalog is the allow-list: a tool outside it is the protocol's unknown-tool error
//!   (JSON-RPC `-32602`, with the structured `E_TOOL_NOT_IN_CATALOG` error as `data`);
//! - middleware, argument validation, timeouts and message truncation apply; a failed call is
//!   a result with `isError: true`, its structured error (`code`, `message`, `suggestion`,
//!   `helpUrl`) as text and, unless the export declares an output schema, as
//!   `structuredContent: {error}`;
//! - an output is `structuredContent` (valid against the export's output schema when it
//!   publishes one) plus the same JSON as text;
//! - a pending result becomes an MCP task when the client supports the tasks extension, else
//!   the call waits for it, bounded by the export's timeout;
//! - `notifications/cancelled` cancels the call's [`ToolContext`](crate::ToolContext);
//!   [`ToolContext::progress`](crate::ToolContext::progress) becomes `notifications/progress`
//!   when the client sent a `progressToken`;
//! - `tools/list` is in catalog order, paginated, and `notifications/tools/list_changed` is
//!   sent when a tool registered at run time changes the served catalog;
//! - names are the Goondan names (`bash__exec`), unchanged;
//! - MCP Apps (the `io.modelcontextprotocol/ui` extension): a tool's page is served as a
//!   `ui://` resource and linked from its `tools/list` entry ([`apps`] says how).
//!
//! A program serves its own `#[tool]`s in a few lines:
//!
//! ```no_run
//! use std::sync::Arc;
//! use goondan_runtime::prelude::*;
//! use goondan_runtime::mcp::server::McpServer;
//!
//! /// Adds two numbers.
//! #[tool(name = "calc")]
//! pub fn add(a: i64, b: i64) -> i64 { a + b }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let registry = Arc::new(ToolRegistry::builder().tool(add::TOOL).build()?);
//!     McpServer::builder(registry).build()?.serve_stdio().await?;
//!     Ok(())
//! }
//! ```

pub mod apps;
mod call;
mod caller;
mod elicitation;
mod handler;
mod http_limits;
mod listing;
mod others;
mod progress;
mod tasks;
mod transport;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use arcstr::ArcStr;
use rmcp::model::Implementation;

use crate::bundle::{Bundle, BundleError, ToolLibrary};
use crate::calls::executor::ToolExecutor;
use crate::tools::catalog::{CatalogError, ToolCatalog};
use crate::tools::registry::ToolRegistry;
use crate::tools::toolset::{self, Toolset, ToolsetError};

pub use apps::{
    APP_MIME_TYPE, APPS_EXTENSION_ID, AppPage, AppPageError, Csp, Granted, MAX_PAGE_BYTES,
    PageMeta, Permissions,
};
pub use elicitation::ElicitationApprover;
pub use http_limits::HttpLimits;
pub use transport::{HttpServer, ServeError};

/// How many tools one `tools/list` page holds by default.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// How long a call whose result is pending waits for it, for a client without task support,
/// when the export sets no timeout.
pub const DEFAULT_PENDING_WAIT: Duration = Duration::from_secs(300);

/// Why an [`McpServer`] could not be built.
#[derive(Debug, thiserror::Error)]
pub enum McpServerError {
    /// The tools to expose are not all registered.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// The bundle is invalid or has no such Agent.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// The toolsets to serve do not make a catalog.
    #[error(transparent)]
    Toolset(#[from] ToolsetError),
    /// The code tool could not be built.
    #[error("{0}")]
    CodeMode(String),
    /// The skills folder could not be read.
    #[cfg(feature = "skills")]
    #[error("the skills cannot be served: {0}")]
    Skills(#[from] rmcp::handler::server::skill_catalog::SkillCatalogError),
    /// A page of MCP Apps cannot be served.
    #[error(transparent)]
    App(#[from] AppPageError),
    /// The executor runs over another registry than the one served.
    #[error(
        "the executor runs over another registry than the served one; build it from the same `Arc<ToolRegistry>`"
    )]
    ForeignExecutor,
    /// No random key could be had to seal request state.
    #[error("cannot make a key to seal request state: {0}")]
    StateKey(String),
    /// A published name is given twice.
    #[error("two tools are published as `{name}`")]
    DuplicatePublishedName {
        /// The published name.
        name: String,
    },
}

/// Which tools of the registry are served.
#[derive(Debug, Clone)]
enum Selection {
    /// Every tool, resources sorted by name.
    All,
    /// These resources in this order, then every tool registered at run time (an Agent's
    /// `spec.tools`, CAT-2, CAT-5).
    Declared(Vec<String>),
    /// These toolsets in this order, then every tool registered at run time.
    Toolsets(Vec<Toolset>),
}

/// The served catalog, rebuilt when the registry grows.
struct Served {
    generation: u64,
    view: Arc<View>,
}

/// One generation of the served catalog, and its tools as MCP sees them, made the first time
/// a client lists them and shared by every `tools/list` until the catalog changes.
pub(super) struct View {
    /// What clients are shown, and what their calls are checked against.
    pub(super) catalog: Arc<ToolCatalog>,
    /// What a code mode program's calls are checked against: the selected tools, without the
    /// code mode's own.
    #[cfg(feature = "code-mode")]
    pub(super) inner: Arc<ToolCatalog>,
    tools: std::sync::OnceLock<Vec<rmcp::model::Tool>>,
    /// What a client that renders no page is shown: the catalog without the tools only a page
    /// may call (MCP Apps' `visibility: ["app"]`), when there are any.
    for_model: std::sync::OnceLock<Option<ModelView>>,
}

/// The served catalog as a client without MCP Apps sees it.
struct ModelView {
    catalog: Arc<ToolCatalog>,
    tools: Vec<rmcp::model::Tool>,
}

impl View {
    fn new(catalog: ToolCatalog, code: Option<&Code>) -> Self {
        #[cfg(feature = "code-mode")]
        let (catalog, inner) = match code {
            Some(code) => {
                let offered = code.offer(catalog);
                (Arc::new(offered.shown), offered.inner)
            }
            None => {
                let catalog = Arc::new(catalog);
                (Arc::clone(&catalog), catalog)
            }
        };
        #[cfg(not(feature = "code-mode"))]
        let (catalog, _) = (Arc::new(catalog), code);
        Self {
            catalog,
            #[cfg(feature = "code-mode")]
            inner,
            tools: std::sync::OnceLock::new(),
            for_model: std::sync::OnceLock::new(),
        }
    }

    /// The catalog's tools as MCP tools, in catalog order.
    pub(super) fn tools(&self, renames: &Renames) -> &[rmcp::model::Tool] {
        self.tools
            .get_or_init(|| listing::tools_of(&self.catalog, renames))
    }

    /// The catalog and its MCP tools as a client sees them: all of them for a client that
    /// renders pages, else without the tools only a page may call.
    pub(super) fn for_client(
        &self,
        renders_pages: bool,
        renames: &Renames,
    ) -> (&Arc<ToolCatalog>, &[rmcp::model::Tool]) {
        let app_only = |item: &crate::tools::catalog::CatalogItem| {
            item.ui().is_some_and(|ui| !ui.visible_to_model())
        };
        if !renders_pages {
            let model = self.for_model.get_or_init(|| {
                if !self.catalog.items().iter().any(app_only) {
                    return None;
                }
                let mut catalog = (*self.catalog).clone();
                catalog.retain(|item| !app_only(item));
                let tools = listing::tools_of(&catalog, renames);
                Some(ModelView {
                    catalog: Arc::new(catalog),
                    tools,
                })
            });
            if let Some(model) = model {
                return (&model.catalog, &model.tools);
            }
        }
        (&self.catalog, self.tools(renames))
    }
}

/// The server's code mode, when it offers one.
#[cfg(feature = "code-mode")]
type Code = crate::code::CodeOffer;
/// Without the `code-mode` feature there is none.
#[cfg(not(feature = "code-mode"))]
enum Code {}

/// Goondan names published under other names, both ways. Empty unless
/// [`McpServerBuilder::publish_as`] is used.
#[derive(Debug, Default)]
pub(super) struct Renames {
    // Looked up on every call and every listing: a fast hash, as the catalog's name index.
    // The keys are the server's own; a client's names are only looked up.
    published: rustc_hash::FxHashMap<String, String>,
    goondan: rustc_hash::FxHashMap<String, String>,
}

impl Renames {
    /// The name a client sees for a Goondan name.
    pub(super) fn published<'a>(&'a self, goondan: &'a str) -> &'a str {
        self.published.get(goondan).map_or(goondan, String::as_str)
    }

    /// The Goondan name a client's name stands for.
    pub(super) fn goondan<'a>(&'a self, published: &'a str) -> &'a str {
        self.goondan
            .get(published)
            .map_or(published, String::as_str)
    }
}

struct Shared {
    executor: ToolExecutor,
    /// The skills served (SEP-2640), when a folder was given.
    #[cfg(feature = "skills")]
    skills: Option<rmcp::handler::server::skill_catalog::SkillCatalog>,
    /// The pages of MCP Apps, read when the server was built.
    pages: apps::Pages,
    /// Whether the server announces MCP Apps: it serves a page, or a tool says who may call it.
    apps: bool,
    /// Code mode: the code tool (and its search) instead of, or beside, the tools.
    code: Option<Code>,
    selection: Selection,
    served: RwLock<Served>,
    renames: Renames,
    /// Shared by every call's context, not copied into each.
    workdir: Arc<std::path::Path>,
    agent_name: ArcStr,
    info: Implementation,
    instructions: Option<String>,
    page_size: usize,
    pending_wait: Duration,
    tasks: tasks::TaskTable,
    /// Seals the answers a 2026-07-28 client carries between rounds (`requestState`).
    state_codec: Arc<rmcp::model::RequestStateCodec>,
    /// The user's handler of resources, prompts and completion.
    others: Option<Arc<dyn others::Others>>,
    /// What a Streamable HTTP server gives its clients at most.
    http_limits: HttpLimits,
}

/// What one client's session has set: its log level (`logging/setLevel`), and the tool
/// names a `subscriptions/listen` being set up saw when it was accepted (its baseline: a
/// change between the acknowledgement and the stream is still announced).
#[derive(Debug, Default)]
struct Session {
    log_level: Mutex<Option<crate::tools::context::LogLevel>>,
    listen_names: Mutex<Option<Vec<String>>>,
}

/// An MCP server over Goondan tools. Cheap to clone: clones serve the same catalog and share
/// tasks. Serve it with [`serve_stdio`](Self::serve_stdio), [`serve`](Self::serve) (any rmcp
/// transport, such as an in-process duplex) or [`serve_http`](Self::serve_http).
#[derive(Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
    session: Arc<Session>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("selection", &self.shared.selection)
            .field("name", &self.shared.info.name)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// Starts a server over `registry`; by default it serves every tool of the registry.
    pub fn builder(registry: Arc<ToolRegistry>) -> McpServerBuilder {
        McpServerBuilder {
            registry,
            executor: None,
            selection: Selection::All,
            workdir: None,
            agent_name: None,
            info: Implementation::new("goondan", env!("CARGO_PKG_VERSION")),
            instructions: None,
            page_size: DEFAULT_PAGE_SIZE,
            pending_wait: DEFAULT_PENDING_WAIT,
            renames: Vec::new(),
            others: None,
            http_limits: HttpLimits::default(),
            #[cfg(feature = "code-mode")]
            code: None,
            #[cfg(feature = "skills")]
            skills: None,
            pages: Vec::new(),
        }
    }

    /// Starts a server over the catalog of `agent` in `bundle`: its Tool resources matched to
    /// `library`'s compiled tools, in the order of the Agent's `spec.tools`, and the pages
    /// their exports name (MCP Apps: an export's `ui: {page: view.html, ...}`, the file read
    /// from the bundle's folder, see [`apps`]).
    ///
    /// ```
    /// use goondan_runtime::bundle::{Bundle, ToolLibrary};
    /// use goondan_runtime::mcp::server::McpServer;
    /// use goondan_runtime::prelude::*;
    ///
    /// /// Echoes.
    /// #[tool(name = "echo")]
    /// pub fn say(text: String) -> String { text }
    ///
    /// let bundle = Bundle::from_yaml(
    ///     "apiVersion: goondan.ai/v1\nkind: Tool\nmetadata: {name: echo}\n\
    ///      spec: {entry: rust:echo, exports: [{name: say}]}\n---\n\
    ///      apiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: helper}\n\
    ///      spec: {tools: [{kind: Tool, name: echo}]}\n",
    ///     "goondan.yaml",
    /// );
    /// let server = McpServer::for_agent(&bundle, &ToolLibrary::new([say::TOOL]), "helper")?
    ///     .build()?;
    /// assert_eq!(server.catalog().names().collect::<Vec<_>>(), ["echo__say"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn for_agent(
        bundle: &Bundle,
        library: &ToolLibrary,
        agent: &str,
    ) -> Result<McpServerBuilder, McpServerError> {
        let sets = bundle.agent_toolsets(agent)?;
        let tools = bundle.agent_tools(agent)?;
        let registry = Arc::new(bundle.registry(library)?);
        let pages = apps::bundle_pages(bundle, agent, &registry)?;
        let mut builder = Self::builder(registry);
        for page in pages {
            builder = builder.app_page(page);
        }
        let builder = if sets.iter().all(Toolset::is_plain) {
            builder.tools(tools)
        } else {
            builder.toolsets(sets)
        };
        Ok(builder.agent_name(agent).server_name(agent))
    }

    /// The catalog served now: rebuilt when a tool registered at run time changes it.
    pub fn catalog(&self) -> Arc<ToolCatalog> {
        Arc::clone(&self.current().catalog)
    }

    /// The executor every call goes through.
    pub fn executor(&self) -> &ToolExecutor {
        &self.shared.executor
    }

    /// The same server for a new client session: what a session sets (its log level) starts
    /// anew.
    fn for_session(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            session: Arc::default(),
        }
    }

    /// The served catalog as it is now, rebuilt first when the registry changed.
    pub(super) fn current(&self) -> Arc<View> {
        let registry = self.shared.executor.registry();
        let generation = registry.generation();
        {
            // The common case: the catalog is current, and readers do not wait for each other.
            let served = self.shared.served.read().unwrap_or_else(|e| e.into_inner());
            if served.generation == generation {
                return Arc::clone(&served.view);
            }
        }
        let mut served = self
            .shared
            .served
            .write()
            .unwrap_or_else(|e| e.into_inner());
        if served.generation == generation {
            // Another call rebuilt it meanwhile.
            return Arc::clone(&served.view);
        }
        let fresh = build_catalog(registry, &self.shared.selection)
            .unwrap_or_else(|_| (*served.view.catalog).clone());
        *served = Served {
            generation,
            view: Arc::new(View::new(fresh, self.shared.code.as_ref())),
        };
        Arc::clone(&served.view)
    }
}

/// A codec with a fresh random key: request state sealed by one server process opens only
/// in it.
fn state_codec() -> Result<rmcp::model::RequestStateCodec, McpServerError> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| McpServerError::StateKey(e.to_string()))?;
    rmcp::model::RequestStateCodec::try_new(key.to_vec())
        .map_err(|e| McpServerError::StateKey(e.to_string()))
}

fn build_catalog(
    registry: &ToolRegistry,
    selection: &Selection,
) -> Result<ToolCatalog, McpServerError> {
    match selection {
        Selection::All => Ok(ToolCatalog::all(registry)),
        Selection::Declared(names) => Ok(ToolCatalog::build(
            registry,
            names.iter().map(String::as_str),
        )?),
        Selection::Toolsets(sets) => Ok(toolset::catalog(registry, sets)?),
    }
}

/// Builds an [`McpServer`].
#[must_use]
pub struct McpServerBuilder {
    registry: Arc<ToolRegistry>,
    executor: Option<ToolExecutor>,
    selection: Selection,
    workdir: Option<PathBuf>,
    agent_name: Option<String>,
    info: Implementation,
    instructions: Option<String>,
    page_size: usize,
    pending_wait: Duration,
    renames: Vec<(String, String)>,
    others: Option<Arc<dyn others::Others>>,
    http_limits: HttpLimits,
    #[cfg(feature = "code-mode")]
    code: Option<crate::code::CodeMode>,
    #[cfg(feature = "skills")]
    skills: Option<PathBuf>,
    pages: Vec<AppPage>,
}

impl McpServerBuilder {
    /// Serves a page of MCP Apps (the `io.modelcontextprotocol/ui` extension): listed by
    /// `resources/list`, read by `resources/read` as `text/html;profile=mcp-app` with its
    /// `_meta.ui`, and shown by each tool whose export names its URI in `ui`. A page from a
    /// file is read when the server is built, from the workdir unless the page has its own
    /// root; see [`apps`] for what fails the build.
    pub fn app_page(mut self, page: AppPage) -> Self {
        self.pages.push(page);
        self
    }

    /// Serves the skills of `folder` (the MCP Skills extension, SEP-2640): each folder below it
    /// that holds a `SKILL.md` is a skill, listed by `skills/list` and `skills/get` with each
    /// file's size and sha256 digest, its files read by `resources/read` and its folders by
    /// `resources/directory/read`. rmcp's `SkillCatalog` reads the folder when the server is
    /// built: without following links, hidden entries left out, a skill past the extension's
    /// limits (512 files, 16 MiB) left out. A `skill://` resource is the skills'; every other
    /// resource stays [`others`](Self::others)'.
    #[cfg(feature = "skills")]
    pub fn skills(mut self, folder: impl Into<PathBuf>) -> Self {
        self.skills = Some(folder.into());
        self
    }

    /// Offers code mode: the client is shown the code tool (`code__run`, one Python program
    /// that calls the served tools as functions), its search when `mode` has one, and the
    /// tools themselves only when `mode` keeps them callable directly. Each call a program
    /// makes goes through the executor like a client's own, checked against the served
    /// catalog; the client answers its approvals and questions as for any call.
    #[cfg(feature = "code-mode")]
    pub fn code_mode(mut self, mode: crate::code::CodeMode) -> Self {
        self.code = Some(mode);
        self
    }

    /// The limits of [`serve_http`](McpServer::serve_http): idle session expiry, the session
    /// cap and the body cap (default [`HttpLimits::default`]).
    pub fn http_limits(mut self, limits: HttpLimits) -> Self {
        self.http_limits = limits;
        self
    }

    /// Serves resources, prompts and completion with `handler`, an rmcp `ServerHandler` of
    /// your own: its `resources/*`, `prompts/*` and `completion/complete` answer those
    /// methods, and its announced capabilities for them join ours. Tools stay the served
    /// catalog's, every call through the executor; the handler's tools are never asked.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use goondan_runtime::ToolRegistry;
    /// use goondan_runtime::mcp::server::McpServer;
    /// use rmcp::model::{
    ///     ListResourcesResult, PaginatedRequestParams, Resource, ServerCapabilities,
    ///     ServerConfig,
    /// };
    /// use rmcp::service::RequestContext;
    /// use rmcp::{ErrorData, RoleServer, ServerHandler};
    ///
    /// /// The program's own resources.
    /// struct Docs;
    /// impl ServerHandler for Docs {
    ///     fn get_info(&self) -> ServerConfig {
    ///         ServerConfig::new(ServerCapabilities::builder().enable_resources().build())
    ///     }
    ///     async fn list_resources(
    ///         &self,
    ///         _request: Option<PaginatedRequestParams>,
    ///         _context: RequestContext<RoleServer>,
    ///     ) -> Result<ListResourcesResult, ErrorData> {
    ///         let readme = Resource::new("docs://readme", "readme");
    ///         Ok(ListResourcesResult::with_all_items(vec![readme]))
    ///     }
    /// }
    ///
    /// let server = McpServer::builder(Arc::new(ToolRegistry::new())).others(Docs).build()?;
    /// # drop(server);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn others(mut self, handler: impl rmcp::ServerHandler) -> Self {
        self.others = Some(Arc::new(handler));
        self
    }

    /// Serves these Tool resources, in this order, plus every tool registered at run time
    /// (CAT-2, CAT-5). Default: every tool of the registry.
    pub fn tools<S: Into<String>>(mut self, resources: impl IntoIterator<Item = S>) -> Self {
        self.selection = Selection::Declared(resources.into_iter().map(Into::into).collect());
        self
    }

    /// Serves these [toolsets](crate::tools::toolset), in this order, under the names they
    /// give, plus every tool registered at run time. Replaces [`tools`](Self::tools).
    pub fn toolsets(mut self, sets: impl IntoIterator<Item = Toolset>) -> Self {
        self.selection = Selection::Toolsets(sets.into_iter().collect());
        self
    }

    /// The registry the server serves: what an executor given to [`executor`](Self::executor)
    /// must run over.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.registry
    }

    /// Runs calls through `executor` (with its middleware, policy and default timeout).
    /// It must run over the served registry. Default: a plain executor.
    pub fn executor(mut self, executor: ToolExecutor) -> Self {
        self.executor = Some(executor);
        self
    }

    /// The working directory of the calls' contexts (CTX-2). Default: the current directory.
    pub fn workdir(mut self, workdir: impl Into<PathBuf>) -> Self {
        self.workdir = Some(workdir.into());
        self
    }

    /// The agent name of the calls' contexts. Default: `mcp`.
    pub fn agent_name(mut self, name: impl Into<String>) -> Self {
        self.agent_name = Some(name.into());
        self
    }

    /// The server's name in `initialize` (default `goondan`).
    pub fn server_name(mut self, name: impl Into<String>) -> Self {
        self.info.name = name.into();
        self
    }

    /// The server's version in `initialize` (default: this crate's).
    pub fn server_version(mut self, version: impl Into<String>) -> Self {
        self.info.version = version.into();
        self
    }

    /// Instructions for the client's model, sent in `initialize`.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// How many tools one `tools/list` page holds (at least 1; default
    /// [`DEFAULT_PAGE_SIZE`]).
    pub fn page_size(mut self, size: usize) -> Self {
        self.page_size = size.max(1);
        self
    }

    /// How long a call with a pending result waits for it, for a client without task
    /// support, when the export sets no timeout (default [`DEFAULT_PENDING_WAIT`]).
    pub fn pending_wait(mut self, wait: Duration) -> Self {
        self.pending_wait = wait;
        self
    }

    /// Publishes the tool `goondan_name` as `published` instead of its Goondan name.
    ///
    /// Names are unchanged unless you ask: use this only for a client that requires fixed
    /// names that are not `{resource}__{export}` (the conformance suite's `test_simple_text`).
    /// Calls to `published` run `goondan_name` through the executor as usual.
    pub fn publish_as(
        mut self,
        goondan_name: impl Into<String>,
        published: impl Into<String>,
    ) -> Self {
        self.renames.push((goondan_name.into(), published.into()));
        self
    }

    /// Builds the server. Fails when a declared tool is not registered, or the executor
    /// runs over another registry.
    pub fn build(self) -> Result<McpServer, McpServerError> {
        let executor = match self.executor {
            Some(e) if !Arc::ptr_eq(e.registry(), &self.registry) => {
                return Err(McpServerError::ForeignExecutor);
            }
            Some(e) => e,
            None => ToolExecutor::new(Arc::clone(&self.registry)),
        };
        let generation = self.registry.generation();
        let catalog = build_catalog(&self.registry, &self.selection)?;
        let workdir: Arc<std::path::Path> = Arc::from(
            self.workdir
                .or_else(|| std::env::current_dir().ok())
                .unwrap_or_else(|| PathBuf::from(".")),
        );
        let pages = apps::Pages::load(self.pages, &workdir, &catalog)?;
        let apps = !pages.is_empty() || catalog.items().iter().any(|i| i.ui().is_some());
        #[cfg(feature = "code-mode")]
        let code = self
            .code
            .as_ref()
            .map(|mode| crate::code::CodeOffer::new(mode, false))
            .transpose()
            .map_err(|e| McpServerError::CodeMode(e.to_string()))?;
        #[cfg(not(feature = "code-mode"))]
        let code: Option<Code> = None;
        let view = View::new(catalog, code.as_ref());
        #[cfg(feature = "skills")]
        let skills = self
            .skills
            .as_ref()
            .map(rmcp::handler::server::skill_catalog::SkillCatalog::from_dir)
            .transpose()?;
        let mut renames = Renames::default();
        for (goondan, published) in self.renames {
            if renames.goondan.contains_key(&published) {
                return Err(McpServerError::DuplicatePublishedName { name: published });
            }
            renames.goondan.insert(published.clone(), goondan.clone());
            renames.published.insert(goondan, published);
        }
        Ok(McpServer {
            shared: Arc::new(Shared {
                executor,
                #[cfg(feature = "skills")]
                skills,
                pages,
                apps,
                code,
                selection: self.selection,
                served: RwLock::new(Served {
                    generation,
                    view: Arc::new(view),
                }),
                renames,
                workdir,
                agent_name: self
                    .agent_name
                    .map_or_else(|| arcstr::literal!("mcp"), ArcStr::from),
                info: self.info,
                instructions: self.instructions,
                page_size: self.page_size,
                pending_wait: self.pending_wait,
                tasks: tasks::TaskTable::default(),
                state_codec: Arc::new(state_codec()?),
                others: self.others,
                http_limits: self.http_limits,
            }),
            session: Arc::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::annotations::ExportAnnotations;
    use crate::tools::error::ToolError;
    use crate::tools::tool::{Export, Tool, ToolSource};
    use crate::{ToolContext, handler_fn};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Input {
        /// Some text.
        text: String,
    }

    #[derive(serde::Serialize, schemars::JsonSchema)]
    struct Output {
        text: String,
    }

    fn export(name: &str) -> Export {
        Export::typed(name, |_ctx: ToolContext, input: Input| async move {
            Ok::<_, ToolError>(Output { text: input.text })
        })
        .with_description("Gives the text back.")
        .with_output_schema::<Output>()
        .with_annotations(ExportAnnotations::default().title("Echo").read_only(true))
    }

    /// The listing kept per catalog generation is what the plain route (each item made into an
    /// MCP tool on every `tools/list`) gives, is made once per generation, and is made again
    /// when a registration changes the catalog.
    #[tokio::test]
    async fn mcp_tools_list_kept_per_generation_answers_like_the_plain_route() {
        let echo = |resource: &str| Tool::builder(resource).export(export("echo")).build();
        let registry = ToolRegistry::builder()
            .tool(echo("text").unwrap())
            .tool(echo("other").unwrap())
            .build();
        let registry = Arc::new(registry.unwrap());
        let server = McpServer::builder(Arc::clone(&registry))
            .publish_as("text__echo", "echo")
            .build()
            .unwrap();
        let renames = &server.shared.renames;
        let plain = |view: &View| -> Vec<rmcp::model::Tool> {
            view.catalog
                .items()
                .iter()
                .map(|item| listing::tool_of(item, renames))
                .collect()
        };
        let view = server.current();
        assert_eq!(view.tools(renames), plain(&view).as_slice());
        let names: Vec<&str> = view.tools(renames).iter().map(|t| &*t.name).collect();
        assert_eq!(names, ["other__echo", "echo"]);
        assert!(view.tools(renames)[0].output_schema.is_some());
        assert!(view.tools(renames)[0].annotations.is_some());
        // The same generation shares one listing.
        let again = server.current();
        assert!(Arc::ptr_eq(&view, &again));
        assert!(std::ptr::eq(view.tools(renames), again.tools(renames)));
        // A page of it, and the tool rmcp looks up for header checks, are the same tools.
        let page = listing::page(view.tools(renames), Some("1"), 1).unwrap();
        assert_eq!(page.tools, plain(&view)[1..]);
        assert_eq!(
            rmcp::ServerHandler::get_tool(&server, "echo").as_ref(),
            plain(&view).get(1)
        );
        assert!(rmcp::ServerHandler::get_tool(&server, "nothing").is_none());

        registry
            .register_item(
                "late__tool",
                Some("Registered at run time".into()),
                json!({"type": "object"}),
                handler_fn(|_ctx, _args| async { Ok::<_, ToolError>("late") }),
                ToolSource::extension("ext"),
            )
            .unwrap();
        let fresh = server.current();
        assert!(!Arc::ptr_eq(&view, &fresh));
        assert_eq!(fresh.tools(renames), plain(&fresh).as_slice());
        assert_eq!(fresh.tools(renames).len(), 3);
        assert!(fresh.tools(renames).iter().any(|t| t.name == "late__tool"));
    }
}
