//! [`ExportUi`]: the page an export shows in a host that renders MCP Apps (the
//! `io.modelcontextprotocol/ui` extension, SEP-1865), and who may call the export: the model,
//! the page (the "app"), or both.
//!
//! It is data about the export, like its [annotations](crate::tools::annotations): MCP
//! publishes it as the tool's `_meta.ui` (`{resourceUri, visibility}`), and the MCP server
//! (`goondan_runtime::mcp::server`, feature `mcp`) serves the page itself. A call from a page
//! is an ordinary call: the executor runs it like any other.
//!
//! In `#[tool]`: `#[export(ui = "ui://counter/view.html", visibility = "app")]`; by hand:
//! [`Export::with_ui`](crate::Export::with_ui); in a bundle's Tool resource:
//! `ui: {resourceUri: ui://counter/view.html, visibility: [app]}` on the export.
//!
//! ```
//! use goondan_runtime::tools::ui::{ExportUi, Visibility};
//! let ui = ExportUi::page("ui://counter/view.html").visibility(Visibility::App);
//! assert_eq!(
//!     serde_json::to_value(&ui)?,
//!     serde_json::json!({"resourceUri": "ui://counter/view.html", "visibility": ["app"]})
//! );
//! assert!(!ui.visible_to_model());
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde::{Deserialize, Serialize};

/// The scheme every page's URI starts with.
pub const UI_SCHEME: &str = "ui://";

/// The page an export shows, and who may call it: MCP's `_meta.ui` of a tool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExportUi {
    /// The `ui://` URI of the page that renders the export's results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_uri: Option<String>,
    /// Who may call the export (default: the model and the page).
    #[serde(
        default,
        skip_serializing_if = "Visibility::is_both",
        with = "visibility"
    )]
    pub visibility: Visibility,
}

/// Who may call an export, as MCP Apps' `visibility` array says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Visibility {
    /// `["model", "app"]`: listed to the model and callable from the page (the default).
    #[default]
    Both,
    /// `["model"]`: listed to the model; a host refuses the page's calls of it.
    Model,
    /// `["app"]`: callable from the page only; left out of what the model is shown, and of
    /// the `tools/list` of a client that does not render pages.
    App,
}

impl Visibility {
    /// Whether it is the default, `["model", "app"]`.
    pub fn is_both(&self) -> bool {
        *self == Self::Both
    }

    /// The extension's array: `["model", "app"]`, `["model"]` or `["app"]`.
    pub fn as_array(self) -> &'static [&'static str] {
        match self {
            Self::Both => &["model", "app"],
            Self::Model => &["model"],
            Self::App => &["app"],
        }
    }

    /// `"model"`, `"app"` or `"both"` (as `#[export(visibility = ...)]` writes it).
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "both" => Some(Self::Both),
            "model" => Some(Self::Model),
            "app" => Some(Self::App),
            _ => None,
        }
    }
}

/// `visibility` as the extension's array of `"model"` and `"app"`.
mod visibility {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serializer};

    use super::Visibility;

    pub(super) fn serialize<S: Serializer>(v: &Visibility, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.as_array())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Visibility, D::Error> {
        let words = Vec::<String>::deserialize(d)?;
        let (mut model, mut app) = (false, false);
        for word in &words {
            match word.as_str() {
                "model" => model = true,
                "app" => app = true,
                other => {
                    return Err(D::Error::custom(format!(
                        "unknown visibility `{other}`; expected `model` or `app`"
                    )));
                }
            }
        }
        match (model, app) {
            (true, false) => Ok(Visibility::Model),
            (false, true) => Ok(Visibility::App),
            (true, true) => Ok(Visibility::Both),
            (false, false) => Err(D::Error::custom(
                "`visibility` is empty; list `model`, `app` or both",
            )),
        }
    }
}

impl ExportUi {
    /// The export shows the page at `uri` (a `ui://` URI), callable by the model and the page.
    pub fn page(uri: impl Into<String>) -> Self {
        Self {
            resource_uri: Some(uri.into()),
            visibility: Visibility::Both,
        }
    }

    /// No page; only who may call the export (a page of another export calls it, say).
    pub fn visible_to(visibility: Visibility) -> Self {
        Self {
            resource_uri: None,
            visibility,
        }
    }

    /// Sets who may call the export.
    #[must_use]
    pub fn visibility(mut self, visibility: Visibility) -> Self {
        self.visibility = visibility;
        self
    }

    /// The export's part of a mapping that describes its page too (a bundle export's `ui`):
    /// its `resourceUri` and `visibility`, every other key left to the page.
    pub fn from_mapping(
        map: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Self, serde_json::Error> {
        let own: serde_json::Map<String, serde_json::Value> = map
            .iter()
            .filter(|(k, _)| matches!(k.as_str(), "resourceUri" | "visibility"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        serde_json::from_value(serde_json::Value::Object(own))
    }

    /// Whether the model is shown the export (`visibility` has `model`).
    pub fn visible_to_model(&self) -> bool {
        self.visibility != Visibility::App
    }

    /// Whether a page may call the export (`visibility` has `app`).
    pub fn visible_to_app(&self) -> bool {
        self.visibility != Visibility::Model
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn visibility_reads_the_extensions_arrays_and_refuses_the_rest() {
        let read = |v| serde_json::from_value::<ExportUi>(v);
        assert_eq!(
            read(json!({"visibility": ["app", "model"]})).ok(),
            Some(ExportUi::visible_to(Visibility::Both))
        );
        assert_eq!(
            read(json!({"resourceUri": "ui://a", "visibility": ["model"]})).ok(),
            Some(ExportUi::page("ui://a").visibility(Visibility::Model))
        );
        assert!(read(json!({"visibility": []})).is_err());
        assert!(read(json!({"visibility": ["user"]})).is_err());
        assert!(read(json!({"visible": ["app"]})).is_err());
        // The default is not written.
        assert_eq!(
            serde_json::to_value(ExportUi::page("ui://a")).ok(),
            Some(json!({"resourceUri": "ui://a"}))
        );
    }
}
