//! [`ToolDefinitionError`]: why a Tool definition is refused.

use crate::tools::name::NameError;
use crate::tools::schema::SchemaError;

/// Why a [`Tool`](super::Tool) definition is refused (SPEC-2, SPEC-3, SPEC-6, NAME-3, NAME-5).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolDefinitionError {
    /// A name breaks the naming rules.
    #[error("tool `{resource}`: {source}")]
    InvalidName {
        /// The resource.
        resource: String,
        /// What is wrong.
        #[source]
        source: NameError,
    },
    /// The resource has no export (SPEC-2).
    #[error("tool `{resource}` has no exports; a Tool resource needs at least one")]
    NoExports {
        /// The resource.
        resource: String,
    },
    /// Two exports share a name (SPEC-3).
    #[error("tool `{resource}` has two exports named `{export}`; export names must be unique")]
    DuplicateExport {
        /// The resource.
        resource: String,
        /// The repeated export name.
        export: String,
    },
    /// An export's parameters are not an object schema (SPEC-6).
    #[error("tool `{resource}`, export `{export}`: {source}")]
    InvalidParameters {
        /// The resource.
        resource: String,
        /// The export.
        export: String,
        /// What is wrong.
        #[source]
        source: SchemaError,
    },
    /// An export marked `#[export(input = "whole")]` takes a type whose schema is not an
    /// object, so it cannot be the whole input (SPEC-6).
    #[error(
        "tool `{resource}`, export `{export}`: its input is marked `#[export(input = \"whole\")]`, \
         but the type's schema is not an object with properties ({source}); use a struct with \
         named fields, or remove `input = \"whole\"` to make the parameter a named property"
    )]
    WholeInputNotObject {
        /// The resource.
        resource: String,
        /// The export.
        export: String,
        /// What is wrong.
        #[source]
        source: SchemaError,
    },
}

impl ToolDefinitionError {
    /// The resource whose definition is refused.
    pub fn resource(&self) -> &str {
        match self {
            Self::InvalidName { resource, .. }
            | Self::NoExports { resource }
            | Self::DuplicateExport { resource, .. }
            | Self::InvalidParameters { resource, .. }
            | Self::WholeInputNotObject { resource, .. } => resource,
        }
    }
}
