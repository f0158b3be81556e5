//! How tools reach a registry: [`IntoTool`], the [`StaticTool`]s `#[tool]` links into the
//! program (`inventory`), and what the generated code calls.

use std::fmt;

use serde_json::Value;

use super::{Tool, ToolBuilder, ToolDefinitionError};
use crate::tools::handler::ToolInput;
use crate::tools::schema::{check_parameters, schema_for};

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
/// # Ok::<(), goondan_runtime::tools::tool::ToolDefinitionError>(())
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
/// fields, even none); a map, whose keys are free, is not. `#[tool]` applies this rule to a
/// lone parameter without doc comment or `serde`/`schemars` attributes, when the export is
/// built.
///
/// ```
/// use goondan_runtime::tools::tool::is_whole_input;
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
    // Generic in the type only; the reading below is compiled once.
    is_whole_schema(&schema_for::<T>())
}

/// Whether `schema` is an object with properties, or a closed one (see [`is_whole_input`]).
pub(crate) fn is_whole_schema(schema: &Value) -> bool {
    let has_properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    check_parameters(schema).is_ok() && (has_properties || closed)
}
