//! Tool names: what the model sees is `{resource}__{export}` (NAME-1..6).
//!
//! A [`ToolName`] is validated once and then used as it is: no encoding or decoding (NAME-2).

use arcstr::ArcStr;
use std::fmt;

/// The separator between the resource name and the export name (NAME-1).
pub const SEPARATOR: &str = "__";

/// The longest full tool name that every provider accepts.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// Which part of a tool name a [`NameError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamePart {
    /// The Tool resource's `metadata.name`.
    Resource,
    /// An export's name.
    Export,
    /// The joined `{resource}__{export}` name.
    Tool,
}

impl fmt::Display for NamePart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NamePart::Resource => "resource",
            NamePart::Export => "export",
            NamePart::Tool => "tool",
        })
    }
}

/// Why a name is not a valid Goondan tool name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The name is empty.
    #[error("{part} name is empty")]
    Empty {
        /// Which part is empty.
        part: NamePart,
    },
    /// A resource or export name contains the separator (NAME-3).
    #[error(
        "{part} name `{name}` contains `__`, which is reserved to separate resource and export"
    )]
    DoubleUnderscore {
        /// Which part.
        part: NamePart,
        /// The offending name.
        name: String,
    },
    /// A character outside ASCII letters, digits, `_` and `-` (NAME-5).
    #[error("{part} name `{name}` contains {found:?}; use ASCII letters, digits, `_` and `-`")]
    InvalidChar {
        /// Which part.
        part: NamePart,
        /// The offending name.
        name: String,
        /// The first character that is not allowed.
        found: char,
    },
    /// A resource name must start with a letter or `_` so the joined name is accepted everywhere.
    #[error("resource name `{name}` must start with a letter or `_`")]
    InvalidStart {
        /// The offending name.
        name: String,
    },
    /// A resource name ending in `_` would make `{resource}__{export}` split elsewhere (NAME-6).
    #[error("resource name `{name}` ends with `_`, so `{name}__...` would split at the wrong `__`")]
    TrailingUnderscore {
        /// The offending name.
        name: String,
    },
    /// The joined name is longer than [`MAX_TOOL_NAME_LEN`].
    #[error(
        "tool name `{name}` is {len} characters long; providers accept at most {MAX_TOOL_NAME_LEN}"
    )]
    TooLong {
        /// The joined name.
        name: String,
        /// Its length.
        len: usize,
    },
    /// The string has no `__`, so it is not a tool name (NAME-6).
    #[error("expected `{{resource}}__{{export}}`, but `{name}` has no `__`")]
    MissingSeparator {
        /// The string that was parsed.
        name: String,
    },
}

/// The rule a name breaks. The rules are `const fn`s ([`check_resource_name`],
/// [`check_export_name`], [`check_joined_len`]) so that one copy serves both the runtime
/// (which turns a broken rule into a [`NameError`]) and `#[tool]`, which evaluates them at
/// compile time on the names the author wrote and stops the build with [`NameRule::message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// The name is empty.
    Empty(NamePart),
    /// The byte at `at` starts a character outside ASCII letters, digits, `_` and `-` (NAME-5).
    InvalidChar {
        /// Which part.
        part: NamePart,
        /// The byte offset of the first character that is not allowed.
        at: usize,
    },
    /// The name contains the separator `__` (NAME-3).
    DoubleUnderscore(NamePart),
    /// A resource name starts with something other than a letter or `_`.
    InvalidStart,
    /// A resource name ends with `_`, so the joined name would split elsewhere (NAME-6).
    TrailingUnderscore,
    /// `{resource}__{export}` is longer than [`MAX_TOOL_NAME_LEN`] characters.
    TooLong {
        /// The joined name's length.
        len: usize,
    },
}

impl NameRule {
    /// What the author should change, as `#[tool]` reports it with the caret on the name.
    ///
    /// ```
    /// use goondan_runtime::tools::name::{NamePart, NameRule, check_export_name};
    /// assert_eq!(check_export_name("a__b"), Err(NameRule::DoubleUnderscore(NamePart::Export)));
    /// assert!(NameRule::DoubleUnderscore(NamePart::Export).message().starts_with("export name"));
    /// ```
    pub const fn message(self) -> &'static str {
        match self {
            NameRule::Empty(NamePart::Resource) => {
                "resource name is empty; use letters, digits, `_` and `-`, e.g. `text-utils`"
            }
            NameRule::Empty(_) => {
                "export name is empty; use letters, digits, `_` and `-`, e.g. `count-words`"
            }
            NameRule::InvalidChar {
                part: NamePart::Resource,
                ..
            } => {
                "resource name contains a character other than ASCII letters, digits, `_` and \
                 `-`; write it like `text-utils`"
            }
            NameRule::InvalidChar { .. } => {
                "export name contains a character other than ASCII letters, digits, `_` and \
                 `-`; write it like `count-words`"
            }
            NameRule::DoubleUnderscore(NamePart::Resource) => {
                "resource name contains `__`, which is reserved to separate resource and \
                 export; use a single `_` or `-`"
            }
            NameRule::DoubleUnderscore(_) => {
                "export name contains `__`, which is reserved to separate resource and export; \
                 use a single `_` or `-`"
            }
            NameRule::InvalidStart => "resource name must start with a letter or `_`",
            NameRule::TrailingUnderscore => {
                "resource name ends with `_`, so `{resource}__{export}` would split at the \
                 wrong `__`; remove the trailing `_`"
            }
            NameRule::TooLong { .. } => {
                "tool name `{resource}__{export}` is longer than 64 characters, the most \
                 providers accept; shorten the resource or the export name"
            }
        }
    }

    /// The [`NameError`] for `name`, the name that broke this rule.
    fn into_error(self, name: &str) -> NameError {
        let name_owned = || name.to_owned();
        match self {
            NameRule::Empty(part) => NameError::Empty { part },
            NameRule::InvalidChar { part, at } => NameError::InvalidChar {
                part,
                name: name_owned(),
                found: name
                    .get(at..)
                    .and_then(|rest| rest.chars().next())
                    .unwrap_or(char::REPLACEMENT_CHARACTER),
            },
            NameRule::DoubleUnderscore(part) => NameError::DoubleUnderscore {
                part,
                name: name_owned(),
            },
            NameRule::InvalidStart => NameError::InvalidStart { name: name_owned() },
            NameRule::TrailingUnderscore => NameError::TrailingUnderscore { name: name_owned() },
            NameRule::TooLong { len } => NameError::TooLong {
                name: name_owned(),
                len,
            },
        }
    }
}

/// Not empty, ASCII letters, digits, `_` and `-` only, no `__` (NAME-3, NAME-5).
const fn check_chars(part: NamePart, name: &str) -> Result<(), NameRule> {
    let bytes = name.as_bytes();
    if bytes.is_empty() {
        return Err(NameRule::Empty(part));
    }
    let mut at = 0;
    while at < bytes.len() {
        let b = bytes[at];
        if !(b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            return Err(NameRule::InvalidChar { part, at });
        }
        at += 1;
    }
    let mut at = 1;
    while at < bytes.len() {
        if bytes[at - 1] == b'_' && bytes[at] == b'_' {
            return Err(NameRule::DoubleUnderscore(part));
        }
        at += 1;
    }
    Ok(())
}

/// The rules of a Tool resource name, usable in constants (`#[tool]` checks its `name` so).
/// [`validate_resource_name`] says the same with the name in the error.
///
/// ```
/// use goondan_runtime::tools::name::{NameRule, check_resource_name};
/// const CHECKED: Result<(), NameRule> = check_resource_name("file-system");
/// assert_eq!(CHECKED, Ok(()));
/// assert_eq!(check_resource_name("tool_"), Err(NameRule::TrailingUnderscore));
/// ```
pub const fn check_resource_name(name: &str) -> Result<(), NameRule> {
    if let Err(rule) = check_chars(NamePart::Resource, name) {
        return Err(rule);
    }
    let bytes = name.as_bytes();
    let first = bytes[0];
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return Err(NameRule::InvalidStart);
    }
    if bytes[bytes.len() - 1] == b'_' {
        return Err(NameRule::TrailingUnderscore);
    }
    Ok(())
}

/// The rules of an export name, usable in constants. [`validate_export_name`] says the same
/// with the name in the error.
///
/// ```
/// use goondan_runtime::tools::name::check_export_name;
/// assert!(check_export_name("setChatAction").is_ok());
/// assert!(check_export_name("set.chat").is_err());
/// ```
pub const fn check_export_name(name: &str) -> Result<(), NameRule> {
    check_chars(NamePart::Export, name)
}

/// Whether `{resource}__{export}` fits in [`MAX_TOOL_NAME_LEN`] characters, for two names
/// that passed their own rules (so they are ASCII and bytes are characters).
///
/// ```
/// use goondan_runtime::tools::name::{NameRule, check_joined_len};
/// assert!(check_joined_len("bash", "exec").is_ok());
/// assert_eq!(check_joined_len("r", &"e".repeat(62)), Err(NameRule::TooLong { len: 65 }));
/// ```
pub const fn check_joined_len(resource: &str, export: &str) -> Result<(), NameRule> {
    let len = resource.len() + SEPARATOR.len() + export.len();
    if len > MAX_TOOL_NAME_LEN {
        return Err(NameRule::TooLong { len });
    }
    Ok(())
}

/// Checks a Tool resource name: ASCII letters, digits, `_`, `-`, starting with a letter or
/// `_`, not ending with `_`, no `__` (NAME-3, NAME-5). Lowercase is the documented style;
/// upper-case letters are accepted, as the seeds' own names use them.
///
/// ```
/// use goondan_runtime::tools::name::validate_resource_name;
/// assert!(validate_resource_name("file-system").is_ok());
/// assert!(validate_resource_name("myTool").is_ok());
/// assert!(validate_resource_name("file__system").is_err());
/// ```
pub fn validate_resource_name(name: &str) -> Result<(), NameError> {
    check_resource_name(name).map_err(|rule| rule.into_error(name))
}

/// Checks an export name: ASCII letters, digits, `_` and `-`, no `__` (NAME-3, NAME-5).
/// Lowercase is the documented style; `doSomething` and `setChatAction` are accepted too.
///
/// ```
/// use goondan_runtime::tools::name::validate_export_name;
/// assert!(validate_export_name("list-channels").is_ok());
/// assert!(validate_export_name("setChatAction").is_ok());
/// assert!(validate_export_name("set.chat").is_err());
/// ```
pub fn validate_export_name(name: &str) -> Result<(), NameError> {
    check_export_name(name).map_err(|rule| rule.into_error(name))
}

/// Splits at the first `__` without validating either part, like the seeds' `parseToolName`
/// (NAME-6). Returns `None` when there is no `__`.
///
/// ```
/// use goondan_runtime::tools::name::split_tool_name;
/// assert_eq!(split_tool_name("bash__exec"), Some(("bash", "exec")));
/// assert_eq!(split_tool_name("bash"), None);
/// ```
pub fn split_tool_name(full: &str) -> Option<(&str, &str)> {
    full.split_once(SEPARATOR)
}

/// Checks a full `{resource}__{export}` name without building it: it splits at the first `__`
/// (NAME-6), both parts follow their rules (NAME-3, NAME-5) and it fits [`MAX_TOOL_NAME_LEN`].
/// Returns the two parts.
///
/// ```
/// use goondan_runtime::tools::name::validate_tool_name;
/// assert_eq!(validate_tool_name("bash__exec")?, ("bash", "exec"));
/// assert!(validate_tool_name("bash__exec__now").is_err());
/// # Ok::<(), goondan_runtime::tools::name::NameError>(())
/// ```
pub fn validate_tool_name(full: &str) -> Result<(&str, &str), NameError> {
    let (resource, export) = split_tool_name(full).ok_or_else(|| NameError::MissingSeparator {
        name: full.to_owned(),
    })?;
    validate_resource_name(resource)?;
    validate_export_name(export)?;
    check_joined_len(resource, export).map_err(|rule| rule.into_error(full))?;
    Ok((resource, export))
}

/// A validated `{resource}__{export}` name. Cheap to clone.
///
/// ```
/// use goondan_runtime::ToolName;
/// let name = ToolName::new("file-system", "read")?;
/// assert_eq!(name.as_str(), "file-system__read");
/// assert_eq!(ToolName::parse("file-system__read")?, name);
/// # Ok::<(), goondan_runtime::tools::name::NameError>(())
/// ```
#[derive(Clone, serde::Serialize)]
#[serde(transparent)]
pub struct ToolName {
    full: ArcStr,
    #[serde(skip)]
    split: usize,
}

impl ToolName {
    /// Joins a resource and an export name, validating both and the result (NAME-1, NAME-4).
    pub fn new(resource: &str, export: &str) -> Result<Self, NameError> {
        validate_resource_name(resource)?;
        validate_export_name(export)?;
        Self::parse(&format!("{resource}{SEPARATOR}{export}"))
    }

    /// Parses a full name: splits at the first `__` and validates both parts (NAME-6).
    pub fn parse(full: &str) -> Result<Self, NameError> {
        let (resource, _) = validate_tool_name(full)?;
        Ok(Self {
            full: full.into(),
            split: resource.len(),
        })
    }

    /// The full name, as the model sees it.
    pub fn as_str(&self) -> &str {
        &self.full
    }

    /// The full name, shared: a call's result names its tool with it, without a copy.
    pub fn as_arc_str(&self) -> &ArcStr {
        &self.full
    }

    /// The Tool resource's name.
    pub fn resource(&self) -> &str {
        &self.full[..self.split]
    }

    /// The export's name.
    pub fn export(&self) -> &str {
        &self.full[self.split + SEPARATOR.len()..]
    }

    /// The resource's identity, `Tool/{resource}` (REG-2).
    pub fn identity(&self) -> String {
        format!("Tool/{}", self.resource())
    }
}

// Equality, order and hash follow the full string only, so that a `&str` finds a `ToolName`
// in maps (`Borrow<str>` requires the same hash as `str`).
impl PartialEq for ToolName {
    fn eq(&self, other: &Self) -> bool {
        *self.full == *other.full
    }
}

impl Eq for ToolName {}

impl std::hash::Hash for ToolName {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (*self.full).hash(state);
    }
}

impl PartialOrd for ToolName {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ToolName {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (*self.full).cmp(&*other.full)
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.full)
    }
}

impl fmt::Debug for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ToolName({:?})", &*self.full)
    }
}

impl std::borrow::Borrow<str> for ToolName {
    fn borrow(&self) -> &str {
        &self.full
    }
}

impl AsRef<str> for ToolName {
    fn as_ref(&self) -> &str {
        &self.full
    }
}

impl<'de> serde::Deserialize<'de> for ToolName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        ToolName::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Whether `name` matches `pattern`: the whole name, `*` standing for any run of characters
/// (`bash__*`, `*__write`, `*`). Approval policies and toolsets read their patterns so.
pub(crate) fn glob_matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(first) = parts.next() else {
        return false;
    };
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty(); // no `*`: the whole name
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_1_joins_with_double_underscore() {
        let n = ToolName::new("bash", "exec").unwrap();
        assert_eq!(n.as_str(), "bash__exec");
        assert_eq!(
            ToolName::new("file-system", "read").unwrap().as_str(),
            "file-system__read"
        );
    }

    #[test]
    fn name_2_is_used_as_is_without_encoding() {
        let n = ToolName::new("http-fetch", "list-channels").unwrap();
        assert_eq!(n.to_string(), "http-fetch__list-channels");
        assert_eq!(
            serde_json::to_value(&n).unwrap(),
            "http-fetch__list-channels"
        );
        let back: ToolName = serde_json::from_str("\"http-fetch__list-channels\"").unwrap();
        assert_eq!(back, n);
    }

    #[test]
    fn name_3_rejects_double_underscore_in_either_part() {
        assert!(matches!(
            ToolName::new("my__tool", "run"),
            Err(NameError::DoubleUnderscore {
                part: NamePart::Resource,
                ..
            })
        ));
        assert!(matches!(
            ToolName::new("tool", "run__fast"),
            Err(NameError::DoubleUnderscore {
                part: NamePart::Export,
                ..
            })
        ));
        // A trailing `_` on the resource would create `___` and split elsewhere.
        assert!(matches!(
            ToolName::new("tool_", "run"),
            Err(NameError::TrailingUnderscore { .. })
        ));
    }

    #[test]
    fn name_4_single_export_still_uses_full_form() {
        let n = ToolName::new("echo", "echo").unwrap();
        assert_eq!(n.as_str(), "echo__echo");
        assert_eq!(n.resource(), "echo");
        assert_eq!(n.export(), "echo");
    }

    #[test]
    fn name_5_export_charset() {
        for ok in ["list-channels", "post_message", "v2", "a-b_c-1", "List"] {
            assert!(validate_export_name(ok).is_ok(), "{ok}");
        }
        for bad in ["a.b", "a b", "é", "a/b", "Ä", ""] {
            assert!(validate_export_name(bad).is_err(), "{bad:?}");
        }
        assert!(matches!(
            validate_resource_name("9lives"),
            Err(NameError::InvalidStart { .. })
        ));
        let long = "a".repeat(40);
        assert!(matches!(
            ToolName::new(&long, &long),
            Err(NameError::TooLong { len: 82, .. })
        ));
    }

    #[test]
    fn name_5_accepts_upper_case_as_the_seeds_name_tools() {
        // The API reference's example and upstream's base package exports.
        let n = ToolName::parse("my-tool__doSomething").unwrap();
        assert_eq!((n.resource(), n.export()), ("my-tool", "doSomething"));
        for export in ["setChatAction", "downloadFile"] {
            assert_eq!(ToolName::new("telegram", export).unwrap().export(), export);
        }
        assert_eq!(
            ToolName::new("MyTool", "Run").unwrap().as_str(),
            "MyTool__Run"
        );
        // The joined name still fits `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`.
        assert!(matches!(
            validate_resource_name("9Lives"),
            Err(NameError::InvalidStart { .. })
        ));
        assert!(matches!(
            validate_resource_name("-Dash"),
            Err(NameError::InvalidStart { .. })
        ));
        assert!(matches!(
            validate_export_name("doSomething!"),
            Err(NameError::InvalidChar { found: '!', .. })
        ));
        let long = format!("A{}", "b".repeat(61));
        assert!(matches!(
            ToolName::new(&long, "X"),
            Err(NameError::TooLong { len: 65, .. })
        ));
    }

    #[test]
    fn name_3_double_underscore_stays_forbidden_with_upper_case() {
        assert!(matches!(
            ToolName::new("MyTool", "do__It"),
            Err(NameError::DoubleUnderscore {
                part: NamePart::Export,
                ..
            })
        ));
        assert!(matches!(
            ToolName::parse("My__Tool__run"),
            Err(NameError::DoubleUnderscore { .. })
        ));
    }

    #[test]
    fn name_6_parse_splits_at_first_separator() {
        assert_eq!(split_tool_name("a__b__c"), Some(("a", "b__c")));
        assert_eq!(split_tool_name("bash"), None);
        assert_eq!(split_tool_name("a___b"), Some(("a", "_b")));
        assert!(matches!(
            ToolName::parse("bash"),
            Err(NameError::MissingSeparator { .. })
        ));
        // `a__b__c` splits at the first `__`, and the export `b__c` is refused.
        assert!(matches!(
            ToolName::parse("a__b__c"),
            Err(NameError::DoubleUnderscore {
                part: NamePart::Export,
                ..
            })
        ));
        assert!(ToolName::parse("__exec").is_err());
        assert!(ToolName::parse("bash__").is_err());
        let n = ToolName::parse("text-utils__count-words").unwrap();
        assert_eq!((n.resource(), n.export()), ("text-utils", "count-words"));
    }

    // The rules are `const fn`s: `#[tool]` evaluates them in constants like these.
    const _: () = assert!(check_resource_name("text-utils").is_ok());
    const _: () = assert!(check_export_name("setChatAction").is_ok());
    const _: () = assert!(check_joined_len("r", "e").is_ok());

    #[test]
    fn name_3_and_name_5_const_rules_and_errors_agree() {
        for name in [
            "bash",
            "file-system",
            "_private",
            "Text",
            "",
            "text utils",
            "a.b",
            "é",
            "my__tool",
            "tool_",
            "9lives",
            "-dash",
            "a___b",
            "__",
            "_",
            "x_y-z",
        ] {
            assert_eq!(
                check_resource_name(name).is_ok(),
                validate_resource_name(name).is_ok(),
                "{name:?}"
            );
            assert_eq!(
                check_export_name(name).is_ok(),
                validate_export_name(name).is_ok(),
                "{name:?}"
            );
        }
        assert_eq!(
            check_resource_name("tool_"),
            Err(NameRule::TrailingUnderscore)
        );
        assert_eq!(check_resource_name("9lives"), Err(NameRule::InvalidStart));
        assert_eq!(
            check_export_name("a__b"),
            Err(NameRule::DoubleUnderscore(NamePart::Export))
        );
        assert_eq!(
            check_export_name("ab.c"),
            Err(NameRule::InvalidChar {
                part: NamePart::Export,
                at: 2
            })
        );
        assert_eq!(check_joined_len("r", &"e".repeat(61)), Ok(()));
        assert_eq!(
            check_joined_len("r", &"e".repeat(62)),
            Err(NameRule::TooLong { len: 65 })
        );
    }

    #[test]
    fn name_5_the_refused_character_is_named_even_when_not_ascii() {
        assert!(matches!(
            validate_export_name("caf\u{e9}s"),
            Err(NameError::InvalidChar {
                found: '\u{e9}',
                ..
            })
        ));
        assert!(matches!(
            validate_resource_name("a\u{1F600}"),
            Err(NameError::InvalidChar {
                found: '\u{1F600}',
                ..
            })
        ));
    }

    #[test]
    fn every_rule_has_a_message_naming_its_part() {
        for (rule, part) in [
            (NameRule::Empty(NamePart::Resource), "resource"),
            (NameRule::Empty(NamePart::Export), "export"),
            (
                NameRule::InvalidChar {
                    part: NamePart::Resource,
                    at: 0,
                },
                "resource",
            ),
            (
                NameRule::InvalidChar {
                    part: NamePart::Export,
                    at: 0,
                },
                "export",
            ),
            (NameRule::DoubleUnderscore(NamePart::Resource), "resource"),
            (NameRule::DoubleUnderscore(NamePart::Export), "export"),
            (NameRule::InvalidStart, "resource"),
            (NameRule::TrailingUnderscore, "resource"),
            (NameRule::TooLong { len: 65 }, "tool"),
        ] {
            assert!(
                rule.message().starts_with(part),
                "{rule:?}: {}",
                rule.message()
            );
        }
    }

    #[test]
    fn reg_2_identity_is_kind_slash_name() {
        assert_eq!(
            ToolName::new("bash", "exec").unwrap().identity(),
            "Tool/bash"
        );
    }
}
