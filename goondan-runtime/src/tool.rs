//! A Tool resource: a name, a description, an error message limit and its exports, each with a
//! parameter schema and a handler (SPEC-1..6).

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::annotations::ExportAnnotations;
use crate::context::ToolContext;
use crate::error::{DEFAULT_ERROR_MESSAGE_LIMIT, ToolError};
use crate::handler::{Handler, Outcome, ToolInput, TypedHandler, TypedSyncHandler};
use crate::name::{NameError, ToolName, validate_export_name, validate_resource_name};
use crate::output_schema::OutputSchema;
use crate::schema::{ArgValidator, SchemaError, check_parameters, schema_for};

/// Where a tool comes from, as the catalog reports it (CAT-6):
/// `{type: config|extension|mcp, name, mcp?: {extensionName, serverName?}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSource {
    /// `config`, `extension` or `mcp`.
    #[serde(rename = "type")]
    pub kind: SourceKind,
    /// The resource or extension name.
    pub name: String,
    /// The MCP server behind the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpSource>,
}

/// The kind of a [`ToolSource`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// A Tool resource (compiled with `#[tool]` or declared in a bundle).
    Config,
    /// Registered at run time by an extension.
    Extension,
    /// Bridged from an MCP server.
    Mcp,
}

/// The MCP server of an `mcp` [`ToolSource`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpSource {
    /// The extension that runs the MCP client.
    pub extension_name: String,
    /// The server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
}

impl ToolSource {
    /// A Tool resource.
    pub fn config(name: impl Into<String>) -> Self {
        Self {
            kind: SourceKind::Config,
            name: name.into(),
            mcp: None,
        }
    }

    /// A tool an extension registered.
    pub fn extension(name: impl Into<String>) -> Self {
        Self {
            kind: SourceKind::Extension,
            name: name.into(),
            mcp: None,
        }
    }

    /// A tool bridged from an MCP server.
    pub fn mcp(
        name: impl Into<String>,
        extension_name: impl Into<String>,
        server_name: Option<String>,
    ) -> Self {
        Self {
            kind: SourceKind::Mcp,
            name: name.into(),
            mcp: Some(McpSource {
                extension_name: extension_name.into(),
                server_name,
            }),
        }
    }
}

/// One export: a name, a description, a parameter schema and its handler.
#[derive(Clone)]
pub struct Export {
    name: String,
    description: Option<String>,
    parameters: Arc<Value>,
    handler: Arc<dyn Handler>,
    timeout: Option<Duration>,
    validator: Arc<OnceLock<ArgValidator>>,
    annotations: Arc<ExportAnnotations>,
    output_schema: Option<Arc<OutputSchema>>,
}

impl Export {
    /// An export whose handler takes raw JSON arguments, validated against `parameters`.
    pub fn new(name: impl Into<String>, parameters: Value, handler: impl Handler) -> Self {
        Self::from_parts(name.into(), Arc::new(parameters), Arc::new(handler))
    }

    /// An export whose input type `I` gives the schema; `f` gets the context and the input.
    ///
    /// ```
    /// use goondan_runtime::{Export, ToolError};
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Add { a: i64, b: i64 }
    /// let export = Export::typed("add", |_ctx, input: Add| async move {
    ///     Ok::<_, ToolError>(input.a + input.b)
    /// });
    /// assert_eq!(export.parameters()["required"], serde_json::json!(["a", "b"]));
    /// ```
    pub fn typed<I, F, Fut, T, E>(name: impl Into<String>, f: F) -> Self
    where
        I: ToolInput,
        F: Fn(ToolContext, I) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
        T: crate::handler::IntoOutcome,
        E: Into<ToolError>,
    {
        let handler = TypedHandler::<I, _>::new(move |ctx, input| {
            let fut = f(ctx, input);
            async move {
                match fut.await {
                    Ok(v) => v.into_outcome(),
                    Err(e) => Err(e.into()),
                }
            }
        });
        Self::from_parts(name.into(), schema_for::<I>(), Arc::new(handler))
    }

    /// An export from a handler that returns an [`Outcome`] directly, as `#[tool]` generates.
    pub(crate) fn typed_outcome<I, F, Fut>(name: impl Into<String>, f: F) -> Self
    where
        I: ToolInput,
        F: Fn(ToolContext, I) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Outcome, ToolError>> + Send + 'static,
    {
        Self::from_parts(
            name.into(),
            schema_for::<I>(),
            Arc::new(TypedHandler::<I, _>::new(f)),
        )
    }

    /// An export from a synchronous handler that returns an [`Outcome`] directly, as `#[tool]`
    /// generates for a plain `fn`.
    pub(crate) fn typed_sync_outcome<I, F>(name: impl Into<String>, f: F) -> Self
    where
        I: ToolInput,
        F: Fn(&ToolContext, I) -> Result<Outcome, ToolError> + Send + Sync + 'static,
    {
        Self::from_parts(
            name.into(),
            schema_for::<I>(),
            Arc::new(TypedSyncHandler::<I, _>::new(f)),
        )
    }

    fn from_parts(name: String, parameters: Arc<Value>, handler: Arc<dyn Handler>) -> Self {
        Self {
            name,
            description: None,
            parameters,
            handler,
            timeout: None,
            validator: Arc::new(OnceLock::new()),
            annotations: Arc::default(),
            output_schema: None,
        }
    }

    /// Sets the description the model sees.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets this export's timeout, overriding the executor's default.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the title and effect hints (MCP `title` and `annotations`).
    ///
    /// ```
    /// use goondan_runtime::{Export, ToolError, annotations::ExportAnnotations, handler_fn};
    /// let export = Export::new("ls", serde_json::json!({"type": "object"}),
    ///         handler_fn(|_ctx, _args| async { Ok::<_, ToolError>(()) }))
    ///     .with_annotations(ExportAnnotations::new().title("List files").read_only(true));
    /// assert_eq!(export.annotations().read_only, Some(true));
    /// ```
    pub fn with_annotations(mut self, annotations: ExportAnnotations) -> Self {
        self.annotations = Arc::new(annotations);
        self
    }

    /// Publishes the output schema of `T` (opt-in, see [`OutputSchema`]): results then carry
    /// `structuredContent` valid against it.
    ///
    /// ```
    /// use goondan_runtime::{Export, ToolError};
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Add { a: i64, b: i64 }
    /// let export = Export::typed("add", |_ctx, input: Add| async move {
    ///     Ok::<_, ToolError>(input.a + input.b)
    /// })
    /// .with_output_schema::<i64>();
    /// let schema = export.output_schema().map(|s| s.schema().clone());
    /// assert_eq!(schema.map(|s| s["properties"]["result"]["type"].clone()),
    ///            Some(serde_json::json!("integer")));
    /// ```
    pub fn with_output_schema<T: schemars::JsonSchema>(self) -> Self {
        self.with_output_schema_value(OutputSchema::of::<T>())
    }

    /// Publishes an output schema given as data (a bundle's `outputSchema`, a bridged tool's).
    pub fn with_output_schema_value(mut self, schema: OutputSchema) -> Self {
        self.output_schema = Some(Arc::new(schema));
        self
    }

    /// The export's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The title and effect hints.
    pub fn annotations(&self) -> &ExportAnnotations {
        &self.annotations
    }

    /// The title and effect hints, shared.
    pub fn annotations_arc(&self) -> &Arc<ExportAnnotations> {
        &self.annotations
    }

    /// The published output schema, if the export opted in.
    pub fn output_schema(&self) -> Option<&Arc<OutputSchema>> {
        self.output_schema.as_ref()
    }

    /// The description.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The parameter schema.
    pub fn parameters(&self) -> &Value {
        &self.parameters
    }

    /// The parameter schema, shared.
    pub fn parameters_arc(&self) -> &Arc<Value> {
        &self.parameters
    }

    /// The handler.
    pub fn handler(&self) -> &Arc<dyn Handler> {
        &self.handler
    }

    /// The timeout, if this export sets one.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The compiled validator of the parameter schema, built on first use.
    pub fn validator(&self) -> &ArgValidator {
        self.validator
            .get_or_init(|| ArgValidator::new(&self.parameters))
    }
}

impl fmt::Debug for Export {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Export")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("parameters", &self.parameters)
            .field("timeout", &self.timeout)
            .field("annotations", &self.annotations)
            .field("output_schema", &self.output_schema)
            .finish_non_exhaustive()
    }
}

/// Why a [`Tool`] definition is refused (SPEC-2, SPEC-3, SPEC-6, NAME-3, NAME-5).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolDefinitionError {
    /// A name breaks the naming rules.
    #[error("tool `{resource}`: {source}")]
    InvalidName {
        /// The resource.
        resource: String,
        /// What is wrong.
        #[source]
        source: NameError,
    },
    /// The resource has no export (SPEC-2).
    #[error("tool `{resource}` has no exports; a Tool resource needs at least one")]
    NoExports {
        /// The resource.
        resource: String,
    },
    /// Two exports share a name (SPEC-3).
    #[error("tool `{resource}` has two exports named `{export}`; export names must be unique")]
    DuplicateExport {
        /// The resource.
        resource: String,
        /// The repeated export name.
        export: String,
    },
    /// An export's parameters are not an object schema (SPEC-6).
    #[error("tool `{resource}`, export `{export}`: {source}")]
    InvalidParameters {
        /// The resource.
        resource: String,
        /// The export.
        export: String,
        /// What is wrong.
        #[source]
        source: SchemaError,
    },
    /// An export marked `#[export(input = "whole")]` takes a type whose schema is not an
    /// object, so it cannot be the whole input (SPEC-6).
    #[error(
        "tool `{resource}`, export `{export}`: its input is marked `#[export(input = \"whole\")]`, \
         but the type's schema is not an object with properties ({source}); use a struct with \
         named fields, or remove `input = \"whole\"` to make the parameter a named property"
    )]
    WholeInputNotObject {
        /// The resource.
        resource: String,
        /// The export.
        export: String,
        /// What is wrong.
        #[source]
        source: SchemaError,
    },
}

impl ToolDefinitionError {
    /// The resource whose definition is refused.
    pub fn resource(&self) -> &str {
        match self {
            Self::InvalidName { resource, .. }
            | Self::NoExports { resource }
            | Self::DuplicateExport { resource, .. }
            | Self::InvalidParameters { resource, .. }
            | Self::WholeInputNotObject { resource, .. } => resource,
        }
    }
}

/// A Tool resource, ready to register.
///
/// `#[tool]` builds these; [`Tool::builder`] builds one by hand (for tools registered at run
/// time by an extension, say).
///
/// ```
/// use goondan_runtime::{Export, Tool, ToolError, handler_fn};
/// let tool = Tool::builder("weather")
///     .description("Weather lookups")
///     .export(Export::new(
///         "get",
///         serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}},
///                            "required": ["city"], "additionalProperties": false}),
///         handler_fn(|_ctx, _args| async { Ok::<_, ToolError>(21) }),
///     ))
///     .build()?;
/// assert_eq!(tool.error_message_limit(), 1000);
/// assert_eq!(tool.tool_names().next().map(|n| n.to_string()), Some("weather__get".into()));
/// # Ok::<(), goondan_runtime::tool::ToolDefinitionError>(())
/// ```
#[derive(Clone)]
pub struct Tool {
    name: String,
    description: Option<String>,
    error_message_limit: usize,
    help_url_base: Option<Arc<str>>,
    exports: Vec<(ToolName, Export)>,
    source: ToolSource,
    origin: String,
}

impl Tool {
    /// Starts a resource named `name`.
    pub fn builder(name: impl Into<String>) -> ToolBuilder {
        ToolBuilder {
            name: name.into(),
            description: None,
            error_message_limit: None,
            help_url_base: None,
            exports: Vec::new(),
            source: None,
            origin: None,
        }
    }

    /// The resource's name (`metadata.name`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The identity, `Tool/{name}` (REG-2).
    pub fn identity(&self) -> String {
        format!("Tool/{}", self.name)
    }

    /// The description.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// How many characters of an error message the model sees (SPEC-4).
    pub fn error_message_limit(&self) -> usize {
        self.error_message_limit
    }

    /// Where the resource's own error codes are documented, if anywhere (RES-7).
    pub fn help_url_base(&self) -> Option<&str> {
        self.help_url_base.as_deref()
    }

    /// The exports, in declaration order, with their full names.
    pub fn exports(&self) -> impl ExactSizeIterator<Item = (&ToolName, &Export)> {
        self.exports.iter().map(|(n, e)| (n, e))
    }

    /// The full names of the exports.
    pub fn tool_names(&self) -> impl ExactSizeIterator<Item = &ToolName> {
        self.exports.iter().map(|(n, _)| n)
    }

    /// Where the tool comes from.
    pub fn source(&self) -> &ToolSource {
        &self.source
    }

    /// Where the tool was defined, for error messages (a source location, an extension name).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    pub(crate) fn into_parts(self) -> ToolParts {
        ToolParts {
            name: self.name,
            description: self.description,
            error_message_limit: self.error_message_limit,
            help_url_base: self.help_url_base,
            exports: self.exports,
            source: self.source,
            origin: self.origin,
        }
    }
}

pub(crate) struct ToolParts {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) error_message_limit: usize,
    pub(crate) help_url_base: Option<Arc<str>>,
    pub(crate) exports: Vec<(ToolName, Export)>,
    pub(crate) source: ToolSource,
    pub(crate) origin: String,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("error_message_limit", &self.error_message_limit)
            .field("help_url_base", &self.help_url_base)
            .field("exports", &self.exports)
            .field("source", &self.source)
            .field("origin", &self.origin)
            .finish()
    }
}

/// Builds a [`Tool`]; [`build`](ToolBuilder::build) checks the resource rules.
#[must_use]
pub struct ToolBuilder {
    name: String,
    description: Option<String>,
    error_message_limit: Option<usize>,
    help_url_base: Option<Arc<str>>,
    exports: Vec<Export>,
    source: Option<ToolSource>,
    origin: Option<String>,
}

impl ToolBuilder {
    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the error message limit (default 1000, SPEC-4).
    pub fn error_message_limit(mut self, limit: usize) -> Self {
        self.error_message_limit = Some(limit);
        self
    }

    /// Sets where the resource's own error codes are documented (RES-7): an error of its
    /// handlers with a code the runtime does not document, and no `helpUrl` of its own, gets
    /// `{base}{code}`, or `{base}{anchor}` when `base` ends with `#` (the code in lower case, the
    /// GitHub anchor of a `## {code}` heading). Without a base, such errors have no `helpUrl`.
    ///
    /// ```
    /// use goondan_runtime::{Export, Tool, ToolError, handler_fn};
    /// let tool = Tool::builder("weather")
    ///     .help_url_base("https://weather.example/errors/")
    ///     .export(Export::new(
    ///         "get",
    ///         serde_json::json!({"type": "object"}),
    ///         handler_fn(|_ctx, _args| async {
    ///             Err::<(), _>(ToolError::new("no such city").with_code("E_WEATHER_CITY"))
    ///         }),
    ///     ))
    ///     .build()?;
    /// assert_eq!(tool.help_url_base(), Some("https://weather.example/errors/"));
    /// # Ok::<(), goondan_runtime::tool::ToolDefinitionError>(())
    /// ```
    pub fn help_url_base(mut self, base: impl Into<String>) -> Self {
        self.help_url_base = Some(Arc::from(base.into()));
        self
    }

    /// Adds an export.
    pub fn export(mut self, export: Export) -> Self {
        self.exports.push(export);
        self
    }

    /// Sets the source (default: `config` with the resource's name).
    pub fn source(mut self, source: ToolSource) -> Self {
        self.source = Some(source);
        self
    }

    /// Sets where the tool was defined, for error messages.
    pub fn origin(mut self, origin: impl Into<String>) -> Self {
        self.origin = Some(origin.into());
        self
    }

    /// Checks the names (NAME-3, NAME-5), that there is an export (SPEC-2), that export names
    /// are unique (SPEC-3) and that parameters are object schemas (SPEC-6).
    pub fn build(self) -> Result<Tool, ToolDefinitionError> {
        let resource = self.name;
        validate_resource_name(&resource).map_err(|source| ToolDefinitionError::InvalidName {
            resource: resource.clone(),
            source,
        })?;
        if self.exports.is_empty() {
            return Err(ToolDefinitionError::NoExports { resource });
        }
        let mut seen = HashSet::new();
        let mut exports = Vec::with_capacity(self.exports.len());
        for export in self.exports {
            validate_export_name(export.name()).map_err(|source| {
                ToolDefinitionError::InvalidName {
                    resource: resource.clone(),
                    source,
                }
            })?;
            if !seen.insert(export.name().to_owned()) {
                return Err(ToolDefinitionError::DuplicateExport {
                    resource,
                    export: export.name().to_owned(),
                });
            }
            check_parameters(export.parameters()).map_err(|source| {
                ToolDefinitionError::InvalidParameters {
                    resource: resource.clone(),
                    export: export.name().to_owned(),
                    source,
                }
            })?;
            let full = ToolName::new(&resource, export.name()).map_err(|source| {
                ToolDefinitionError::InvalidName {
                    resource: resource.clone(),
                    source,
                }
            })?;
            exports.push((full, export));
        }
        Ok(Tool {
            source: self
                .source
                .unwrap_or_else(|| ToolSource::config(resource.clone())),
            origin: self.origin.unwrap_or_else(|| format!("tool `{resource}`")),
            name: resource,
            description: self.description,
            error_message_limit: self
                .error_message_limit
                .unwrap_or(DEFAULT_ERROR_MESSAGE_LIMIT),
            help_url_base: self.help_url_base,
            exports,
        })
    }
}

/// Anything that turns into a [`Tool`]: a `Tool`, a [`StaticTool`] (what `#[tool]` generates
/// for modules and functions), a type with a `#[tool]` impl block, or the result of building
/// one. Building checks the resource rules, so it can fail; the error names the tool.
///
/// ```
/// use goondan_runtime::prelude::*;
///
/// /// Says hello.
/// #[tool(name = "greet")]
/// pub fn hello(name: String) -> String { format!("hello, {name}") }
///
/// let tool = hello::TOOL.into_tool()?;
/// assert_eq!(tool.name(), "greet");
/// # Ok::<(), goondan_runtime::tool::ToolDefinitionError>(())
/// ```
pub trait IntoTool {
    /// Builds the tool.
    fn into_tool(self) -> Result<Tool, ToolDefinitionError>;
}

impl IntoTool for Tool {
    fn into_tool(self) -> Result<Tool, ToolDefinitionError> {
        Ok(self)
    }
}

/// A build that already ran: registries and kits take it as it is and report its error.
impl IntoTool for Result<Tool, ToolDefinitionError> {
    fn into_tool(self) -> Result<Tool, ToolDefinitionError> {
        self
    }
}

/// A tool that `#[tool]` defined on a module or a function: it needs no state, so it is
/// registered through `inventory` and can be built any number of times.
///
/// A crate whose code is never referenced is not linked, and its `StaticTool`s vanish with it:
/// reference something from it (for example its `tools()` function) to keep them.
pub struct StaticTool {
    name: &'static str,
    build: fn() -> Result<Tool, ToolDefinitionError>,
    location: &'static str,
}

impl StaticTool {
    #[doc(hidden)]
    pub const fn new(
        name: &'static str,
        build: fn() -> Result<Tool, ToolDefinitionError>,
        location: &'static str,
    ) -> Self {
        Self {
            name,
            build,
            location,
        }
    }

    /// The resource's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Where it is defined (`path::to::module at file.rs:line`).
    pub fn location(&self) -> &'static str {
        self.location
    }

    /// Builds the tool. Schemas are computed once per type and shared by every build.
    ///
    /// Fails when the definition breaks a resource rule the macro cannot see at compile time:
    /// an export marked `#[export(input = "whole")]` whose input type's schema is not an
    /// object (SPEC-6).
    pub fn build(&self) -> Result<Tool, ToolDefinitionError> {
        (self.build)()
    }
}

impl fmt::Debug for StaticTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticTool")
            .field("name", &self.name)
            .field("location", &self.location)
            .finish()
    }
}

impl IntoTool for &StaticTool {
    fn into_tool(self) -> Result<Tool, ToolDefinitionError> {
        self.build()
    }
}

impl IntoTool for StaticTool {
    fn into_tool(self) -> Result<Tool, ToolDefinitionError> {
        self.build()
    }
}

inventory::collect!(StaticTool);

/// Every [`StaticTool`] linked into this program, sorted by name (inventory's order is not
/// stable).
pub fn linked_tools() -> Vec<&'static StaticTool> {
    let mut all: Vec<_> = inventory::iter::<StaticTool>.into_iter().collect();
    all.sort_by(|a, b| a.name.cmp(b.name).then(a.location.cmp(b.location)));
    all
}

/// Builds what `#[tool]` generated. The macro checks the names and exports at compile time;
/// what only the input types' schemas tell (SPEC-6) is checked here, and reported as an error
/// naming the tool, never as a panic. A generated named input is always an object, and a
/// lone parameter is read whole only when its schema is one, so a parameter schema that is
/// not an object comes from `#[export(input = "whole")]`.
#[doc(hidden)]
pub fn finish_generated(builder: ToolBuilder) -> Result<Tool, ToolDefinitionError> {
    builder.build().map_err(|err| match err {
        ToolDefinitionError::InvalidParameters {
            resource,
            export,
            source,
        } => ToolDefinitionError::WholeInputNotObject {
            resource,
            export,
            source,
        },
        other => other,
    })
}

/// Whether `T` is read as a whole input object rather than as one named property: its schema
/// is an object with named properties, or one that allows no other key (a struct with named
/// fields, even none); a map, whose keys are free, is not. `#[tool]` asks this for a lone
/// parameter without doc comment or `serde`/`schemars` attributes.
///
/// ```
/// use goondan_runtime::tool::is_whole_input;
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Point { x: i32, y: i32 }
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Slug(String);
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Nothing {}
/// assert!(is_whole_input::<Point>());
/// assert!(is_whole_input::<Nothing>());
/// assert!(!is_whole_input::<Slug>());
/// assert!(!is_whole_input::<std::collections::HashMap<String, i32>>());
/// ```
pub fn is_whole_input<T: ToolInput>() -> bool {
    let schema = schema_for::<T>();
    let has_properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    check_parameters(&schema).is_ok() && (has_properties || closed)
}

/// The descriptive part of an export, without its handler: what a bundle's Tool resource
/// declares (SPEC-7) and what catalogs show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportSpec {
    /// The export's name.
    pub name: String,
    /// The description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The parameter schema.
    pub parameters: Value,
    /// The title and effect hints.
    #[serde(default, skip_serializing_if = "ExportAnnotations::is_empty")]
    pub annotations: ExportAnnotations,
    /// The published output schema, if any.
    #[serde(
        default,
        rename = "outputSchema",
        skip_serializing_if = "Option::is_none"
    )]
    pub output_schema: Option<OutputSchema>,
}

impl From<&Export> for ExportSpec {
    fn from(e: &Export) -> Self {
        Self {
            name: e.name.clone(),
            description: e.description.clone(),
            parameters: (*e.parameters).clone(),
            annotations: (*e.annotations).clone(),
            output_schema: e.output_schema.as_deref().cloned(),
        }
    }
}
