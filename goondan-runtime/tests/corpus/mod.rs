//! The corpus of input types every schema test runs over: one type per serde/schemars feature
//! a tool input can use. Each type derives `Serialize` too, so the differential test can tell
//! whether serde dropped part of the arguments.

#![allow(dead_code, missing_docs, unreachable_pub)]

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use goondan_runtime::tools::schema::schema_for;
use goondan_runtime::{CatalogItem, ToolCatalog, ToolName};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Every primitive a tool takes.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Primitives {
    /// A flag.
    pub flag: bool,
    /// Some text.
    pub text: String,
    /// One character.
    pub letter: char,
    /// A single-precision number.
    pub single: f32,
    /// A double-precision number.
    pub double: f64,
}

/// Every integer width.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Integers {
    pub i8: i8,
    pub i16: i16,
    pub i32: i32,
    pub i64: i64,
    pub u8: u8,
    pub u16: u16,
    pub u32: u32,
    pub u64: u64,
    pub usize: usize,
    pub isize: isize,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Point {
    /// Horizontal.
    pub x: i32,
    /// Vertical.
    pub y: i32,
}

/// Optional parameters of every kind.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Optionals {
    pub name: String,
    /// A limit, when given.
    pub limit: Option<u32>,
    pub label: Option<String>,
    pub origin: Option<Point>,
    pub tags: Option<Vec<String>>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AllOptional {
    pub a: Option<bool>,
    pub b: Option<f64>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Lists {
    pub words: Vec<String>,
    pub points: Vec<Point>,
    pub grid: Vec<Vec<i32>>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Maps {
    pub counts: HashMap<String, i64>,
    pub places: BTreeMap<String, Point>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Nested {
    /// Where it starts.
    pub start: Point,
    pub inner: Inner,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Inner {
    pub depth: u8,
    pub leaf: Leaf,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Leaf {
    pub value: String,
    pub note: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub enum Color {
    Red,
    Green,
    Blue,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct UnitEnum {
    /// The colour to paint with.
    pub color: Color,
}

/// How loudly to speak.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Volume {
    /// Barely audible.
    Whisper,
    /// The usual.
    Normal,
    /// Shouting.
    VeryLoud,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct DocumentedEnum {
    pub volume: Volume,
    pub fallback: Option<Volume>,
}

/// A shape, externally tagged.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub enum Shape {
    /// A circle.
    Circle { radius: f64 },
    /// A square, by side.
    Square(f64),
    /// Nothing.
    Empty,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct External {
    pub shape: Shape,
}

/// A command, internally tagged.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Command {
    /// Move somewhere.
    Move { to: Point },
    /// Say something.
    Say { text: String, loud: Option<bool> },
    /// Stop.
    Stop,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Internal {
    pub command: Command,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "t", content = "c")]
pub enum Event {
    Click(Point),
    Key { code: u32 },
    Quit,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Adjacent {
    pub event: Event,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Paging {
    /// Page size.
    pub size: u32,
    pub offset: Option<u64>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Flattened {
    pub query: String,
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CamelCase {
    pub file_path: String,
    pub max_bytes: Option<u64>,
    pub follow_links: bool,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Renamed {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(rename = "$value")]
    pub value: i32,
}

fn default_retries() -> u8 {
    3
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Defaults {
    pub url: String,
    #[serde(default = "default_retries")]
    pub retries: u8,
    #[serde(default)]
    pub verbose: bool,
}

#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct StructDefault {
    pub width: u32,
    pub title: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Strict {
    pub id: String,
    pub force: Option<bool>,
}

/// A tree: recursive.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Tree {
    pub value: i64,
    pub children: Vec<Tree>,
}

/// An expression: a recursive enum.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Expr {
    Num { value: f64 },
    Add { left: Box<Expr>, right: Box<Expr> },
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Calc {
    pub expr: Expr,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AnyJson {
    /// Anything at all.
    pub payload: Value,
    pub extra: Option<Value>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Timestamps {
    /// When it starts, RFC 3339 (`2024-05-01T12:00:00Z`).
    #[schemars(extend("format" = "date-time"))]
    pub starts_at: String,
    /// A calendar date.
    #[schemars(extend("format" = "date"))]
    pub day: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Skipped {
    pub kept: String,
    #[serde(skip)]
    pub cache: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Empty {}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Bounds {
    /// Between 1 and 10.
    #[schemars(range(min = 1, max = 10))]
    pub level: u8,
    #[schemars(length(min = 1, max = 20))]
    pub name: String,
    #[schemars(regex(pattern = r"^[a-z]+$"))]
    pub slug: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Boxed {
    pub inner: Box<Point>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Meters(pub f64);

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Newtype {
    pub distance: Meters,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct EnumList {
    pub colors: Vec<Color>,
    pub commands: Vec<Command>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Level {
    #[serde(rename = "dbg")]
    Debug,
    InfoLevel,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct RenamedVariants {
    pub level: Level,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct OptionalNested {
    pub shape: Option<Shape>,
    pub paging: Option<Paging>,
}

/// A bash-like tool input, as the macro would write it for named parameters.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ExecParams {
    /// The command line.
    pub command: String,
    /// Seconds before giving up.
    pub timeout_secs: Option<u32>,
    /// Extra environment.
    pub env: Option<HashMap<String, String>>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct KebabStrict {
    pub dry_run: bool,
    pub out_dir: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Tupled {
    /// A name and a count.
    pub pair: (String, i32),
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct FlattenedEnum {
    pub id: String,
    #[serde(flatten)]
    pub command: Command,
}

/// One corpus entry: the type's name, its neutral schema, and serde's verdict on arguments.
#[derive(Clone)]
pub struct Case {
    /// The Rust type, also the export name (lowercased) in [`catalog_of`].
    pub name: &'static str,
    pub schema: Arc<Value>,
    /// `Ok` with the arguments serialised back, or serde's error.
    pub serde: fn(&Value) -> Result<Value, String>,
}

fn serde_roundtrip<T: Serialize + DeserializeOwned>(args: &Value) -> Result<Value, String> {
    let typed: T = serde_json::from_value(args.clone()).map_err(|e| e.to_string())?;
    serde_json::to_value(&typed).map_err(|e| e.to_string())
}

/// serde does not check schemars' `range`, `length` and `regex`: the tool author's code does, as
/// this function does for [`Bounds`]; the validator checks them before the handler runs.
fn bounds_serde(args: &Value) -> Result<Value, String> {
    let b: Bounds = serde_json::from_value(args.clone()).map_err(|e| e.to_string())?;
    let name_len = b.name.chars().count();
    if !(1..=10).contains(&b.level)
        || !(1..=20).contains(&name_len)
        || b.slug.is_empty()
        || !b.slug.chars().all(|c| c.is_ascii_lowercase())
    {
        return Err("out of bounds".to_owned());
    }
    serde_json::to_value(&b).map_err(|e| e.to_string())
}

fn case<T: JsonSchema + Serialize + DeserializeOwned + 'static>(name: &'static str) -> Case {
    Case {
        name,
        schema: schema_for::<T>(),
        serde: serde_roundtrip::<T>,
    }
}

/// The whole corpus.
pub fn corpus() -> Vec<Case> {
    vec![
        case::<Primitives>("Primitives"),
        case::<Integers>("Integers"),
        case::<Optionals>("Optionals"),
        case::<AllOptional>("AllOptional"),
        case::<Lists>("Lists"),
        case::<Maps>("Maps"),
        case::<Nested>("Nested"),
        case::<UnitEnum>("UnitEnum"),
        case::<DocumentedEnum>("DocumentedEnum"),
        case::<External>("External"),
        case::<Internal>("Internal"),
        case::<Adjacent>("Adjacent"),
        case::<Flattened>("Flattened"),
        case::<CamelCase>("CamelCase"),
        case::<Renamed>("Renamed"),
        case::<Defaults>("Defaults"),
        case::<StructDefault>("StructDefault"),
        case::<Strict>("Strict"),
        case::<Tree>("Tree"),
        case::<Calc>("Calc"),
        case::<AnyJson>("AnyJson"),
        case::<Timestamps>("Timestamps"),
        case::<Skipped>("Skipped"),
        case::<Empty>("Empty"),
        Case {
            name: "Bounds",
            schema: schema_for::<Bounds>(),
            serde: bounds_serde,
        },
        case::<Boxed>("Boxed"),
        case::<Newtype>("Newtype"),
        case::<EnumList>("EnumList"),
        case::<RenamedVariants>("RenamedVariants"),
        case::<OptionalNested>("OptionalNested"),
        case::<ExecParams>("ExecParams"),
        case::<KebabStrict>("KebabStrict"),
        case::<Command>("Command"),
        case::<Tupled>("Tupled"),
        case::<FlattenedEnum>("FlattenedEnum"),
    ]
}

/// The export name of a case: its type name, lowercased.
pub fn export_name(case: &Case) -> String {
    case.name.to_lowercase()
}

/// A catalog with one hand-written schema, `corpus__{export}`.
pub fn catalog_with(export: &str, schema: Value) -> ToolCatalog {
    let mut item = CatalogItem::new(ToolName::new("corpus", export).expect("a valid name"));
    item.set_parameters(schema);
    let mut catalog = ToolCatalog::new();
    catalog.push(item);
    catalog
}

/// Schemas a dynamically registered tool might carry: odd, partial or wrong. Dialects must
/// answer each with a schema or an error, never a panic.
pub fn odd_schemas() -> Vec<Value> {
    use serde_json::json;
    vec![
        json!(true),
        json!(false),
        json!(null),
        json!({}),
        json!({"type": "object"}),
        json!({"type": "object", "properties": {"a": 5}}),
        json!({"type": "object", "properties": {"a": true, "b": false}}),
        json!({"type": "object", "properties": {"a": {"type": ["string", "integer"]}}}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}),
        json!({"type": "object", "properties": {"a": {"anyOf": []}}}),
        json!({"type": "object", "properties": {"a": {"oneOf": [{"type": "null"}]}}}),
        json!({"type": "object", "properties": {"a": {"type": "array"}}}),
        json!({"type": "object", "properties": {"a": {"enum": [1, "x", null]}}}),
        json!({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}}),
        json!({"type": "object", "required": 7, "properties": {"x": {"type": "string"}}}),
        json!({"type": "object", "properties": {"id": {"type": "string"}}, "oneOf": [true]}),
        json!({"type": "object", "allOf": [{"type": "object"}]}),
        json!({"type": "string"}),
    ]
}

/// A catalog with the case as its only tool, `corpus__{name}`.
pub fn catalog_of(case: &Case) -> ToolCatalog {
    let mut item =
        CatalogItem::new(ToolName::new("corpus", &export_name(case)).expect("a valid name"));
    item.set_description(format!("The {} corpus type.", case.name));
    item.set_parameters(Arc::clone(&case.schema));
    let mut catalog = ToolCatalog::new();
    catalog.push(item);
    catalog
}

/// Calls `f(path, node)` on every schema node of `schema`, depth first, where `path` is a JSON
/// pointer. Written from the JSON Schema 2020-12 applicators, independently of the crate's own
/// walker.
pub fn walk(schema: &Value, path: &str, f: &mut dyn FnMut(&str, &Value)) {
    f(path, schema);
    let Some(obj) = schema.as_object() else {
        return;
    };
    for (k, v) in obj {
        match k.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                for (name, sub) in v.as_object().into_iter().flatten() {
                    walk(sub, &format!("{path}/{k}/{name}"), f);
                }
            }
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                for (i, sub) in v.as_array().into_iter().flatten().enumerate() {
                    walk(sub, &format!("{path}/{k}/{i}"), f);
                }
            }
            "items"
            | "additionalProperties"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "propertyNames"
            | "unevaluatedItems"
            | "unevaluatedProperties"
                if v.is_object() =>
            {
                walk(v, &format!("{path}/{k}"), f);
            }
            _ => {}
        }
    }
}
