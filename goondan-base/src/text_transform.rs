//! `text-transform`: plain string operations, as upstream's base package does them.
//!
//! - `text-transform__replace {text, search, replacement? = "", all?}` ->
//!   `{original, result, replacements}`
//! - `text-transform__slice {text, start? = 0, end?}` -> `{original, result, start, end, length}`
//! - `text-transform__split {text, delimiter? = "\n", maxParts?}` -> `{delimiter, count, parts}`
//! - `text-transform__join {parts, delimiter? = "\n"}` -> `{delimiter, count, result}`
//! - `text-transform__trim {text, mode? = "both"}` -> `{original, result, mode, trimmedLength}`
//! - `text-transform__case {text, to}` -> `{original, result, to}`
//!
//! Positions and lengths count characters (Unicode scalar values). Upstream, running on
//! JavaScript, counts UTF-16 code units; the two agree on text without characters outside the
//! Basic Multilingual Plane (emoji, for instance), where ours never cuts a character in half.
//! Negative `start`/`end` count from the end, as JavaScript's `slice` does.

use goondan_runtime::{ToolError, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Error codes of `text-transform`.
pub mod codes {
    /// A required string is empty, or a value has the wrong kind.
    pub const INVALID_INPUT: &str = "E_TEXT_INVALID_INPUT";
}

/// Input of `text-transform__replace`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplaceInput {
    /// Source text to transform.
    pub text: String,
    /// Search string to find in the text (not empty).
    pub search: String,
    /// Replacement string (default: empty string).
    #[serde(default)]
    pub replacement: Option<String>,
    /// Replace all occurrences instead of the first one only.
    #[serde(default)]
    pub all: Option<bool>,
}

/// Output of `text-transform__replace`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplaceOutput {
    /// The text given.
    pub original: String,
    /// The text after replacement.
    pub result: String,
    /// How many occurrences were replaced.
    pub replacements: u64,
}

/// Input of `text-transform__slice`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SliceInput {
    /// Source text to slice.
    pub text: String,
    /// Start index (default 0); negative counts from the end.
    #[serde(default)]
    pub start: Option<i64>,
    /// Optional end index (exclusive); negative counts from the end.
    #[serde(default)]
    pub end: Option<i64>,
}

/// Output of `text-transform__slice`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SliceOutput {
    /// The text given.
    pub original: String,
    /// The slice.
    pub result: String,
    /// The start index given.
    pub start: i64,
    /// The end index given, or the text's length.
    pub end: i64,
    /// The slice's length in characters.
    pub length: u64,
}

/// Input of `text-transform__split`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SplitInput {
    /// Source text to split.
    pub text: String,
    /// Delimiter string (default: newline). An empty delimiter splits into characters.
    #[serde(default)]
    pub delimiter: Option<String>,
    /// Optional maximum number of parts to return (the rest is dropped, as in JavaScript).
    #[serde(default)]
    pub max_parts: Option<i64>,
}

/// Output of `text-transform__split`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SplitOutput {
    /// The delimiter used.
    pub delimiter: String,
    /// The number of parts.
    pub count: u64,
    /// The parts.
    pub parts: Vec<String>,
}

/// Input of `text-transform__join`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JoinInput {
    /// Values to join: strings, numbers or booleans (numbers and booleans are stringified).
    pub parts: Vec<Value>,
    /// Delimiter inserted between parts (default: newline).
    #[serde(default)]
    pub delimiter: Option<String>,
}

/// Output of `text-transform__join`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JoinOutput {
    /// The delimiter used.
    pub delimiter: String,
    /// The number of parts joined.
    pub count: u64,
    /// The joined text.
    pub result: String,
}

/// Where `trim` removes whitespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TrimMode {
    /// Leading whitespace.
    Start,
    /// Trailing whitespace.
    End,
    /// Both ends (the default).
    Both,
}

/// Input of `text-transform__trim`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TrimInput {
    /// Source text to trim.
    pub text: String,
    /// Trim mode (default: both).
    #[serde(default)]
    pub mode: Option<TrimMode>,
}

/// Output of `text-transform__trim`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrimOutput {
    /// The text given.
    pub original: String,
    /// The trimmed text.
    pub result: String,
    /// The mode used.
    pub mode: TrimMode,
    /// How many characters were removed.
    pub trimmed_length: u64,
}

/// The case `case` converts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Case {
    /// Upper case.
    Upper,
    /// Lower case.
    Lower,
}

/// Input of `text-transform__case`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaseInput {
    /// Source text to transform.
    pub text: String,
    /// Target case.
    pub to: Case,
}

/// Output of `text-transform__case`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaseOutput {
    /// The text given.
    pub original: String,
    /// The converted text.
    pub result: String,
    /// The case used.
    pub to: Case,
}

/// The `text-transform` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextTransform;

impl TextTransform {
    /// The resource name.
    pub const NAME: &'static str = "text-transform";
}

/// Replace, slice, split, join, trim and change the case of text.
#[tool(name = "text-transform", error_message_limit = 1000)]
impl TextTransform {
    /// Replace the first occurrence of `search` in `text` (or all of them with `all: true`).
    /// Returns `{original, result, replacements}`.
    #[export(read_only, idempotent)]
    pub async fn replace(&self, input: ReplaceInput) -> Result<ReplaceOutput, ToolError> {
        non_empty("text", &input.text)?;
        non_empty("search", &input.search)?;
        let replacement = input.replacement.unwrap_or_default();
        let (result, replacements) = if input.all.unwrap_or(false) {
            let n = input.text.matches(input.search.as_str()).count();
            (input.text.replace(&input.search, &replacement), n)
        } else {
            let n = usize::from(input.text.contains(&input.search));
            (input.text.replacen(&input.search, &replacement, 1), n)
        };
        Ok(ReplaceOutput {
            original: input.text,
            result,
            replacements: replacements as u64,
        })
    }

    /// Extract the characters from `start` (default 0) up to `end` (exclusive, default the
    /// end); negative positions count from the end. Returns `{original, result, start, end,
    /// length}`.
    #[export(read_only, idempotent)]
    pub async fn slice(&self, input: SliceInput) -> Result<SliceOutput, ToolError> {
        non_empty("text", &input.text)?;
        let chars: Vec<char> = input.text.chars().collect();
        let len = i64::try_from(chars.len()).unwrap_or(i64::MAX);
        let start = input.start.unwrap_or(0);
        let end = input.end.unwrap_or(len);
        let from = position(start, len);
        let to = position(end, len).max(from);
        let result: String = chars
            .get(from..to)
            .map(|s| s.iter().collect())
            .unwrap_or_default();
        Ok(SliceOutput {
            length: (to - from) as u64,
            original: input.text,
            result,
            start,
            end,
        })
    }

    /// Split `text` by `delimiter` (default newline), keeping at most `maxParts` parts.
    /// Returns `{delimiter, count, parts}`.
    #[export(read_only, idempotent)]
    pub async fn split(&self, input: SplitInput) -> Result<SplitOutput, ToolError> {
        non_empty("text", &input.text)?;
        let delimiter = input.delimiter.unwrap_or_else(|| "\n".to_owned());
        let limit = match input.max_parts {
            Some(n) if n >= 0 => usize::try_from(n).unwrap_or(usize::MAX),
            _ => usize::MAX,
        };
        let parts: Vec<String> = if delimiter.is_empty() {
            input.text.chars().take(limit).map(String::from).collect()
        } else {
            input
                .text
                .split(delimiter.as_str())
                .take(limit)
                .map(str::to_owned)
                .collect()
        };
        Ok(SplitOutput {
            delimiter,
            count: parts.len() as u64,
            parts,
        })
    }

    /// Join strings, numbers or booleans with `delimiter` (default newline). Returns
    /// `{delimiter, count, result}`.
    #[export(read_only, idempotent)]
    pub async fn join(&self, input: JoinInput) -> Result<JoinOutput, ToolError> {
        let parts = input
            .parts
            .iter()
            .enumerate()
            .map(|(i, part)| match part {
                Value::String(s) => Ok(s.clone()),
                Value::Bool(b) => Ok(b.to_string()),
                Value::Number(n) => Ok(number_text(n)),
                _ => Err(ToolError::new(format!(
                    "'parts' must contain only string/number/boolean values; item {i} is not"
                ))
                .with_code(codes::INVALID_INPUT)
                .with_name("InvalidInputError")
                .with_suggestion("turn objects, arrays and nulls into strings before joining")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let delimiter = input.delimiter.unwrap_or_else(|| "\n".to_owned());
        Ok(JoinOutput {
            count: parts.len() as u64,
            result: parts.join(&delimiter),
            delimiter,
        })
    }

    /// Trim whitespace from the start, the end or both ends (default) of `text`. Returns
    /// `{original, result, mode, trimmedLength}`.
    #[export(read_only, idempotent)]
    pub async fn trim(&self, input: TrimInput) -> Result<TrimOutput, ToolError> {
        non_empty("text", &input.text)?;
        let mode = input.mode.unwrap_or(TrimMode::Both);
        let result = match mode {
            TrimMode::Start => input.text.trim_start(),
            TrimMode::End => input.text.trim_end(),
            TrimMode::Both => input.text.trim(),
        }
        .to_owned();
        let trimmed = input.text.chars().count() - result.chars().count();
        Ok(TrimOutput {
            original: input.text,
            result,
            mode,
            trimmed_length: trimmed as u64,
        })
    }

    /// Convert `text` to upper or lower case. Returns `{original, result, to}`.
    #[export(name = "case", read_only, idempotent)]
    pub async fn change_case(&self, input: CaseInput) -> Result<CaseOutput, ToolError> {
        non_empty("text", &input.text)?;
        let result = match input.to {
            Case::Upper => input.text.to_uppercase(),
            Case::Lower => input.text.to_lowercase(),
        };
        Ok(CaseOutput {
            original: input.text,
            result,
            to: input.to,
        })
    }
}

/// A JavaScript `slice` position: negative counts from the end, then clamped to `0..=len`.
fn position(index: i64, len: i64) -> usize {
    let at = if index < 0 { len + index } else { index };
    usize::try_from(at.clamp(0, len)).unwrap_or(0)
}

/// A number as JavaScript's `String(n)` writes it for the usual cases: integers without `.0`.
fn number_text(n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e21 => format!("{f:.0}"),
        _ => n.to_string(),
    }
}

fn non_empty(key: &str, value: &str) -> Result<(), ToolError> {
    if value.is_empty() {
        return Err(
            ToolError::new(format!("'{key}' must be a non-empty string"))
                .with_code(codes::INVALID_INPUT)
                .with_name("InvalidInputError")
                .with_suggestion(format!("give `{key}` some text")),
        );
    }
    Ok(())
}
