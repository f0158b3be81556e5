use goondan_runtime::prelude::*;

#[tool(name = "types")]
pub mod types {
    /// `r#` is dropped from the export name and from the property name.
    pub fn r#type(
        r#type: String,
        /// Renamed with serde.
        #[serde(rename = "q")]
        query: String,
        #[serde(default)] verbose: bool,
    ) -> String {
        format!("{type}{query}{verbose}")
    }
}

fn main() {
    let tool = types::TOOL.build().unwrap();
    let (name, export) = tool.exports().next().unwrap();
    assert_eq!(name.as_str(), "types__type");
    assert_eq!(
        export.parameters()["required"],
        serde_json::json!(["type", "q"])
    );
}
