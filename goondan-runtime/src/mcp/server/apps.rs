//! MCP Apps on the server (the `io.modelcontextprotocol/ui` extension, SEP-1865): a tool shows
//! an interactive page that the host renders in a sandboxed frame, and the page calls the
//! server's tools back through the host.
//!
//! The API, in full:
//!
//! - a tool names its page and who may call it: `#[export(ui = "ui://counter/view.html",
//!   visibility = "app")]` (`visibility` is `"model"`, `"app"` or `"both"`, the default), or
//!   [`Export::with_ui`](crate::Export::with_ui) with an [`ExportUi`](crate::tools::ui::ExportUi)
//!   for an export built without the macro;
//! - the server serves the page: [`McpServerBuilder::app_page`](super::McpServerBuilder::app_page)
//!   with an [`AppPage`], made by [`AppPage::html`] (the HTML as a string) or [`AppPage::file`]
//!   (a file, read when the server is built, within the server's workdir), and given its
//!   [`Csp`], [`Permissions`], [`prefers_border`](AppPage::prefers_border) and
//!   [`domain`](AppPage::domain) as the extension's `_meta.ui` of a resource says.
//!
//! What the server does with them:
//!
//! - it announces `extensions["io.modelcontextprotocol/ui"]` in its capabilities (with
//!   `mimeTypes: ["text/html;profile=mcp-app"]`) and reads the client's;
//! - `resources/list` lists every page (mime type [`APP_MIME_TYPE`], its `_meta.ui`), and
//!   `resources/read` of a page's `ui://` URI answers its HTML with the same;
//! - `tools/list` links each tool to its page in `_meta.ui` (`resourceUri`, `visibility`);
//! - a client that did not declare the extension renders no page: the tools only a page may
//!   call (`visibility: ["app"]`) are left out of its `tools/list`, and its calls to them are
//!   refused as calls of an unknown tool. Every tool still answers with text content, so a
//!   host without the extension reads the same results;
//! - a call from a page is an ordinary `tools/call`, through the executor like any other.
//!
//! A host enforces `visibility` towards the page (it refuses a page's call of a model-only
//! tool); the server cannot tell a page's call from a model's.
//!
//! Building fails, with an [`AppPageError`], when a page is too large ([`MAX_PAGE_BYTES`]), its
//! file is missing, not UTF-8, or lies outside its root (a path that climbs out, or a link that
//! leads out), its URI is not `ui://`, two pages share a URI, or a served tool names a page
//! that is not registered.
//!
//! ```
//! use std::sync::Arc;
//! use goondan_runtime::prelude::*;
//! use goondan_runtime::mcp::server::{AppPage, Csp, McpServer};
//!
//! /// A counter.
//! #[tool(name = "counter")]
//! pub mod counter {
//!     /// Shows the counter.
//!     #[export(ui = "ui://counter/view.html")]
//!     pub fn show() -> u64 { 0 }
//! }
//!
//! let registry = Arc::new(ToolRegistry::builder().tool(counter::TOOL).build()?);
//! let page = AppPage::html("ui://counter/view.html", "<!DOCTYPE html><p>0</p>")
//!     .csp(Csp::new().connect_domains(["https://api.example.com"]))
//!     .prefers_border(true);
//! let server = McpServer::builder(registry).app_page(page).build()?;
//! # drop(server);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::Read;
use std::path::{Path, PathBuf};

use rmcp::model::{ClientCapabilities, JsonObject, MetaObject, Resource, ResourceContents};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tools::catalog::ToolCatalog;
use crate::tools::ui::UI_SCHEME;

/// The extension's identifier, the key of its capability.
pub const APPS_EXTENSION_ID: &str = "io.modelcontextprotocol/ui";

/// The mime type of a page.
pub const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The largest page served, in bytes: a larger HTML string or file is an error of the build.
pub const MAX_PAGE_BYTES: usize = 4 * 1024 * 1024;

/// Why a page cannot be served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppPageError {
    /// The URI does not start with `ui://`.
    #[error("the page `{uri}` is not a `ui://` URI; name it like `ui://counter/view.html`")]
    NotUi {
        /// The URI given.
        uri: String,
    },
    /// Two pages have one URI.
    #[error("two pages are registered as `{uri}`; give each page its own URI")]
    Duplicate {
        /// The URI.
        uri: String,
    },
    /// The page is larger than [`MAX_PAGE_BYTES`].
    #[error(
        "the page `{uri}` is larger than {limit} bytes; move its scripts and styles to a CDN named in its `resourceDomains`"
    )]
    TooLarge {
        /// The page's URI.
        uri: String,
        /// The limit, in bytes.
        limit: usize,
    },
    /// The page's file could not be read.
    #[error("cannot read the page `{uri}` from `{}`: {source}", path.display())]
    Read {
        /// The page's URI.
        uri: String,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The page's file lies outside its root.
    #[error(
        "the page `{uri}` is read from `{}`, which is outside `{}`; keep pages inside the server's workdir",
        path.display(),
        root.display()
    )]
    OutsideRoot {
        /// The page's URI.
        uri: String,
        /// The file, as given.
        path: PathBuf,
        /// The folder it must stay in.
        root: PathBuf,
    },
    /// The page's file is not UTF-8 text.
    #[error("the page `{uri}` in `{}` is not UTF-8 text", path.display())]
    NotUtf8 {
        /// The page's URI.
        uri: String,
        /// The file.
        path: PathBuf,
    },
    /// A bundle's export names a page file but no `ui://` URI, and its compiled export none.
    #[error(
        "the export `{tool}` names a page file but no `ui://` URI; add `resourceUri: ui://...` to its `ui`, or `ui = \"ui://...\"` to its `#[export]`"
    )]
    NoUri {
        /// The tool.
        tool: String,
    },
    /// A bundle's export describes its page's `_meta.ui` wrongly.
    #[error("the page `{uri}` of `{tool}`: {message}")]
    Meta {
        /// The tool.
        tool: String,
        /// The page's URI.
        uri: String,
        /// What is wrong.
        message: String,
    },
    /// A served tool names a page that is not registered.
    #[error(
        "the tool `{tool}` shows the page `{uri}`, which is not registered; add it with `McpServerBuilder::app_page` (registered pages: {registered})"
    )]
    Unregistered {
        /// The tool.
        tool: String,
        /// The page it names.
        uri: String,
        /// The registered pages, comma-separated, or `none`.
        registered: String,
    },
}

/// The Content Security Policy a page asks its host for: the origins it may reach. Empty
/// lists (the default) let it reach nothing outside itself.
///
/// ```
/// use goondan_runtime::mcp::server::Csp;
/// let csp = Csp::new().connect_domains(["https://api.example.com"]);
/// assert_eq!(serde_json::to_value(&csp)?,
///            serde_json::json!({"connectDomains": ["https://api.example.com"]}));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Csp {
    /// Origins of its network requests (fetch, XHR, WebSocket): CSP `connect-src`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connect_domains: Vec<String>,
    /// Origins of its scripts, styles, images, fonts and media.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_domains: Vec<String>,
    /// Origins of the frames it nests: CSP `frame-src`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frame_domains: Vec<String>,
    /// Base URIs its document may set: CSP `base-uri`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub base_uri_domains: Vec<String>,
}

fn strings<S: Into<String>>(items: impl IntoIterator<Item = S>) -> Vec<String> {
    items.into_iter().map(Into::into).collect()
}

impl Csp {
    /// Nothing outside the page.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the origins of its network requests.
    #[must_use]
    pub fn connect_domains<S: Into<String>>(mut self, o: impl IntoIterator<Item = S>) -> Self {
        self.connect_domains = strings(o);
        self
    }

    /// Sets the origins of its scripts, styles, images, fonts and media.
    #[must_use]
    pub fn resource_domains<S: Into<String>>(mut self, o: impl IntoIterator<Item = S>) -> Self {
        self.resource_domains = strings(o);
        self
    }

    /// Sets the origins of the frames it nests.
    #[must_use]
    pub fn frame_domains<S: Into<String>>(mut self, o: impl IntoIterator<Item = S>) -> Self {
        self.frame_domains = strings(o);
        self
    }

    /// Sets the base URIs its document may set.
    #[must_use]
    pub fn base_uri_domains<S: Into<String>>(mut self, o: impl IntoIterator<Item = S>) -> Self {
        self.base_uri_domains = strings(o);
        self
    }
}

/// An asked permission: written `{}` as the extension says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Granted {}

/// The browser permissions a page asks its host for; a host may refuse them.
///
/// ```
/// use goondan_runtime::mcp::server::Permissions;
/// let p = Permissions::new().clipboard_write();
/// assert_eq!(serde_json::to_value(&p)?, serde_json::json!({"clipboardWrite": {}}));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Permissions {
    /// The camera.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub camera: Option<Granted>,
    /// The microphone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microphone: Option<Granted>,
    /// The position.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geolocation: Option<Granted>,
    /// Writing to the clipboard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clipboard_write: Option<Granted>,
}

impl Permissions {
    /// None asked.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for the camera.
    #[must_use]
    pub fn camera(mut self) -> Self {
        self.camera = Some(Granted {});
        self
    }

    /// Asks for the microphone.
    #[must_use]
    pub fn microphone(mut self) -> Self {
        self.microphone = Some(Granted {});
        self
    }

    /// Asks for the position.
    #[must_use]
    pub fn geolocation(mut self) -> Self {
        self.geolocation = Some(Granted {});
        self
    }

    /// Asks to write to the clipboard.
    #[must_use]
    pub fn clipboard_write(mut self) -> Self {
        self.clipboard_write = Some(Granted {});
        self
    }
}

/// A page's `_meta.ui`: its CSP, permissions, dedicated domain and border preference, as the
/// extension defines them on a resource (and as a bundle's export writes them under `ui`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageMeta {
    /// The origins it may reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csp: Option<Csp>,
    /// The browser permissions it asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<Permissions>,
    /// A dedicated origin for its frame, in the host's format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Whether the host draws a border and background around it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefers_border: Option<bool>,
}

/// Where a page's HTML comes from.
#[derive(Debug, Clone)]
enum Source {
    Html(String),
    File(PathBuf),
}

/// A page of MCP Apps: its `ui://` URI, its HTML (a string, or a file read when the server is
/// built) and its `_meta.ui`. Served by
/// [`McpServerBuilder::app_page`](super::McpServerBuilder::app_page); a tool shows it by
/// naming its URI in its export's `ui`.
#[derive(Debug, Clone)]
#[must_use]
pub struct AppPage {
    uri: String,
    source: Source,
    name: Option<String>,
    description: Option<String>,
    meta: PageMeta,
    root: Option<PathBuf>,
}

impl AppPage {
    /// The page at `uri` (a `ui://` URI) whose HTML is `html`.
    pub fn html(uri: impl Into<String>, html: impl Into<String>) -> Self {
        Self::with_source(uri.into(), Source::Html(html.into()))
    }

    /// The page at `uri` whose HTML is the file `path`, read when the server is built. A
    /// relative path is taken from the page's [`root`](Self::root), by default the server's
    /// workdir; the file must lie inside that root (after `..` and links are resolved).
    pub fn file(uri: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        Self::with_source(uri.into(), Source::File(path.into()))
    }

    fn with_source(uri: String, source: Source) -> Self {
        Self {
            uri,
            source,
            name: None,
            description: None,
            meta: PageMeta::default(),
            root: None,
        }
    }

    /// The page's URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Its name in `resources/list` (default: the URI without `ui://`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Its description in `resources/list`.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self
    }

    /// The origins it may reach (default: none outside itself).
    pub fn csp(mut self, csp: Csp) -> Self {
        self.meta.csp = Some(csp);
        self
    }

    /// The browser permissions it asks for (default: none).
    pub fn permissions(mut self, permissions: Permissions) -> Self {
        self.meta.permissions = Some(permissions);
        self
    }

    /// Whether the host draws a border and background around it (default: the host decides).
    pub fn prefers_border(mut self, border: bool) -> Self {
        self.meta.prefers_border = Some(border);
        self
    }

    /// A dedicated origin for its frame, in the host's format (default: the host's).
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.meta.domain = Some(domain.into());
        self
    }

    /// All of its `_meta.ui` at once.
    pub fn meta(mut self, meta: PageMeta) -> Self {
        self.meta = meta;
        self
    }

    /// The folder its file is read from and must stay in (default: the server's workdir).
    pub fn root(mut self, root: impl Into<PathBuf>) -> Self {
        self.root = Some(root.into());
        self
    }

    /// Reads the page: its HTML checked and bounded, its listing and its contents made once.
    fn load(self, workdir: &Path) -> Result<Page, AppPageError> {
        if !self.uri.starts_with(UI_SCHEME) || self.uri.len() == UI_SCHEME.len() {
            return Err(AppPageError::NotUi { uri: self.uri });
        }
        let html = match &self.source {
            Source::Html(html) if html.len() > MAX_PAGE_BYTES => {
                return Err(AppPageError::TooLarge {
                    uri: self.uri,
                    limit: MAX_PAGE_BYTES,
                });
            }
            Source::Html(html) => html.clone(),
            Source::File(path) => {
                read_confined(&self.uri, path, self.root.as_deref().unwrap_or(workdir))?
            }
        };
        let meta = ui_meta(&self.meta);
        let name = self
            .name
            .unwrap_or_else(|| self.uri[UI_SCHEME.len()..].to_owned());
        let mut resource = Resource::new(&self.uri, name)
            .with_mime_type(APP_MIME_TYPE)
            .with_size(html.len() as u64);
        if let Some(d) = self.description {
            resource = resource.with_description(d);
        }
        if let Some(meta) = &meta {
            resource = resource.with_meta(meta.clone());
        }
        let mut contents = ResourceContents::text(html, &self.uri).with_mime_type(APP_MIME_TYPE);
        if let Some(meta) = meta {
            contents = contents.with_meta(meta);
        }
        Ok(Page { resource, contents })
    }
}

/// `{ui: meta}`, or nothing when the page says nothing.
fn ui_meta(meta: &PageMeta) -> Option<MetaObject> {
    if meta == &PageMeta::default() {
        return None;
    }
    let ui = serde_json::to_value(meta).unwrap_or(Value::Null);
    Some(MetaObject(JsonObject::from_iter([("ui".into(), ui)])))
}

/// The file `path` (relative paths from `root`) as text, when it lies inside `root` and is at
/// most [`MAX_PAGE_BYTES`]: only that much is ever read.
fn read_confined(uri: &str, path: &Path, root: &Path) -> Result<String, AppPageError> {
    let read = |source| AppPageError::Read {
        uri: uri.to_owned(),
        path: path.to_path_buf(),
        source,
    };
    let root = root.canonicalize().map_err(|source| AppPageError::Read {
        uri: uri.to_owned(),
        path: root.to_path_buf(),
        source,
    })?;
    // Resolves `..` and every link: what is opened is what is checked.
    let real = root.join(path).canonicalize().map_err(read)?;
    if !real.starts_with(&root) {
        return Err(AppPageError::OutsideRoot {
            uri: uri.to_owned(),
            path: path.to_path_buf(),
            root,
        });
    }
    let file = std::fs::File::open(&real).map_err(read)?;
    let mut bytes = Vec::new();
    let limit = u64::try_from(MAX_PAGE_BYTES).unwrap_or(u64::MAX);
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(read)?;
    if bytes.len() > MAX_PAGE_BYTES {
        return Err(AppPageError::TooLarge {
            uri: uri.to_owned(),
            limit: MAX_PAGE_BYTES,
        });
    }
    String::from_utf8(bytes).map_err(|_| AppPageError::NotUtf8 {
        uri: uri.to_owned(),
        path: path.to_path_buf(),
    })
}

/// One page as it is served.
#[derive(Debug)]
struct Page {
    resource: Resource,
    contents: ResourceContents,
}

/// The pages a server serves, read when it is built.
#[derive(Debug, Default)]
pub(super) struct Pages {
    pages: Vec<Page>,
}

impl Pages {
    /// Reads `pages` (files from `workdir` unless a page has its own root) and checks that each
    /// page `catalog` names is among them.
    pub(super) fn load(
        pages: Vec<AppPage>,
        workdir: &Path,
        catalog: &ToolCatalog,
    ) -> Result<Self, AppPageError> {
        let mut loaded: Vec<Page> = Vec::with_capacity(pages.len());
        for page in pages {
            if loaded.iter().any(|p| p.resource.uri == page.uri) {
                return Err(AppPageError::Duplicate { uri: page.uri });
            }
            loaded.push(page.load(workdir)?);
        }
        let pages = Self { pages: loaded };
        for item in catalog.items() {
            let Some(uri) = item.ui().and_then(|ui| ui.resource_uri.as_deref()) else {
                continue;
            };
            if pages.get(uri).is_none() {
                let registered: Vec<&str> = pages
                    .pages
                    .iter()
                    .map(|p| p.resource.uri.as_str())
                    .collect();
                return Err(AppPageError::Unregistered {
                    tool: item.name().as_str().to_owned(),
                    uri: uri.to_owned(),
                    registered: if registered.is_empty() {
                        "none".to_owned()
                    } else {
                        registered.join(", ")
                    },
                });
            }
        }
        Ok(pages)
    }

    /// Whether there are none.
    pub(super) fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    fn get(&self, uri: &str) -> Option<&Page> {
        self.pages.iter().find(|p| p.resource.uri == uri)
    }

    /// Every page as `resources/list` lists it.
    pub(super) fn resources(&self) -> Vec<Resource> {
        self.pages.iter().map(|p| p.resource.clone()).collect()
    }

    /// The contents of the page at `uri`, as `resources/read` answers them.
    pub(super) fn read(&self, uri: &str) -> Option<ResourceContents> {
        self.get(uri).map(|p| p.contents.clone())
    }
}

/// The pages the Tool resources of `agent` in `bundle` name: each export whose `ui` has a
/// `page` (a file from the bundle's folder, which it must stay in), at the export's
/// `ui.resourceUri` or else its compiled export's (`{tool}__{export}` in `registry`), with the
/// rest of its `ui` as the page's `_meta.ui`. Exports that show one page name it once, or
/// name the same file.
pub(super) fn bundle_pages(
    bundle: &crate::bundle::Bundle,
    agent: &str,
    registry: &crate::tools::registry::ToolRegistry,
) -> Result<Vec<AppPage>, super::McpServerError> {
    let root = bundle
        .file()
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let mut pages: Vec<(AppPage, String)> = Vec::new();
    for resource in bundle.agent_tools(agent)? {
        let Some(spec) = bundle
            .get(&crate::bundle::Kind::Tool, &resource)
            .and_then(crate::bundle::Resource::spec)
        else {
            continue;
        };
        let exports = spec.get("exports").and_then(Value::as_array);
        for export in exports.into_iter().flatten() {
            let (Some(name), Some(ui)) = (
                export.get("name").and_then(Value::as_str),
                export.get("ui").and_then(Value::as_object),
            ) else {
                continue;
            };
            let Some(file) = ui.get("page").and_then(Value::as_str) else {
                continue;
            };
            let tool = format!("{resource}__{name}");
            let uri = match ui.get("resourceUri").and_then(Value::as_str) {
                Some(uri) => uri.to_owned(),
                None => registry
                    .get(&tool)
                    .and_then(|e| e.export().ui()?.resource_uri.clone())
                    .ok_or_else(|| AppPageError::NoUri { tool: tool.clone() })?,
            };
            let meta: JsonObject = ui
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "resourceUri" | "visibility" | "page"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let meta: PageMeta =
                serde_json::from_value(Value::Object(meta)).map_err(|e| AppPageError::Meta {
                    tool: tool.clone(),
                    uri: uri.clone(),
                    message: e.to_string(),
                })?;
            match pages.iter().find(|(p, _)| p.uri == uri) {
                Some((_, same)) if same == file => {}
                Some(_) => return Err(AppPageError::Duplicate { uri }.into()),
                None => {
                    let page = AppPage::file(&uri, file).root(&root).meta(meta);
                    pages.push((page, file.to_owned()));
                }
            }
        }
    }
    Ok(pages.into_iter().map(|(p, _)| p).collect())
}

/// The server's capability of the extension: the mime type of its pages.
pub(super) fn capability() -> JsonObject {
    JsonObject::from_iter([("mimeTypes".into(), serde_json::json!([APP_MIME_TYPE]))])
}

/// Whether the client renders pages: it declares the extension, with our mime type among its
/// `mimeTypes` when it lists them.
pub(super) fn client_renders_pages(capabilities: Option<&ClientCapabilities>) -> bool {
    let Some(settings) = capabilities
        .and_then(|c| c.extensions.as_ref())
        .and_then(|e| e.get(APPS_EXTENSION_ID))
    else {
        return false;
    };
    match settings.get("mimeTypes") {
        Some(Value::Array(types)) => types.iter().any(|t| t.as_str() == Some(APP_MIME_TYPE)),
        Some(_) => false,
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_s_meta_is_the_extension_s_ui_object_and_absent_when_empty() {
        assert!(ui_meta(&PageMeta::default()).is_none());
        let meta = PageMeta {
            csp: Some(Csp::new().resource_domains(["https://cdn.example.com"])),
            permissions: Some(Permissions::new().camera()),
            domain: None,
            prefers_border: Some(false),
        };
        let object = ui_meta(&meta).map(|m| Value::Object(m.0));
        assert_eq!(
            object,
            Some(serde_json::json!({"ui": {
                "csp": {"resourceDomains": ["https://cdn.example.com"]},
                "permissions": {"camera": {}},
                "prefersBorder": false,
            }}))
        );
    }

    #[test]
    fn a_client_renders_pages_when_it_declares_the_extension_with_our_mime_type() {
        let with = |settings: Value| {
            let mut caps = ClientCapabilities::default();
            let mut ext = rmcp::model::ExtensionCapabilities::new();
            if let Value::Object(o) = settings {
                ext.insert(APPS_EXTENSION_ID.into(), o);
            }
            caps.extensions = Some(ext);
            client_renders_pages(Some(&caps))
        };
        assert!(with(serde_json::json!({"mimeTypes": [APP_MIME_TYPE]})));
        assert!(with(serde_json::json!({})));
        assert!(!with(serde_json::json!({"mimeTypes": ["text/uri-list"]})));
        assert!(!client_renders_pages(Some(&ClientCapabilities::default())));
        assert!(!client_renders_pages(None));
    }
}
