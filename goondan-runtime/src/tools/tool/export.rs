//! [`Export`]: one function of a Tool resource: a name, a description, a parameter schema and
//! its handler.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures_util::FutureExt;
use serde_json::Value;

use crate::tools::annotations::ExportAnnotations;
use crate::tools::context::ToolContext;
use crate::tools::error::ToolError;
use crate::tools::handler::params::{LoneInput, ParamNames, named_schema};
use crate::tools::handler::{
    Handler, Outcome, ReadInput, ToolInput, TypedHandler, TypedSyncHandler, WholeInput,
};
use crate::tools::output_schema::OutputSchema;
use crate::tools::schema::{ArgValidator, schema_for};
use crate::tools::tool::registration::is_whole_schema;
use crate::tools::ui::ExportUi;

/// One export: a name, a description, a parameter schema and its handler.
#[derive(Clone)]
pub struct Export {
    name: String,
    description: Option<String>,
    parameters: Arc<Value>,
    handler: Arc<dyn Handler>,
    /// The handler does its work on the caller's thread (a plain `fn`).
    blocks: bool,
    timeout: Option<Duration>,
    validator: Arc<OnceLock<ArgValidator>>,
    annotations: Arc<ExportAnnotations>,
    output_schema: Option<Arc<OutputSchema>>,
    /// The page it shows and who may call it (MCP Apps).
    ui: Option<Arc<ExportUi>>,
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
        T: crate::tools::handler::IntoOutcome,
        E: Into<ToolError>,
    {
        Self::typed_outcome(name, schema_for::<I>(), WholeInput, move |ctx, input| {
            f(ctx, input).map(|result| result.map_err(Into::into).and_then(T::into_outcome))
        })
    }

    /// An export from a handler that returns an [`Outcome`] directly, as `#[tool]` generates:
    /// `read` reads its input from the arguments, which `parameters` describes.
    pub(crate) fn typed_outcome<I, R, F, Fut>(
        name: impl Into<String>,
        parameters: Arc<Value>,
        read: R,
        f: F,
    ) -> Self
    where
        I: ToolInput,
        R: ReadInput<I>,
        F: Fn(ToolContext, I) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Outcome, ToolError>> + Send + 'static,
    {
        let handler = TypedHandler::<I, _, _> {
            f,
            read,
            input: PhantomData,
        };
        Self::from_parts(name.into(), parameters, Arc::new(handler))
    }

    /// [`typed_outcome`](Self::typed_outcome) for a synchronous handler, as `#[tool]`
    /// generates for a plain `fn`.
    pub(crate) fn typed_sync_outcome<I, R, F>(
        name: impl Into<String>,
        parameters: Arc<Value>,
        read: R,
        f: F,
    ) -> Self
    where
        I: ToolInput,
        R: ReadInput<I>,
        F: Fn(&ToolContext, I) -> Result<Outcome, ToolError> + Send + Sync + 'static,
    {
        let handler = TypedSyncHandler::<I, _, _> {
            f,
            read,
            input: PhantomData,
        };
        Self {
            blocks: true,
            ..Self::from_parts(name.into(), parameters, Arc::new(handler))
        }
    }

    fn from_parts(name: String, parameters: Arc<Value>, handler: Arc<dyn Handler>) -> Self {
        Self {
            name,
            description: None,
            parameters,
            handler,
            blocks: false,
            timeout: None,
            validator: Arc::new(OnceLock::new()),
            annotations: Arc::default(),
            output_schema: None,
            ui: None,
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
    /// use goondan_runtime::{Export, ToolError, tools::annotations::ExportAnnotations, handler_fn};
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

    /// Sets the page the export shows and who may call it (MCP Apps, see
    /// [`ExportUi`]): MCP lists it as the tool's `_meta.ui`, and the MCP server serves the page.
    ///
    /// ```
    /// use goondan_runtime::{Export, ToolError, handler_fn};
    /// use goondan_runtime::tools::ui::{ExportUi, Visibility};
    /// let export = Export::new("increment", serde_json::json!({"type": "object"}),
    ///         handler_fn(|_ctx, _args| async { Ok::<_, ToolError>(1) }))
    ///     .with_ui(ExportUi::page("ui://counter/view.html").visibility(Visibility::App));
    /// assert_eq!(export.ui().and_then(|ui| ui.resource_uri.as_deref()),
    ///            Some("ui://counter/view.html"));
    /// ```
    pub fn with_ui(mut self, ui: ExportUi) -> Self {
        self.ui = Some(Arc::new(ui));
        self
    }

    /// The page the export shows and who may call it, when it says.
    pub fn ui(&self) -> Option<&ExportUi> {
        self.ui.as_deref()
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

    /// Whether the handler does its work on the caller's thread (a plain `fn` under
    /// `#[tool]`): the executor runs such a call on Tokio's blocking pool.
    pub fn blocks(&self) -> bool {
        self.blocks
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
            .field("ui", &self.ui)
            .finish_non_exhaustive()
    }
}

/// The schema and the reading of a lone parameter `T` of a function whose parameters `N`
/// names, the one place where `#[tool]`'s rule for it is applied: `T`'s own schema and the
/// whole arguments object when that schema is a whole input (see
/// [`is_whole_input`](crate::tools::tool::is_whole_input)), else an object with the one
/// property `N` names, read as a one-parameter tuple. Only the type's schema tells, and the
/// macro sees only the type's name, so this runs when the export is built.
pub(crate) fn lone_input<N: ParamNames, T: ToolInput>() -> (Arc<Value>, LoneInput) {
    let own = schema_for::<T>();
    if is_whole_schema(&own) {
        (own, LoneInput::Whole)
    } else {
        (named_schema::<N, (T,)>(), LoneInput::Named(N::NAMES))
    }
}
