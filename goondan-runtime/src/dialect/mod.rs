//! Tool dialects: the catalog in a model provider's tool format, the provider's tool calls as
//! [`ToolCall`]s, and each [`ToolCallResult`] as the provider's tool-result message.
//!
//! A dialect is a [`ToolDialect`]: what one provider (or MCP) does with tools. Each model
//! provider owns its dialect, in its own module under `provider` (OpenAI Chat Completions and
//! Responses, Anthropic Messages, Gemini `generateContent`); the Model Context Protocol's
//! dialect, which belongs to no provider, is [`mcp`]. This module holds what they share: the
//! [`Dialect`] handle (with [`Dialect::tools_json`]), the errors, the schema helpers, and the
//! JSON a built-in dialect renders a catalog into: built from the catalog's own names,
//! descriptions and schemas by reference, then written as a request's `tools` text or turned
//! into a [`Value`], one rendering for both.
//!
//! Every dialect is derived at send time from the neutral schema of each export
//! ([`crate::tools::schema`]).
//!
//! OpenAI's strict mode and Gemini's `Schema` cannot express every schema (free-form maps,
//! values of any type, recursion, ...). Such a tool is still sent, alone in a looser form that
//! carries its full schema: OpenAI `strict: false` with the neutral schema, Gemini
//! `parametersJsonSchema` instead of `parameters`. The rest of the catalog stays strict. Each
//! fallback is said once per process in a `dialect.strict_fallback` trace event, and
//! [`Dialect::strict_problems`] lists them with the JSON path and the reason. The executor
//! checks every call against the neutral schema either way. Only a parameter schema that is not
//! an object at all is a [`DialectError`], never a panic.
//!
//! | dialect | [`Dialect`] | where |
//! |---|---|---|
//! | OpenAI Chat Completions | `Dialect::OPENAI_CHAT` | `provider::openai` (`chat_tools`, `parse_chat_calls`, `chat_result`) |
//! | OpenAI Responses | `Dialect::OPENAI_RESPONSES` | `provider::openai` (`responses_tools`, `parse_responses_calls`, `responses_result`) |
//! | Anthropic Messages | `Dialect::ANTHROPIC` | `provider::anthropic` (`tools`, `parse_calls`, `tool_result`) |
//! | Gemini `generateContent` | `Dialect::GEMINI` | `provider::gemini` (`tools`, `parse_calls`, `function_response`) |
//! | MCP `tools/list`, `tools/call` | [`Dialect::MCP`] | [`mcp`] ([`mcp::tools_list`], [`mcp::parse_call`], [`mcp::call_result`]) |
//!
//! Malformed arguments (not JSON, not an object) never fail parsing: the call keeps them as they
//! came (a JSON string stays a `Value::String`), and the executor answers it with
//! `E_TOOL_INVALID_ARGS`, so the model learns what went wrong.
//!
//! ```
//! use goondan_runtime::dialect::Dialect;
//! use goondan_runtime::{Export, Tool, ToolCatalog, ToolError, ToolRegistry};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add { a: i64, b: i64 }
//! let tool = Tool::builder("calc")
//!     .export(Export::typed("add", |_ctx, i: Add| async move { Ok::<_, ToolError>(i.a + i.b) }))
//!     .build()?;
//! let registry = ToolRegistry::builder().tool(tool).build()?;
//! let catalog = ToolCatalog::all(&registry);
//!
//! let tools = Dialect::MCP.tools(&catalog)?;
//! assert_eq!(tools["tools"][0]["name"], "calc__add");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod json;
pub mod mcp;

use std::borrow::Cow;
use std::sync::LazyLock;

use serde_json::Map;
use serde_json::{Value, json};

pub(crate) use self::json::{Json, Object};

use crate::tools::catalog::{CatalogItem, ToolCatalog};
use crate::tools::error::ToolError;
use crate::tools::result::{ToolCall, ToolCallResult, ToolStatus};

/// What a provider (or MCP) does with tools: the catalog in its tool format, its tool calls
/// read back, and a result written as its tool-result message.
///
/// Implement it for the dialect of a provider of your own (see `provider::ProviderAdapter`),
/// and wrap it in a [`Dialect`] with [`Dialect::new`]. A dialect renders a tool once, in
/// [`tool`](Self::tool); the catalog's array ([`tools`](Self::tools)) and its JSON text
/// ([`tools_json`](Self::tools_json)) follow from it unless the dialect writes them itself.
///
/// ```
/// use goondan_runtime::dialect::{Dialect, DialectError, ParseError, ToolDialect};
/// use goondan_runtime::{CatalogItem, ToolCall, ToolCallResult, ToolCatalog, ToolName};
/// use serde_json::{Value, json};
///
/// /// Tools as `{"fn": name}`, calls as `{"calls": [{"id", "fn", "args"}]}`.
/// struct Tiny;
///
/// impl ToolDialect for Tiny {
///     fn name(&self) -> &'static str { "tiny" }
///     fn tool(&self, item: &CatalogItem) -> Result<Value, DialectError> {
///         Ok(json!({"fn": item.name().as_str()}))
///     }
///     fn parse_calls(&self, answer: &Value, _: &ToolCatalog) -> Result<Vec<ToolCall>, ParseError> {
///         let calls = answer["calls"].as_array().map(Vec::as_slice).unwrap_or_default();
///         Ok(calls.iter().map(|c| ToolCall::new(
///             c["id"].as_str().unwrap_or_default(),
///             c["fn"].as_str().unwrap_or_default(),
///             c["args"].clone(),
///         )).collect())
///     }
///     fn render_result(&self, result: &ToolCallResult) -> Value {
///         json!({"id": result.tool_call_id, "text": goondan_runtime::dialect::result_text(result)})
///     }
/// }
///
/// static TINY: Tiny = Tiny;
/// let dialect = Dialect::new(&TINY);
/// let mut catalog = ToolCatalog::new();
/// catalog.push(CatalogItem::new(ToolName::new("calc", "add")?));
/// assert_eq!(dialect.tools(&catalog)?, json!([{"fn": "calc__add"}]));
/// assert_eq!(dialect.tools_json(&catalog)?, r#"[{"fn":"calc__add"}]"#);
/// let calls = dialect.parse_calls(&json!({"calls": [{"id": "1", "fn": "calc__add", "args": {}}]}), &catalog)?;
/// assert_eq!(calls[0].name, "calc__add");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait ToolDialect: Send + Sync + 'static {
    /// The dialect's name: `openai`, `anthropic`, `mcp`, ... (command lines, [`Display`](std::fmt::Display)).
    fn name(&self) -> &'static str;

    /// The name in [`DialectError::dialect`] (both OpenAI APIs say `openai`); the name by
    /// default.
    fn family(&self) -> &'static str {
        self.name()
    }

    /// One catalog item in this dialect's tool form.
    fn tool(&self, item: &CatalogItem) -> Result<Value, DialectError>;

    /// The catalog as the value of the request's tool field: by default the array of the
    /// items of [`tool`](Self::tool), in catalog order.
    fn tools(&self, catalog: &ToolCatalog) -> Result<Value, DialectError> {
        catalog
            .items()
            .iter()
            .map(|item| self.tool(item))
            .collect::<Result<_, _>>()
            .map(Value::Array)
    }

    /// The catalog's tool field as JSON text, the bytes a request carries: exactly
    /// `serde_json::to_string(&self.tools(catalog)?)`; by default written from
    /// [`tools`](Self::tools). The built-in dialects write it from the catalog's own names,
    /// descriptions and schemas, without copying them into a [`Value`] first.
    fn tools_json(&self, catalog: &ToolCatalog) -> Result<String, DialectError> {
        Ok(self.tools(catalog)?.to_string())
    }

    /// The tools of `catalog` this dialect sends in a looser form, because its strict form
    /// cannot express them, each with the path and reason; none by default (a dialect that
    /// takes any JSON Schema).
    fn strict_problems(&self, catalog: &ToolCatalog) -> Vec<DialectError> {
        let _ = catalog;
        Vec::new()
    }

    /// The tool calls of a provider answer.
    fn parse_calls(
        &self,
        answer: &Value,
        catalog: &ToolCatalog,
    ) -> Result<Vec<ToolCall>, ParseError>;

    /// One result as the provider's tool-result message or block.
    fn render_result(&self, result: &ToolCallResult) -> Value;
}

/// A [`ToolDialect`], with the rendering of a catalog as JSON text ([`Dialect::tools_json`]).
///
/// The built-in dialects are the associated constants: `Dialect::OPENAI_CHAT`,
/// `Dialect::OPENAI_RESPONSES`, `Dialect::ANTHROPIC` and `Dialect::GEMINI` (with the `providers`
/// feature, next to their providers) and [`Dialect::MCP`]; `Dialect::ALL` lists them, and
/// `"openai".parse::<Dialect>()` finds a built-in dialect or a registered provider's by name.
/// Two dialects are equal when their names are.
#[derive(Clone, Copy)]
pub struct Dialect {
    imp: &'static dyn ToolDialect,
}

impl Dialect {
    /// The Model Context Protocol's dialect ([`mcp`]).
    pub const MCP: Dialect = Dialect::new(&mcp::Mcp);

    /// A dialect, built in or of your own.
    pub const fn new(imp: &'static dyn ToolDialect) -> Dialect {
        Dialect { imp }
    }

    /// The name used on command lines: `openai`, `openai-responses`, `anthropic`, `gemini`, `mcp`.
    pub fn as_str(self) -> &'static str {
        self.imp.name()
    }

    /// The dialect itself.
    pub fn get(self) -> &'static dyn ToolDialect {
        self.imp
    }

    /// The catalog as the value of the request's tool field (see each dialect).
    pub fn tools(self, catalog: &ToolCatalog) -> Result<Value, DialectError> {
        self.imp.tools(catalog)
    }

    /// The catalog's tool field as JSON text: exactly `serde_json::to_string(&self.tools(catalog)?)`.
    /// The same catalog is the same bytes on every request (a provider's prompt cache hits).
    ///
    /// ```
    /// use goondan_runtime::dialect::Dialect;
    /// use goondan_runtime::prelude::*;
    /// use goondan_runtime::ToolCatalog;
    ///
    /// /// Echoes.
    /// #[tool(name = "echo")]
    /// pub fn echo(text: String) -> String { text }
    ///
    /// let registry = ToolRegistry::builder().tool(echo::TOOL).build()?;
    /// let catalog = ToolCatalog::build(&registry, ["echo"])?;
    /// for dialect in Dialect::ALL {
    ///     let text = dialect.tools_json(&catalog)?;
    ///     assert_eq!(text, serde_json::to_string(&dialect.tools(&catalog)?)?);
    ///     assert_eq!(text, dialect.tools_json(&catalog)?);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tools_json(self, catalog: &ToolCatalog) -> Result<String, DialectError> {
        self.imp.tools_json(catalog)
    }

    /// The tools of `catalog` this dialect sends in its looser form, because its strict form
    /// cannot express them (see the module docs), each with the path and reason. Empty for
    /// dialects that take any JSON Schema (Anthropic, MCP).
    ///
    /// ```
    /// use goondan_runtime::dialect::Dialect;
    /// use goondan_runtime::{CatalogItem, ToolCatalog, ToolName};
    ///
    /// let mut catalog = ToolCatalog::new();
    /// let mut item = CatalogItem::new(ToolName::new("shell", "run")?);
    /// item.set_parameters(serde_json::json!({"type": "object", "properties": {
    ///     "env": {"type": "object", "additionalProperties": {"type": "string"}}}}));
    /// catalog.push(item);
    /// let problems = Dialect::OPENAI_CHAT.strict_problems(&catalog);
    /// assert_eq!(problems[0].path, "/properties/env/additionalProperties");
    /// // Still sent: alone, not strict, with its full schema.
    /// let tools = Dialect::OPENAI_CHAT.tools(&catalog)?;
    /// assert_eq!(tools[0]["function"]["strict"], false);
    /// assert!(Dialect::ANTHROPIC.strict_problems(&catalog).is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn strict_problems(self, catalog: &ToolCatalog) -> Vec<DialectError> {
        self.imp.strict_problems(catalog)
    }

    /// The tool calls of a provider response (see each dialect for the shapes accepted).
    pub fn parse_calls(
        self,
        response: &Value,
        catalog: &ToolCatalog,
    ) -> Result<Vec<ToolCall>, ParseError> {
        self.imp.parse_calls(response, catalog)
    }

    /// One result as the provider's tool-result message or block.
    pub fn render_result(self, result: &ToolCallResult) -> Value {
        self.imp.render_result(result)
    }
}

impl PartialEq for Dialect {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Dialect {}

impl std::hash::Hash for Dialect {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl std::fmt::Debug for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Dialect({})", self.as_str())
    }
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A dialect name that no built-in dialect or registered provider has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format `{name}`: expected one of {known}")]
pub struct UnknownDialect {
    /// The name given.
    pub name: String,
    /// The names known, as a list for the message (`` `openai`, `mcp` ``).
    pub known: String,
}

/// A tool whose parameters a provider cannot express.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool `{tool}` cannot be sent to {dialect}: at `{path}`, {reason}")]
pub struct DialectError {
    /// The tool's full name.
    pub tool: String,
    /// The dialect (`openai`, `gemini`, ...).
    pub dialect: &'static str,
    /// A JSON pointer into the tool's neutral parameter schema (`""` is the root).
    pub path: String,
    /// What cannot be expressed, and what to change.
    pub reason: String,
}

/// A provider response that does not have the documented shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed {provider} response at `{path}`: {reason}")]
pub struct ParseError {
    /// The provider format.
    pub provider: &'static str,
    /// A JSON pointer into the response.
    pub path: String,
    /// What was expected.
    pub reason: String,
}

impl ParseError {
    pub(crate) fn new(provider: &'static str, path: impl Into<String>, reason: &str) -> Self {
        Self {
            provider,
            path: path.into(),
            reason: reason.to_owned(),
        }
    }
}

/// A schema problem found while converting, before the tool name is attached.
#[derive(Debug)]
pub(crate) struct Unsupported {
    pub(crate) path: String,
    pub(crate) reason: String,
}

impl Unsupported {
    pub(crate) fn at(path: impl std::fmt::Display, reason: impl Into<String>) -> Self {
        Self {
            path: path.to_string(),
            reason: reason.into(),
        }
    }

    pub(crate) fn for_tool(self, item: &CatalogItem, dialect: &'static str) -> DialectError {
        DialectError {
            tool: item.name().as_str().to_owned(),
            dialect,
            path: self.path,
            reason: self.reason,
        }
    }
}

/// Where a node of a parameter schema is: a JSON pointer into the neutral schema, written out
/// only when a problem is found there.
#[derive(Clone, Copy)]
pub(crate) enum Pointer<'p> {
    /// The schema itself (`""`).
    Root,
    /// A key under a node (written escaped).
    Key(&'p Pointer<'p>, &'p str),
    /// An item of an array under a node.
    Index(&'p Pointer<'p>, usize),
}

impl<'p> Pointer<'p> {
    /// The node under `key`.
    pub(crate) fn key(&'p self, key: &'p str) -> Pointer<'p> {
        Pointer::Key(self, key)
    }

    /// The item `index` of the array under this node.
    pub(crate) fn index(&'p self, index: usize) -> Pointer<'p> {
        Pointer::Index(self, index)
    }
}

impl std::fmt::Display for Pointer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pointer::Root => Ok(()),
            Pointer::Key(parent, key) => {
                write!(f, "{parent}/{}", crate::tools::schema::escape_pointer(key))
            }
            Pointer::Index(parent, index) => write!(f, "{parent}/{index}"),
        }
    }
}

/// Every item of `catalog` in a dialect's tool form (`tool`), in catalog order.
pub(crate) fn each_tool<'a>(
    catalog: &'a ToolCatalog,
    tool: impl Fn(&'a CatalogItem) -> Result<Json<'a>, DialectError>,
) -> Result<Json<'a>, DialectError> {
    catalog
        .items()
        .iter()
        .map(tool)
        .collect::<Result<_, _>>()
        .map(Json::Array)
}

/// The tools of `catalog` whose parameters `check` refuses, as errors of `dialect`.
pub(crate) fn strict_problems_by(
    catalog: &ToolCatalog,
    dialect: &'static str,
    check: impl Fn(&Value) -> Result<(), Unsupported>,
) -> Vec<DialectError> {
    catalog
        .items()
        .iter()
        .filter_map(|item| {
            check(parameters_of(item))
                .err()
                .map(|e| e.for_tool(item, dialect))
        })
        .collect()
}

/// Says once per process, per dialect and tool, that a tool is sent in its looser form.
pub(crate) fn note_fallback(dialect: &'static str, item: &CatalogItem, why: &Unsupported) {
    type Said = std::collections::BTreeSet<(&'static str, String)>;
    static SAID: std::sync::Mutex<Said> = std::sync::Mutex::new(Said::new());
    let key = (dialect, item.name().as_str().to_owned());
    if !SAID.lock().unwrap_or_else(|e| e.into_inner()).insert(key) {
        return;
    }
    tracing::info!(
        name: "dialect.strict_fallback",
        target: "goondan::dialect",
        dialect,
        tool = item.name().as_str(),
        path = %why.path,
        reason = %why.reason,
        "dialect.strict_fallback"
    );
}

/// The parameters of the looser form, for a tool whose strict form failed with `why`: its
/// neutral schema without the `$schema` marker, said once per process
/// ([`note_fallback`]). A schema that is not an object at all has no looser form either.
pub(crate) fn loose_parameters<'a>(
    dialect: &'static str,
    item: &CatalogItem,
    neutral: &'a Value,
    why: &Unsupported,
) -> Result<Json<'a>, DialectError> {
    require_object_root(neutral).map_err(|e| e.for_tool(item, dialect))?;
    note_fallback(dialect, item, why);
    if neutral.get("$schema").is_none() {
        return Ok(Json::from(neutral));
    }
    let mut loose = neutral.clone();
    if let Some(obj) = loose.as_object_mut() {
        obj.remove("$schema");
    }
    Ok(Json::Value(Cow::Owned(loose)))
}

/// The parameters of an item, or the empty object schema when it has none.
pub(crate) fn parameters_of(item: &CatalogItem) -> &Value {
    // What an item without parameters shows: a constant of the schema, not of any catalog.
    static EMPTY: LazyLock<Value> = LazyLock::new(crate::tools::schema::empty_object_schema);
    item.parameters().map_or(&*EMPTY, |p| &**p)
}

pub(crate) use crate::tools::schema::field;

/// Whether a schema node has `key` (see [`field`]).
pub(crate) fn has_field(node: &Map<String, Value>, key: &str) -> bool {
    field(node, key).is_some()
}

/// Fails unless the root of a parameter schema is a plain object schema.
pub(crate) fn require_object_root(schema: &Value) -> Result<(), Unsupported> {
    let is_object = schema
        .as_object()
        .is_some_and(|o| field(o, "type").and_then(Value::as_str) == Some("object"));
    if !is_object {
        return Err(Unsupported::at(
            "",
            "the parameters must be an object schema (`type: \"object\"`)",
        ));
    }
    Ok(())
}

/// Parses a JSON-encoded arguments string. Text that is not JSON is kept as a string, so the
/// executor refuses the call with `E_TOOL_INVALID_ARGS`; an empty string means no arguments.
pub(crate) fn arguments_from_str(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Map::new());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// A string field of `obj`, or a parse error naming `path/key`.
pub(crate) fn str_field<'a>(
    obj: &'a Value,
    key: &str,
    provider: &'static str,
    path: &str,
) -> Result<&'a str, ParseError> {
    obj.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ParseError::new(provider, format!("{path}/{key}"), "expected a string"))
}

/// The first `oneOf` / `anyOf` of a schema node, with its key. An empty union accepts nothing
/// and is refused.
pub(crate) fn first_union<'a>(
    obj: &'a Map<String, Value>,
    path: &Pointer<'_>,
) -> Result<Option<(&'static str, &'a [Value])>, Unsupported> {
    for key in ["oneOf", "anyOf"] {
        let Some(branches) = field(obj, key).and_then(Value::as_array) else {
            continue;
        };
        if branches.is_empty() {
            return Err(Unsupported::at(
                path.key(key),
                "an empty union accepts nothing",
            ));
        }
        return Ok(Some((key, branches)));
    }
    Ok(None)
}

/// A union whose branches are all string constants (`{type: string, const}` or a string
/// `enum`), as one enum node: `fields` (the dialect's spelling of the type, and any more), the
/// values, and the node's description followed by each value's description as a
/// `value: description` line, written into `out`. `false`, leaving `out` as it was, for any
/// other union.
pub(crate) fn string_enum<'a>(
    out: &mut Object<'a>,
    obj: &'a Map<String, Value>,
    branches: &'a [Value],
    fields: &[(&'static str, &'static str)],
) -> bool {
    let mut values = Vec::new();
    let mut docs: Vec<String> = field(obj, "description")
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
        .map(str::to_owned)
        .into_iter()
        .collect();
    for b in branches {
        let Some(branch) = b.as_object() else {
            return false;
        };
        let allowed = ["type", "const", "enum", "description"];
        if branch.keys().any(|k| !allowed.contains(&k.as_str())) {
            return false;
        }
        if field(branch, "type").is_some_and(|t| t != "string") {
            return false;
        }
        let consts: Vec<&Value> = match (field(branch, "const"), field(branch, "enum")) {
            (Some(c), None) => vec![c],
            (None, Some(Value::Array(e))) => e.iter().collect(),
            _ => return false,
        };
        for c in consts {
            let Some(s) = c.as_str() else {
                return false;
            };
            if let Some(d) = field(branch, "description").and_then(Value::as_str) {
                docs.push(format!("`{s}`: {d}"));
            }
            values.push(Json::from(s));
        }
    }
    for &(k, v) in fields {
        out.insert(k, v);
    }
    out.insert("enum", Json::Array(values));
    if !docs.is_empty() {
        out.insert("description", Json::Str(Cow::Owned(docs.join("\n"))));
    }
    true
}

/// For an object with properties of its own next to `oneOf`/`anyOf` (a struct with a flattened
/// enum): the same union with the object's properties and `required` merged into each branch,
/// for dialects without `unevaluatedProperties`. `None` when a branch is not an object schema.
pub(crate) fn distribute(obj: &Map<String, Value>) -> Option<Value> {
    let (key, branches) = ["oneOf", "anyOf"]
        .into_iter()
        .find_map(|k| Some((k, obj.get(k)?.as_array()?)))?;
    let own = obj.get("properties")?.as_object()?;
    let own_required = obj.get("required").and_then(Value::as_array);
    let mut merged = Vec::with_capacity(branches.len());
    for b in branches {
        let mut branch = b.as_object()?.clone();
        let mut properties = own.clone();
        properties.extend(branch.get("properties")?.as_object()?.clone());
        branch.insert("properties".into(), Value::Object(properties));
        let mut required: Vec<Value> = own_required.cloned().unwrap_or_default();
        required.extend(
            branch
                .get("required")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        );
        branch.insert("required".into(), Value::Array(required));
        branch.remove("unevaluatedProperties");
        merged.push(Value::Object(branch));
    }
    let mut out = Map::new();
    if let Some(d) = obj.get("description") {
        out.insert("description".into(), d.clone());
    }
    out.insert(key.into(), Value::Array(merged));
    Some(Value::Object(out))
}

/// The error for a union next to properties whose branches cannot take them.
pub(crate) fn undistributable(path: &Pointer<'_>) -> Unsupported {
    Unsupported::at(
        path,
        "a struct with a flattened enum whose variants are not all structs cannot be expressed",
    )
}

/// Splits `null` off a node: `type: [T, "null"]` or an `anyOf` with a `{type: "null"}` branch.
/// Returns the node without null (the node itself when it allows no null) and whether null
/// was allowed.
pub(crate) fn split_null(node: &Map<String, Value>) -> (Cow<'_, Map<String, Value>>, bool) {
    if let Some(Value::Array(types)) = field(node, "type")
        && types.iter().any(|t| t == "null")
    {
        let mut out = node.clone();
        let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        let ty = match rest.as_slice() {
            [one] => one.clone(),
            _ => Value::Array(rest),
        };
        out.insert("type".into(), ty);
        if let Some(Value::Array(values)) = out.get_mut("enum") {
            values.retain(|v| !v.is_null());
        }
        return (Cow::Owned(out), true);
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = field(node, key) else {
            continue;
        };
        let is_null = |b: &Value| {
            b.get("type").is_some_and(|t| t == "null")
                && b.as_object().is_some_and(|o| o.len() == 1)
        };
        if !branches.iter().any(is_null) {
            continue;
        }
        let rest: Vec<Value> = branches.iter().filter(|b| !is_null(b)).cloned().collect();
        let mut out = node.clone();
        out.remove(key);
        if let [Value::Object(only)] = rest.as_slice() {
            let description = out.remove("description");
            out.extend(only.clone());
            if let Some(d) = description {
                out.insert("description".into(), d);
            }
        } else {
            out.insert(key.into(), Value::Array(rest));
        }
        return (Cow::Owned(out), true);
    }
    (Cow::Borrowed(node), false)
}

/// The text a model reads for a result: the output (a string as is, anything else as JSON),
/// the pending handle, or the error with its code, suggestion and help URL.
pub fn result_text(result: &ToolCallResult) -> String {
    match result.status {
        ToolStatus::Ok => match &result.output {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => "null".to_owned(),
        },
        ToolStatus::Pending => json!({
            "status": "pending",
            "handle": result.handle,
        })
        .to_string(),
        ToolStatus::Error => match &result.error {
            Some(e) => error_text(e),
            None => "error: the tool failed without details".to_owned(),
        },
    }
}

/// A result as a provider's tool-result content: its text alone when it has no content parts;
/// else a list of the result's text (when it has an output, or is an error) through `text`,
/// then each part through `part`.
pub(crate) fn text_and_parts(
    result: &ToolCallResult,
    text: impl Fn(String) -> Value,
    part: impl Fn(&crate::tools::content::Content) -> Value,
) -> Value {
    if result.content.is_empty() {
        return Value::from(result_text(result));
    }
    let has_text = result.output.as_ref().is_some_and(|o| !o.is_null()) || result.is_error();
    let lead = has_text.then(|| text(result_text(result)));
    Value::Array(
        lead.into_iter()
            .chain(result.content.iter().map(part))
            .collect(),
    )
}

/// An image part as a data URL (`data:{mime};base64,{data}`), for the providers that take
/// images that way; `None` for any other part.
pub(crate) fn image_data_url(part: &crate::tools::content::Content) -> Option<String> {
    match part {
        crate::tools::content::Content::Image(b) => {
            Some(format!("data:{};base64,{}", b.mime_type, b.base64()))
        }
        _ => None,
    }
}

/// A text part, or an embedded text resource, as the text a model reads.
pub(crate) fn part_text(part: &crate::tools::content::Content) -> Option<String> {
    use crate::tools::content::{Content, ResourceBody};
    match part {
        Content::Text(t) => Some(t.clone()),
        Content::Resource(r) => match &r.body {
            ResourceBody::Text(t) => Some(format!("[resource {}]\n{t}", r.uri)),
            ResourceBody::Blob(_) => None,
        },
        Content::Link(l) => Some(format!("[resource link {} ({})]", l.uri, l.name)),
        _ => None,
    }
}

/// An error as text: `error E_CODE (Name): message`, then the suggestion and help URL.
///
/// ```
/// use goondan_runtime::ToolError;
/// let err = ToolError::new("no such file").with_code("E_FS").with_suggestion("list the directory first");
/// assert_eq!(
///     goondan_runtime::dialect::error_text(&err),
///     "error E_FS (Error): no such file\nsuggestion: list the directory first"
/// );
/// ```
pub fn error_text(error: &ToolError) -> String {
    let mut text = format!(
        "error {} ({}): {}",
        error.code(),
        error.name(),
        error.message()
    );
    if let Some(s) = error.suggestion() {
        text.push_str("\nsuggestion: ");
        text.push_str(s);
    }
    if let Some(u) = error.help_url() {
        text.push_str("\nhelp: ");
        text.push_str(u);
    }
    text
}

/// An error as JSON: `{code, name, message, suggestion?, helpUrl?}`.
pub(crate) fn error_json(error: &ToolError) -> Value {
    serde_json::to_value(error).unwrap_or_else(|_| json!({"message": error.message()}))
}
