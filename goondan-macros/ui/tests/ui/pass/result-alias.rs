use goondan_runtime::prelude::*;

#[tool(name = "files")]
pub mod files {
    /// `io::Result<T>` is fallible: its `Err` becomes a tool error.
    pub fn size(path: String) -> std::io::Result<u64> {
        Ok(std::fs::metadata(path)?.len())
    }
}

fn main() {
    assert_eq!(files::TOOL.build().unwrap().exports().len(), 1);
}
