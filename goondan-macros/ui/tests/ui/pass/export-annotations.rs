use goondan_runtime::prelude::*;

#[derive(Serialize, JsonSchema)]
pub struct Listing {
    names: Vec<String>,
}

#[tool(name = "files")]
pub mod files {
    use super::*;

    /// Lists a directory.
    #[export(
        title = "List files",
        read_only,
        idempotent = true,
        open_world = false,
        output_schema
    )]
    pub fn list(dir: String) -> Result<Listing, ToolError> {
        Ok(Listing { names: vec![dir] })
    }

    /// Deletes a file.
    #[export(destructive)]
    pub async fn delete(path: String) -> String {
        path
    }

    /// Counts.
    #[export(output_schema = true)]
    pub fn count(dir: String) -> usize {
        dir.len()
    }
}

fn main() {
    let tool = files::TOOL.build().unwrap();
    let mut exports = tool.exports();
    let (_, list) = exports.next().unwrap();
    let a = list.annotations();
    assert_eq!(a.title.as_deref(), Some("List files"));
    assert_eq!(
        (a.read_only, a.idempotent, a.open_world, a.destructive),
        (Some(true), Some(true), Some(false), None)
    );
    let schema = list.output_schema().unwrap();
    assert!(!schema.wraps_result());
    assert_eq!(schema.schema()["properties"]["names"]["type"], "array");
    let (_, delete) = exports.next().unwrap();
    assert_eq!(delete.annotations().destructive, Some(true));
    assert!(delete.output_schema().is_none());
    let (_, count) = exports.next().unwrap();
    assert!(count.output_schema().unwrap().wraps_result());
}
