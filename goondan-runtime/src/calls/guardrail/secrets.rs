//! [`SecretScanner`]: an output guardrail that redacts keys and tokens of common shapes.

use std::borrow::Cow;

use regex::{Regex, RegexBuilder};
use serde_json::Value;

use super::{CheckFuture, Guardrail, Verdict};
use crate::tools::content::{Content, ResourceBody};
use crate::tools::context::ToolContext;
use crate::tools::result::ToolCallResult;

/// The shapes redacted by default: a name (kebab-case, shown in the redaction) and a pattern.
/// Tried in this order at each position: the more specific shapes first.
const SHAPES: &[(&str, &str)] = &[
    (
        "private-key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)",
    ),
    ("aws-access-key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    (
        "github-token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b",
    ),
    ("anthropic-key", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    (
        "openai-key",
        r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
    ),
    ("stripe-key", r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}\b"),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("telegram-bot-token", r"\b[0-9]{8,10}:AA[A-Za-z0-9_-]{33}\b"),
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ),
    ("bearer-token", r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*"),
];

/// The largest compiled pattern set (bytes): bounds what a bundle's extra patterns may cost.
const SIZE_LIMIT: usize = 4 << 20;

/// A pattern [`SecretScanner::pattern`] cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretPatternError {
    /// The name is not kebab-case (it is shown in the redaction).
    #[error("`{0}` cannot name a secret: use lowercase letters, digits and `-`")]
    Name(String),
    /// Not a regular expression, or too large once compiled.
    #[error("the secret pattern `{name}` is not a usable regular expression: {why}")]
    Pattern {
        /// The pattern's name.
        name: String,
        /// What the regex crate said.
        why: String,
    },
}

/// Redacts keys and tokens in a call's result before the model sees it: in its output (every
/// string, however deep), its error's message and suggestion, and its text content. Each match
/// becomes `[REDACTED {shape}]`; the call otherwise passes. Shapes: private key blocks, AWS
/// access keys, GitHub, Anthropic, OpenAI, Stripe, Slack, Google, npm and Telegram tokens,
/// JWTs and bearer tokens; [`pattern`](Self::pattern) adds more.
///
/// ```
/// use goondan_runtime::calls::guardrail::SecretScanner;
/// let scanner = SecretScanner::new().pattern("ticket", r"\bTCK-[0-9]{6}\b")?;
/// assert_eq!(
///     scanner.redact("key AKIAABCDEFGHIJKLMNOP, ticket TCK-123456"),
///     "key [REDACTED aws-access-key], ticket [REDACTED ticket]"
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct SecretScanner {
    shapes: Vec<(String, String)>,
    /// The shapes as one alternation of groups, in order (`None`: nothing to find).
    regex: Option<Regex>,
}

impl Default for SecretScanner {
    fn default() -> Self {
        Self::new()
    }
}

impl SecretScanner {
    /// The scanner of the built-in shapes.
    pub fn new() -> Self {
        let shapes = SHAPES
            .iter()
            .map(|(name, pattern)| ((*name).to_owned(), (*pattern).to_owned()))
            .collect::<Vec<_>>();
        // The built-in shapes compile (`the_built_in_shapes_compile...` checks it).
        let regex = compile(&shapes).ok();
        Self { shapes, regex }
    }

    /// Adds a shape named `name` (kebab-case), tried after the others.
    pub fn pattern(mut self, name: &str, pattern: &str) -> Result<Self, SecretPatternError> {
        let kebab = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !kebab {
            return Err(SecretPatternError::Name(name.to_owned()));
        }
        let error = |why| SecretPatternError::Pattern {
            name: name.to_owned(),
            why,
        };
        // Checked alone first, so that the error names the pattern.
        compile(&[(name.to_owned(), pattern.to_owned())]).map_err(error)?;
        self.shapes.push((name.to_owned(), pattern.to_owned()));
        self.regex = Some(compile(&self.shapes).map_err(error)?);
        Ok(self)
    }

    /// `text` with every secret replaced by `[REDACTED {shape}]`; borrowed when there is none.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let Some(regex) = &self.regex else {
            return Cow::Borrowed(text);
        };
        regex.replace_all(text, |caps: &regex::Captures<'_>| {
            let shape = (1..caps.len())
                .find(|i| caps.get(*i).is_some())
                .and_then(|i| self.shapes.get(i - 1))
                .map_or("secret", |(name, _)| name.as_str());
            format!("[REDACTED {shape}]")
        })
    }

    /// Redacts `text` in place; whether anything was.
    fn redact_in_place(&self, text: &mut String) -> bool {
        match self.redact(text) {
            Cow::Borrowed(_) => false,
            Cow::Owned(redacted) => {
                *text = redacted;
                true
            }
        }
    }

    fn redact_value(&self, value: &mut Value) -> usize {
        match value {
            Value::String(s) => usize::from(self.redact_in_place(s)),
            Value::Array(items) => items.iter_mut().map(|v| self.redact_value(v)).sum(),
            Value::Object(map) => map.values_mut().map(|v| self.redact_value(v)).sum(),
            Value::Null | Value::Bool(_) | Value::Number(_) => 0,
        }
    }

    /// Redacts every text of `result`; how many texts changed.
    fn redact_result(&self, result: &mut ToolCallResult) -> usize {
        let mut changed = result.output.as_mut().map_or(0, |v| self.redact_value(v));
        if let Some(err) = &mut result.error {
            changed += err.redact_texts(|text| self.redact_in_place(text));
        }
        for part in &mut result.content {
            let text = match part {
                Content::Text(text) => text,
                Content::Resource(resource) => match &mut resource.body {
                    ResourceBody::Text(text) => text,
                    ResourceBody::Blob(_) => continue,
                },
                Content::Image(_) | Content::Audio(_) | Content::Link(_) => continue,
            };
            changed += usize::from(self.redact_in_place(text));
        }
        changed
    }
}

fn compile(shapes: &[(String, String)]) -> Result<Regex, String> {
    let alternation = shapes
        .iter()
        .map(|(_, pattern)| format!("({pattern})"))
        .collect::<Vec<_>>()
        .join("|");
    RegexBuilder::new(&alternation)
        .size_limit(SIZE_LIMIT)
        .dfa_size_limit(SIZE_LIMIT)
        .build()
        .map_err(|e| e.to_string())
}

impl Guardrail for SecretScanner {
    fn name(&self) -> &str {
        "secret-scanner"
    }

    fn checks_input(&self) -> bool {
        false
    }

    fn check_output<'a>(
        &'a self,
        result: &'a mut ToolCallResult,
        ctx: &'a ToolContext,
    ) -> CheckFuture<'a> {
        let redacted = self.redact_result(result);
        if redacted > 0 {
            tracing::info!(
                name: "guardrail.redacted",
                target: "goondan::guardrail",
                trace_id = ctx.trace_id(),
                tool = &*result.tool_name,
                tool_call_id = &*result.tool_call_id,
                texts = redacted,
                "guardrail.redacted"
            );
        }
        Box::pin(std::future::ready(Verdict::Pass))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_shapes_compile_and_each_is_found_by_its_name() {
        let scanner = SecretScanner::new();
        assert_eq!(scanner.shapes.len(), SHAPES.len());
        assert!(scanner.regex.is_some());
        let a36 = "a".repeat(36);
        let samples = [
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----".to_owned(),
                "private-key",
            ),
            ("AKIAIOSFODNN7EXAMPLE".to_owned(), "aws-access-key"),
            (format!("ghp_{a36}"), "github-token"),
            ("github_pat_11ABCDEFG0123456789_abcdefghij".to_owned(), "github-token"),
            ("sk-ant-api03-abcdefghijklmnopqrstuvwxyz".to_owned(), "anthropic-key"),
            ("sk-proj-abcdefghijklmnopqrstuvwxyz012".to_owned(), "openai-key"),
            ("sk_live_abcdefghijklmnop1234".to_owned(), "stripe-key"),
            ("xoxb-123456789012-abcdefghij".to_owned(), "slack-token"),
            (format!("AIza{}", "B".repeat(35)), "google-api-key"),
            (format!("npm_{a36}"), "npm-token"),
            (format!("123456789:AA{}", "c".repeat(33)), "telegram-bot-token"),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U".to_owned(),
                "jwt",
            ),
            ("Authorization: Bearer abcdefghijklmnop0123".to_owned(), "bearer-token"),
        ];
        for (secret, shape) in samples {
            let text = format!("before {secret} after");
            let redacted = scanner.redact(&text);
            assert!(
                redacted.contains(&format!("[REDACTED {shape}]")),
                "{shape}: {redacted}"
            );
            assert!(redacted.starts_with("before "), "{redacted}");
            assert!(redacted.ends_with(" after"), "{redacted}");
        }
    }

    #[test]
    fn ordinary_text_is_left_alone_and_borrowed() {
        let scanner = SecretScanner::new();
        for text in [
            "sk-short",
            "the AKIA prefix alone",
            "a bearer of news",
            "ghp_tooshort",
            "README.md is 1234 bytes",
            "",
        ] {
            assert!(matches!(scanner.redact(text), Cow::Borrowed(_)), "{text}");
        }
    }

    #[test]
    fn an_unterminated_private_key_is_redacted_to_the_end() {
        let text = "key: -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA";
        assert_eq!(
            SecretScanner::new().redact(text),
            "key: [REDACTED private-key]"
        );
    }

    #[test]
    fn bad_extra_patterns_are_refused_with_their_name() {
        assert_eq!(
            SecretScanner::new().pattern("Bad Name", "x").err(),
            Some(SecretPatternError::Name("Bad Name".into()))
        );
        let err = SecretScanner::new()
            .pattern("broken", "(unclosed")
            .unwrap_err();
        assert!(matches!(&err, SecretPatternError::Pattern { name, .. } if name == "broken"));
        // A pattern too large to compile within the limit.
        let huge = SecretScanner::new().pattern("huge", r"\w{5000}\w{5000}\w{5000}");
        assert!(huge.is_err());
    }

    #[test]
    fn every_text_of_a_result_is_redacted() {
        let scanner = SecretScanner::new();
        let key = "AKIAIOSFODNN7EXAMPLE";
        let mut result = ToolCallResult::ok(
            "c1",
            "t__x",
            serde_json::json!({"env": [{"AWS": key}], "n": 3, "note": "fine"}),
        )
        .with_content(vec![Content::Text(format!("export AWS={key}"))]);
        assert_eq!(scanner.redact_result(&mut result), 2);
        assert_eq!(
            result.output,
            Some(
                serde_json::json!({"env": [{"AWS": "[REDACTED aws-access-key]"}], "n": 3, "note": "fine"})
            )
        );
        assert_eq!(
            result.content,
            [Content::Text("export AWS=[REDACTED aws-access-key]".into())]
        );
    }
}
