//! `json-query`: read parts of a JSON document given as text, as upstream's base package does.
//!
//! - `json-query__query {data, path? = "."}` -> `{path, found, value}`
//! - `json-query__pick {data, keys}` -> `{keys, result}`
//! - `json-query__count {data, path? = "."}` -> `{path, count, type}`
//! - `json-query__flatten {data, depth? = 1}` -> `{depth, count, result}`
//!
//! `data` is always a JSON document as a string. Paths use upstream's syntax: segments
//! separated by `.`, or written in brackets (`users[0].name`, `.a.b`, `a[b][2]`); a leading `.`
//! is optional and `.` (or an empty path) is the root. A segment indexes an array when it is a
//! decimal number, and names a key of an object otherwise; text inside brackets is taken as it
//! is (no quotes are stripped), exactly as upstream.

use goondan_runtime::{ToolError, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Error codes of `json-query`.
pub mod codes {
    /// `data` is empty or not valid JSON.
    pub const PARSE: &str = "E_JSON_PARSE";
    /// The document does not have the shape the export needs (an object for `pick`, an array
    /// for `flatten`).
    pub const SHAPE: &str = "E_JSON_SHAPE";
}

/// Input of `json-query__query`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QueryInput {
    /// Input JSON string to parse and query.
    pub data: String,
    /// Dot/bracket path expression, e.g. `users[0].name`. Defaults to `.` for the root.
    #[serde(default)]
    pub path: Option<String>,
}

/// Output of `json-query__query`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueryOutput {
    /// The path that was resolved.
    pub path: String,
    /// Whether the path leads to a value (a JSON `null` that exists counts as found).
    pub found: bool,
    /// The value at the path, `null` when not found.
    pub value: Value,
}

/// Input of `json-query__pick`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PickInput {
    /// Input JSON string expected to be an object.
    pub data: String,
    /// Object keys to pick from the parsed object.
    pub keys: Vec<String>,
}

/// Output of `json-query__pick`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PickOutput {
    /// The keys asked for.
    pub keys: Vec<String>,
    /// The keys that exist, with their values.
    pub result: Map<String, Value>,
}

/// Input of `json-query__count`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CountInput {
    /// Input JSON string to parse.
    pub data: String,
    /// Dot/bracket path expression to count at. Defaults to `.` for the root.
    #[serde(default)]
    pub path: Option<String>,
}

/// Output of `json-query__count`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CountOutput {
    /// The path that was resolved.
    pub path: String,
    /// Elements of an array, keys of an object, characters of a string, 1 for a number or a
    /// boolean, 0 for `null` or nothing.
    pub count: u64,
    /// `array`, `object`, `string`, `number`, `boolean` or `null`.
    #[serde(rename = "type")]
    pub kind: String,
}

/// Input of `json-query__flatten`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlattenInput {
    /// Input JSON string expected to be an array.
    pub data: String,
    /// How many levels of nested arrays to flatten (default 1; 0 or less flattens nothing).
    #[serde(default)]
    pub depth: Option<i64>,
}

/// Output of `json-query__flatten`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlattenOutput {
    /// The depth used.
    pub depth: i64,
    /// The number of elements of `result`.
    pub count: u64,
    /// The flattened array.
    pub result: Vec<Value>,
}

/// The `json-query` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonQuery;

impl JsonQuery {
    /// The resource name.
    pub const NAME: &'static str = "json-query";
}

/// Query, pick, count and flatten JSON data given as text.
#[tool(name = "json-query", error_message_limit = 1000)]
impl JsonQuery {
    /// Query JSON data by a dot/bracket path such as `users[0].name`. Returns `{path, found,
    /// value}`.
    #[export(read_only, idempotent)]
    pub async fn query(&self, input: QueryInput) -> Result<QueryOutput, ToolError> {
        let data = parse_data(&input.data)?;
        let path = input.path.unwrap_or_else(|| ".".to_owned());
        let value = resolve(&data, &path).cloned();
        Ok(QueryOutput {
            found: value.is_some(),
            value: value.unwrap_or(Value::Null),
            path,
        })
    }

    /// Pick specific keys from a JSON object; missing keys are left out. Returns `{keys,
    /// result}`.
    #[export(read_only, idempotent)]
    pub async fn pick(&self, input: PickInput) -> Result<PickOutput, ToolError> {
        let Value::Object(mut data) = parse_data(&input.data)? else {
            return Err(shape(
                "pick",
                "an object",
                "give `data` as a JSON object like `{\"a\": 1}`",
            ));
        };
        let result = input
            .keys
            .iter()
            .filter_map(|key| Some((key.clone(), data.remove(key)?)))
            .collect();
        Ok(PickOutput {
            keys: input.keys,
            result,
        })
    }

    /// Count the elements of the array, the keys of the object or the characters of the
    /// string at a path. Returns `{path, count, type}`.
    #[export(read_only, idempotent)]
    pub async fn count(&self, input: CountInput) -> Result<CountOutput, ToolError> {
        let data = parse_data(&input.data)?;
        let path = input.path.unwrap_or_else(|| ".".to_owned());
        let (count, kind) = match resolve(&data, &path) {
            None | Some(Value::Null) => (0, "null"),
            Some(Value::Array(items)) => (items.len(), "array"),
            Some(Value::Object(map)) => (map.len(), "object"),
            Some(Value::String(text)) => (text.chars().count(), "string"),
            Some(Value::Number(_)) => (1, "number"),
            Some(Value::Bool(_)) => (1, "boolean"),
        };
        Ok(CountOutput {
            path,
            count: count as u64,
            kind: kind.to_owned(),
        })
    }

    /// Flatten nested JSON arrays by `depth` levels (default 1). Returns `{depth, count,
    /// result}`.
    #[export(read_only, idempotent)]
    pub async fn flatten(&self, input: FlattenInput) -> Result<FlattenOutput, ToolError> {
        let Value::Array(items) = parse_data(&input.data)? else {
            return Err(shape(
                "flatten",
                "an array",
                "give `data` as a JSON array like `[1, [2, 3]]`",
            ));
        };
        let depth = input.depth.unwrap_or(1);
        let mut result = Vec::new();
        flatten_into(items, depth, &mut result);
        Ok(FlattenOutput {
            depth,
            count: result.len() as u64,
            result,
        })
    }
}

/// Splits a path into its segments, as upstream does: `.` separates segments outside brackets,
/// `[` and `]` close the current segment, and empty segments are dropped.
///
/// ```
/// use goondan_base::json_query::parse_path;
/// assert_eq!(parse_path(".users[0].name"), ["users", "0", "name"]);
/// assert_eq!(parse_path("a[b.c]"), ["a", "b.c"]);
/// assert!(parse_path(".").is_empty());
/// ```
pub fn parse_path(path: &str) -> Vec<String> {
    let raw = path.strip_prefix('.').unwrap_or(path);
    let mut segments = Vec::new();
    let mut current = String::new();
    let mut in_bracket = false;
    for c in raw.chars() {
        match c {
            '[' | ']' => {
                in_bracket = c == '[';
                if !current.is_empty() {
                    segments.push(std::mem::take(&mut current));
                }
            }
            '.' if !in_bracket => {
                if !current.is_empty() {
                    segments.push(std::mem::take(&mut current));
                }
            }
            _ => current.push(c),
        }
    }
    if !current.is_empty() {
        segments.push(current);
    }
    segments
}

/// The value at `path` in `data`, or `None`.
fn resolve<'a>(data: &'a Value, path: &str) -> Option<&'a Value> {
    parse_path(path)
        .iter()
        .try_fold(data, |current, segment| match current {
            Value::Object(map) => map.get(segment),
            Value::Array(items) => {
                let digits = segment.strip_prefix('+').unwrap_or(segment);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                items.get(digits.parse::<usize>().ok()?)
            }
            _ => None,
        })
}

fn flatten_into(items: Vec<Value>, depth: i64, out: &mut Vec<Value>) {
    for item in items {
        match item {
            Value::Array(inner) if depth > 0 => flatten_into(inner, depth - 1, out),
            other => out.push(other),
        }
    }
}

fn parse_data(raw: &str) -> Result<Value, ToolError> {
    if raw.is_empty() {
        return Err(ToolError::new("'data' must be a non-empty string")
            .with_code(codes::PARSE)
            .with_name("JsonParseError")
            .with_suggestion("pass the JSON document as a string in `data`"));
    }
    serde_json::from_str(raw).map_err(|err| {
        ToolError::new(format!("failed to parse input as JSON: {err}"))
            .with_code(codes::PARSE)
            .with_name("JsonParseError")
            .with_suggestion(
                "pass valid JSON text in `data` (a JSON value serialised as a string, with \
                 double-quoted keys)",
            )
    })
}

fn shape(export: &str, expected: &str, suggestion: &str) -> ToolError {
    ToolError::new(format!(
        "input data must be {expected} for the {export} operation"
    ))
    .with_code(codes::SHAPE)
    .with_name("JsonShapeError")
    .with_suggestion(suggestion)
}
