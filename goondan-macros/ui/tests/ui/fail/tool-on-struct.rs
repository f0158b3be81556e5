use goondan_runtime::prelude::*;

#[tool(name = "text-utils")]
pub struct TextUtils {
    pub prefix: String,
}

fn main() {}
