//! [`ToolChoice`]: whether the model must, may or must not call a tool in a Step, or which one.
//!
//! A Model sets it for every Step, and apart for the first Step of a Turn (the provider
//! configuration's `tool_choice` and `first_step_tool_choice`); a step middleware sets it for
//! one Step (`StepContext::tool_choice`), which wins. Each provider sends it in its own shape: OpenAI's `tool_choice`, Anthropic's
//! `tool_choice.type` (`auto`, `any`, `none`, `tool`), Gemini's
//! `toolConfig.functionCallingConfig` (`AUTO`, `ANY`, `NONE`, `allowedFunctionNames`).
//!
//! In a bundle it is a string: `auto`, `required`, `none`, or the name of one tool.
//!
//! ```
//! use goondan_runtime::tools::catalog::ToolChoice;
//! assert_eq!("required".parse::<ToolChoice>()?, ToolChoice::Required);
//! let one: ToolChoice = "file-system__write".parse()?;
//! assert_eq!(one.tool(), Some("file-system__write"));
//! assert_eq!(one.to_string(), "file-system__write");
//! assert!("sometimes".parse::<ToolChoice>().is_err());
//! # Ok::<(), goondan_runtime::tools::catalog::ToolChoiceError>(())
//! ```

use std::fmt;
use std::str::FromStr;

use crate::tools::name::ToolName;

/// Whether the model must, may or must not call a tool, or which one it must call.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum ToolChoice {
    /// The model decides (every provider's default).
    #[default]
    Auto,
    /// The model must call at least one tool of the Step's catalog.
    Required,
    /// The model must not call a tool; the tools are still shown.
    None,
    /// The model must call this tool, which must be in the Step's catalog.
    Tool(ToolName),
}

impl ToolChoice {
    /// The tool a [`ToolChoice::Tool`] names.
    pub fn tool(&self) -> Option<&str> {
        match self {
            ToolChoice::Tool(name) => Some(name.as_str()),
            _ => None,
        }
    }

    /// Whether the model must call a tool (`Required` or one named tool).
    pub fn demands_a_call(&self) -> bool {
        matches!(self, ToolChoice::Required | ToolChoice::Tool(_))
    }
}

/// A tool choice that is neither `auto`, `required`, `none` nor a valid tool name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{found}` is not a tool choice: write `auto`, `required`, `none`, or a tool's name `{{resource}}__{{export}}` ({reason})"
)]
pub struct ToolChoiceError {
    /// What was given.
    pub found: String,
    /// Why it is not a tool name.
    pub reason: String,
}

impl FromStr for ToolChoice {
    type Err = ToolChoiceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(ToolChoice::Auto),
            "required" => Ok(ToolChoice::Required),
            "none" => Ok(ToolChoice::None),
            name => ToolName::parse(name)
                .map(ToolChoice::Tool)
                .map_err(|e| ToolChoiceError {
                    found: name.chars().take(200).collect(),
                    reason: e.to_string(),
                }),
        }
    }
}

impl fmt::Display for ToolChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "required",
            ToolChoice::None => "none",
            ToolChoice::Tool(name) => name.as_str(),
        })
    }
}

impl serde::Serialize for ToolChoice {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for ToolChoice {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_choice_reads_back_from_its_text_and_bad_ones_say_what_is_expected() {
        let name = ToolName::parse("file-system__write").unwrap_or_else(|e| panic!("{e}"));
        for choice in [
            ToolChoice::Auto,
            ToolChoice::Required,
            ToolChoice::None,
            ToolChoice::Tool(name),
        ] {
            assert_eq!(choice.to_string().parse::<ToolChoice>().ok(), Some(choice));
        }
        for bad in ["", "Auto", "any", "write", "a__b__c", "file system__write"] {
            let e = bad.parse::<ToolChoice>().err();
            let message = e.map(|e| e.to_string()).unwrap_or_default();
            assert!(
                message.contains("`auto`, `required`, `none`"),
                "{bad}: {message}"
            );
        }
        let json: Result<ToolChoice, _> = serde_json::from_value(serde_json::json!("none"));
        assert_eq!(json.ok(), Some(ToolChoice::None));
        assert!(serde_json::from_value::<ToolChoice>(serde_json::json!(3)).is_err());
    }
}
