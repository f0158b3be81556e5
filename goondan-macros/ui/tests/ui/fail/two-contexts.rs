use goondan_runtime::prelude::*;

#[tool(name = "whoami")]
pub fn whoami(ctx: &ToolContext, again: &ToolContext) -> String {
    format!("{}{}", ctx.agent_name(), again.agent_name())
}

fn main() {}
