use goondan_runtime::prelude::*;

/// Repeat the text.
#[tool(name = "echo")]
pub async fn echo(text: String) -> String {
    text
}

fn main() {
    let tool = echo::TOOL.build().unwrap();
    assert_eq!(tool.tool_names().next().unwrap().as_str(), "echo__echo");
    assert_eq!(tool.description(), Some("Repeat the text."));
    // The function is still a function.
    let _future = echo("hi".to_owned());
}
