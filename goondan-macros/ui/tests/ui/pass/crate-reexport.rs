// A crate that re-exports the runtime under another path.
mod sdk {
    pub use goondan_runtime as goondan;
}

use sdk::goondan::tool;

#[tool(name = "greeter", crate = crate::sdk::goondan)]
pub mod greeter {
    pub fn hello(name: String) -> String {
        format!("hello {name}")
    }
}

#[tool(name = "farewell", crate = crate::sdk::goondan)]
pub fn bye(name: String) -> String {
    format!("bye {name}")
}

fn main() {
    assert_eq!(greeter::TOOL.build().unwrap().name(), "greeter");
    assert_eq!(bye::TOOL.build().unwrap().name(), "farewell");
}
