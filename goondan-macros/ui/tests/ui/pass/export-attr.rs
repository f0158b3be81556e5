use std::time::Duration;

use goondan_runtime::prelude::*;

#[tool(
    name = "text-utils",
    description = "Text tools",
    error_message_limit = 200
)]
pub mod text_utils {
    /// Ignored: `#[export(description)]` wins.
    #[export(name = "count-words", description = "Count words", timeout_ms = 1500)]
    pub fn count_words(text: String) -> usize {
        text.split_whitespace().count()
    }
}

/// Say hello.
#[tool(name = "greeter")]
#[export(name = "say-hello", timeout_ms = 10)]
pub fn hello(name: String) -> String {
    format!("hello {name}")
}

fn main() {
    let tool = text_utils::TOOL.build().unwrap();
    assert_eq!(tool.error_message_limit(), 200);
    assert_eq!(tool.description(), Some("Text tools"));
    let (name, export) = tool.exports().next().unwrap();
    assert_eq!(name.as_str(), "text-utils__count-words");
    assert_eq!(export.description(), Some("Count words"));
    assert_eq!(export.timeout(), Some(Duration::from_millis(1500)));

    let tool = hello::TOOL.build().unwrap();
    let (name, export) = tool.exports().next().unwrap();
    assert_eq!(name.as_str(), "greeter__say-hello");
    assert_eq!(export.timeout(), Some(Duration::from_millis(10)));
}
