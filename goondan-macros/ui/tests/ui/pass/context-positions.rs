use goondan_runtime::prelude::*;

#[tool(name = "positions")]
pub mod positions {
    use super::*;

    pub fn first(ctx: &ToolContext, a: String) -> String {
        format!("{}{a}", ctx.agent_name())
    }

    pub fn middle(a: String, ctx: &goondan_runtime::ToolContext, b: String) -> String {
        format!("{a}{}{b}", ctx.agent_name())
    }

    pub async fn last(a: String, ctx: &ToolContext) -> String {
        format!("{a}{}", ctx.agent_name())
    }

    pub fn only(ctx: &ToolContext) -> String {
        ctx.agent_name().to_owned()
    }
}

fn main() {
    assert_eq!(positions::TOOL.build().unwrap().exports().len(), 4);
}
