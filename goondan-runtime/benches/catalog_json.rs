//! A 50-tool catalog as the JSON a provider request carries, in each dialect: goondan's
//! `Dialect::tools_json` against rmcp's `list_all` plus serialisation (a router built with rmcp's
//! macros, a dev-dependency only), in one run.
//!
//! Every tool is the benchmark tool `{text, n?: u32, tags: Vec<String>}` with doc comments.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use goondan_runtime::dialect::Dialect;
use goondan_runtime::{Export, Tool, ToolCatalog, ToolError, ToolRegistry};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

/// The benchmark tool.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FieldsIn {
    /// The text.
    text: String,
    /// How many times.
    n: Option<u32>,
    /// Labels.
    tags: Vec<String>,
}

macro_rules! rmcp_tools {
    ($($name:ident),*) => {
        #[derive(Clone)]
        struct RmcpTools {
            tool_router: ToolRouter<Self>,
        }

        #[tool_router(router = tool_router)]
        impl RmcpTools {
            $(
                /// Repeats the text.
                #[tool(description = "Repeats the text.")]
                async fn $name(&self, Parameters(input): Parameters<FieldsIn>) -> String {
                    input.text.repeat(input.n.unwrap_or(1) as usize) + &input.tags.join(",")
                }
            )*
        }
    };
}

rmcp_tools!(
    t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13, t14, t15, t16, t17, t18, t19, t20,
    t21, t22, t23, t24, t25, t26, t27, t28, t29, t30, t31, t32, t33, t34, t35, t36, t37, t38, t39,
    t40, t41, t42, t43, t44, t45, t46, t47, t48, t49
);

/// The same 50 tools as one goondan resource `bench` (`bench__t0` .. `bench__t49`).
fn registry() -> Arc<ToolRegistry> {
    let mut tool = Tool::builder("bench").description("Bench tools");
    for i in 0..50 {
        tool = tool.export(
            Export::typed(format!("t{i}"), |_ctx, input: FieldsIn| async move {
                Ok::<_, ToolError>(
                    input.text.repeat(input.n.unwrap_or(1) as usize) + &input.tags.join(","),
                )
            })
            .with_description("Repeats the text."),
        );
    }
    Arc::new(
        ToolRegistry::builder()
            .tool(tool.build().unwrap())
            .build()
            .unwrap(),
    )
}

fn bench(c: &mut Criterion) {
    let registry = registry();
    let catalog = ToolCatalog::build(&registry, ["bench"]).unwrap();
    assert_eq!(catalog.len(), 50);
    let rmcp = RmcpTools {
        tool_router: RmcpTools::tool_router(),
    };
    assert_eq!(rmcp.tool_router.list_all().len(), 50);

    let mut group = c.benchmark_group("catalog: 50 tools, provider JSON");
    group.bench_function("rmcp list_all + serialise", |b| {
        b.iter(|| serde_json::to_string(&rmcp.tool_router.list_all()).unwrap())
    });
    for dialect in Dialect::ALL {
        group.bench_function(format!("goondan {dialect} tools_json"), |b| {
            b.iter(|| dialect.tools_json(black_box(&catalog)).unwrap())
        });
    }
    // What a Step pays: its catalog built from the registry, then the request's tools.
    group.bench_function("goondan openai build catalog + tools_json", |b| {
        b.iter(|| {
            let catalog = ToolCatalog::build(&registry, ["bench"]).unwrap();
            Dialect::OPENAI_CHAT.tools_json(&catalog).unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
