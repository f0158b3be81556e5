//! [`ExportSpec`]: the descriptive part of an export, as a bundle's Tool resource declares it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Export;
use crate::tools::annotations::ExportAnnotations;
use crate::tools::output_schema::OutputSchema;

/// The descriptive part of an export, without its handler: what a bundle's Tool resource
/// declares (SPEC-7) and what catalogs show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportSpec {
    /// The export's name.
    pub name: String,
    /// The description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The parameter schema.
    pub parameters: Value,
    /// The title and effect hints.
    #[serde(default, skip_serializing_if = "ExportAnnotations::is_empty")]
    pub annotations: ExportAnnotations,
    /// The published output schema, if any.
    #[serde(
        default,
        rename = "outputSchema",
        skip_serializing_if = "Option::is_none"
    )]
    pub output_schema: Option<OutputSchema>,
}

impl From<&Export> for ExportSpec {
    fn from(e: &Export) -> Self {
        Self {
            name: e.name().to_owned(),
            description: e.description().map(str::to_owned),
            parameters: e.parameters().clone(),
            annotations: e.annotations().clone(),
            output_schema: e.output_schema().map(|o| (**o).clone()),
        }
    }
}
