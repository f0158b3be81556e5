//! What the MCP benches serve on rmcp's side: rmcp's own server with 50 tools made by its
//! macros (rmcp's macros are a dev-dependency only), and the trivial tool's input, the same on
//! both sides. Included by `mcp.rs` and `mcp_http.rs` with `#[path]`.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{ServerHandler, tool, tool_handler, tool_router};

/// The trivial tool's input, the same on both sides.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct EchoInput {
    /// The text to give back.
    pub(crate) text: String,
}

/// 50 tools with rmcp's macros: `echo` (the one called) and `t1`..`t49`, all `{text}` -> text.
macro_rules! rmcp_server {
    ($($name:ident),*) => {
        #[derive(Clone)]
        pub(crate) struct RmcpServer {
            pub(crate) tool_router: ToolRouter<Self>,
        }

        #[tool_router(router = tool_router)]
        impl RmcpServer {
            /// Gives the text back.
            #[tool(description = "Gives the text back.")]
            async fn echo(&self, Parameters(input): Parameters<EchoInput>) -> String {
                input.text
            }
            $(
                /// Gives the text back.
                #[tool(description = "Gives the text back.")]
                async fn $name(&self, Parameters(input): Parameters<EchoInput>) -> String {
                    input.text
                }
            )*
        }
    };
}

rmcp_server!(
    t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13, t14, t15, t16, t17, t18, t19, t20, t21,
    t22, t23, t24, t25, t26, t27, t28, t29, t30, t31, t32, t33, t34, t35, t36, t37, t38, t39, t40,
    t41, t42, t43, t44, t45, t46, t47, t48, t49
);

#[tool_handler(router = self.tool_router)]
impl ServerHandler for RmcpServer {}

impl RmcpServer {
    /// The server with its router built now.
    #[allow(dead_code)] // one bench clones a router built once instead
    pub(crate) fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    /// Its router of 50 tools, to build once and clone.
    #[allow(dead_code)] // the other bench builds a server at once
    pub(crate) fn router() -> ToolRouter<Self> {
        Self::tool_router()
    }
}
