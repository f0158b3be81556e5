use goondan_runtime::prelude::*;

#[tool(name = "log")]
pub mod log {
    pub fn write(line: String) {
        let _ = line;
    }

    pub async fn flush() -> () {}
}

fn main() {
    assert_eq!(log::TOOL.build().unwrap().exports().len(), 2);
}
