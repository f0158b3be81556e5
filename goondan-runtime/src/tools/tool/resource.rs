//! [`Tool`], the resource: a name, a description, an error message limit and its exports;
//! and [`ToolBuilder`], which checks them.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use super::{Export, ToolDefinitionError, ToolSource};
use crate::tools::error::DEFAULT_ERROR_MESSAGE_LIMIT;
use crate::tools::name::{ToolName, validate_export_name, validate_resource_name};
use crate::tools::schema::check_parameters;

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
/// # Ok::<(), goondan_runtime::tools::tool::ToolDefinitionError>(())
/// ```
#[derive(Clone)]
pub struct Tool {
    pub(crate) info: ResourceInfo,
    pub(crate) exports: Vec<(ToolName, Export)>,
}

/// What the registry knows of a Tool resource besides its exports.
#[derive(Debug, Clone)]
pub struct ResourceInfo {
    pub(crate) name: String,
    description: Option<String>,
    error_message_limit: usize,
    help_url_base: Option<Arc<str>>,
    pub(crate) source: ToolSource,
    pub(crate) origin: String,
}

impl ResourceInfo {
    /// The resource's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its description.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// Its error message limit (SPEC-4).
    pub fn error_message_limit(&self) -> usize {
        self.error_message_limit
    }

    /// Where its own error codes are documented, if anywhere (RES-7).
    pub fn help_url_base(&self) -> Option<&str> {
        self.help_url_base.as_deref()
    }

    /// Where it comes from.
    pub fn source(&self) -> &ToolSource {
        &self.source
    }

    /// Where it was defined.
    pub fn origin(&self) -> &str {
        &self.origin
    }
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
        self.info.name()
    }

    /// The identity, `Tool/{name}` (REG-2).
    pub fn identity(&self) -> String {
        format!("Tool/{}", self.info.name)
    }

    /// The description.
    pub fn description(&self) -> Option<&str> {
        self.info.description()
    }

    /// How many characters of an error message the model sees (SPEC-4).
    pub fn error_message_limit(&self) -> usize {
        self.info.error_message_limit
    }

    /// Where the resource's own error codes are documented, if anywhere (RES-7).
    pub fn help_url_base(&self) -> Option<&str> {
        self.info.help_url_base()
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
        &self.info.source
    }

    /// Where the tool was defined, for error messages (a source location, an extension name).
    pub fn origin(&self) -> &str {
        &self.info.origin
    }
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.info.name)
            .field("description", &self.info.description)
            .field("error_message_limit", &self.info.error_message_limit)
            .field("help_url_base", &self.info.help_url_base)
            .field("exports", &self.exports)
            .field("source", &self.info.source)
            .field("origin", &self.info.origin)
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
    /// # Ok::<(), goondan_runtime::tools::tool::ToolDefinitionError>(())
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
        let invalid_name = |source| ToolDefinitionError::InvalidName {
            resource: resource.clone(),
            source,
        };
        validate_resource_name(&resource).map_err(invalid_name)?;
        if self.exports.is_empty() {
            return Err(ToolDefinitionError::NoExports { resource });
        }
        let mut seen = HashSet::new();
        let mut exports = Vec::with_capacity(self.exports.len());
        for export in self.exports {
            validate_export_name(export.name()).map_err(invalid_name)?;
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
            let full = ToolName::new(&resource, export.name()).map_err(invalid_name)?;
            exports.push((full, export));
        }
        let info = ResourceInfo {
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
        };
        Ok(Tool { info, exports })
    }
}
