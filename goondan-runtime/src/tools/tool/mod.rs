//! A Tool resource: a name, a description, an error message limit and its exports, each with a
//! parameter schema and a handler (SPEC-1..6).
//!
//! - [`source`]: [`ToolSource`], where a tool comes from.
//! - [`export`]: [`Export`], one function of the resource.
//! - [`resource`]: [`Tool`] and its [`ToolBuilder`]; [`ToolDefinitionError`] (in `definition`).
//! - [`registration`]: [`IntoTool`], [`StaticTool`] and `#[tool]`'s link-time registration.
//! - [`spec`]: [`ExportSpec`], an export without its handler.

mod definition;
pub mod export;
pub mod registration;
pub mod resource;
pub mod source;
pub mod spec;

pub use self::definition::ToolDefinitionError;
pub use self::export::Export;
pub use self::registration::{
    IntoTool, StaticTool, finish_generated, is_whole_input, linked_tools,
};
pub use self::resource::{Tool, ToolBuilder};
pub use self::source::{McpSource, SourceKind, ToolSource};
pub use self::spec::ExportSpec;
