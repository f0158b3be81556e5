//! [`ToolSource`]: where a tool comes from, as the catalog reports it (CAT-6).

use serde::{Deserialize, Serialize};

/// Where a tool comes from, as the catalog reports it (CAT-6):
/// `{type: config|extension|mcp, name, mcp?: {extensionName, serverName?}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSource {
    /// `config`, `extension` or `mcp`.
    #[serde(rename = "type")]
    pub kind: SourceKind,
    /// The resource or extension name.
    pub name: String,
    /// The MCP server behind the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpSource>,
}

/// The kind of a [`ToolSource`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// A Tool resource (compiled with `#[tool]` or declared in a bundle).
    Config,
    /// Registered at run time by an extension.
    Extension,
    /// Bridged from an MCP server.
    Mcp,
}

/// The MCP server of an `mcp` [`ToolSource`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpSource {
    /// The extension that runs the MCP client.
    pub extension_name: String,
    /// The server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
}

impl ToolSource {
    /// A Tool resource.
    pub fn config(name: impl Into<String>) -> Self {
        Self {
            kind: SourceKind::Config,
            name: name.into(),
            mcp: None,
        }
    }

    /// A tool an extension registered.
    pub fn extension(name: impl Into<String>) -> Self {
        Self {
            kind: SourceKind::Extension,
            name: name.into(),
            mcp: None,
        }
    }

    /// A tool bridged from an MCP server.
    pub fn mcp(
        name: impl Into<String>,
        extension_name: impl Into<String>,
        server_name: Option<String>,
    ) -> Self {
        Self {
            kind: SourceKind::Mcp,
            name: name.into(),
            mcp: Some(McpSource {
                extension_name: extension_name.into(),
                server_name,
            }),
        }
    }
}
