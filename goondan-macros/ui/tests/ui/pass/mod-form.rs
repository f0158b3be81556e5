use goondan_runtime::prelude::*;

/// Text utilities.
#[tool(name = "text-utils")]
pub mod text_utils {
    use super::*;

    /// Convert text to uppercase.
    pub async fn uppercase(
        ctx: &ToolContext,
        /// The text to convert.
        text: String,
    ) -> Result<String, ToolError> {
        let _ = ctx.agent_name();
        Ok(shout(text))
    }

    /// Count the words of a text.
    pub fn count_words(
        /// The text whose words to count.
        text: String,
    ) -> usize {
        text.split_whitespace().count()
    }

    // Not `pub`: a helper, not an export.
    fn shout(text: String) -> String {
        text.to_uppercase()
    }
}

fn main() {
    let tool = text_utils::TOOL.build().unwrap();
    let names: Vec<String> = tool.tool_names().map(|n| n.to_string()).collect();
    assert_eq!(names, ["text-utils__uppercase", "text-utils__count_words"]);
    assert_eq!(text_utils::count_words("a b c".into()), 3);
}
