use goondan_runtime::prelude::*;

#[tool(name = "whoami")]
pub fn whoami(ctx: ToolContext) -> String {
    ctx.agent_name().to_owned()
}

fn main() {}
