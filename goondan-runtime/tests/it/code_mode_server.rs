//! Code mode served over MCP (issue 52, item 5): rmcp's own client, over an in-process duplex,
//! is shown the code tool and its search instead of the tools; a program's calls go through
//! the server's executor and are checked against the served tools.
#![cfg(feature = "mcp")]

use std::sync::Arc;

use goondan_runtime::code::{CodeMode, SEARCH_NAME, TOOL_NAME};
use goondan_runtime::mcp::server::McpServer;
use goondan_runtime::prelude::*;
use goondan_runtime::tools::search::{Ranker, ToolDocs, words};
use goondan_runtime::{CallContext, ToolExecutor, ToolSource, from_fn, handler_fn};
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

/// A shop's stock.
#[tool(name = "stock")]
pub mod stock {
    use super::*;

    /// The names of the items in stock.
    pub fn items() -> Vec<String> {
        vec!["apple".into(), "pear".into(), "fig".into()]
    }

    /// The price of an item, in cents.
    pub fn price(
        /// The item's name.
        name: String,
    ) -> Result<i64, ToolError> {
        match name.as_str() {
            "apple" => Ok(30),
            "pear" => Ok(45),
            "fig" => Ok(80),
            _ => Err(ToolError::new(format!("no item `{name}`")).with_code("E_STOCK_UNKNOWN")),
        }
    }
}

/// Not served: a program cannot reach it.
#[tool(name = "vault")]
pub fn open() -> String {
    "the secret".into()
}

/// Ranks by how many of the query's words a tool's words hold; enough for the server's
/// plumbing (the base tools' BM25 ranker is tested with the real `goondan mcp serve`).
struct Overlap;

impl Ranker for Overlap {
    fn rank(&self, query: &str, tools: &ToolDocs, limit: usize) -> Vec<usize> {
        let wanted: Vec<String> = words(query).split(' ').map(str::to_owned).collect();
        let mut scored: Vec<(usize, usize)> = tools
            .iter()
            .enumerate()
            .map(|(i, doc)| {
                let text = words(&doc.text());
                let have: Vec<&str> = text.split(' ').collect();
                (
                    wanted.iter().filter(|w| have.contains(&w.as_str())).count(),
                    i,
                )
            })
            .filter(|(score, _)| *score > 0)
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().take(limit).map(|(_, i)| i).collect()
    }
}

async fn connect(server: McpServer) -> RunningService<RoleClient, ()> {
    let (client_io, server_io) = tokio::io::duplex(256 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_io).await.expect("client connects")
}

async fn call(client: &RunningService<RoleClient, ()>, name: &str, args: Value) -> CallToolResult {
    let mut params = CallToolRequestParams::new(name.to_owned());
    if let Value::Object(o) = args {
        params = params.with_arguments(o);
    }
    client.call_tool(params).await.expect("tools/call")
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

fn description(tools: &[Tool], name: &str) -> String {
    tools
        .iter()
        .find(|t| t.name == name)
        .and_then(|t| t.description.as_deref())
        .unwrap_or_default()
        .to_owned()
}

/// `tools/list` shows the code tool and its search alone; the search answers the stubs of the
/// functions that match; a program calls the served tools, each call through the server's
/// executor (its middleware sees them, inside the code call); a tool the server does not
/// serve is no function of the program.
#[tokio::test]
async fn mcp_server_code_mode_serves_the_code_tool_and_its_search_and_programs_call_the_served_tools()
 {
    let registry = Arc::new(
        ToolRegistry::builder()
            .tool(stock::TOOL)
            .tool(open::TOOL)
            .build()
            .unwrap(),
    );
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let executor = ToolExecutor::builder(Arc::clone(&registry))
        .middleware(from_fn(move |call: CallContext, next| {
            let within = call.context().within().map(str::to_owned);
            record
                .lock()
                .unwrap()
                .push((call.tool_name().to_owned(), within));
            next.run(call)
        }))
        .build();
    let server = McpServer::builder(Arc::clone(&registry))
        .tools(["stock"])
        .executor(executor)
        .code_mode(
            CodeMode::new()
                .tools_callable_directly(false)
                .search(Overlap),
        )
        .build()
        .unwrap();
    let client = connect(server).await;

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
    assert_eq!(names, [TOOL_NAME, SEARCH_NAME]);
    let run = description(&tools, TOOL_NAME);
    assert!(
        run.contains("class stock:") && run.contains("def price(*, name: str)"),
        "{run}"
    );
    assert!(!run.contains("vault"), "{run}");
    // A server has no Turn to end: its client's model answers.
    assert!(!run.contains("final_answer"), "{run}");

    let found = call(&client, SEARCH_NAME, json!({"query": "price of an item"})).await;
    assert_ne!(found.is_error, Some(true), "{found:?}");
    let stubs = text(&found);
    assert!(stubs.starts_with("```python\nclass stock:"), "{stubs}");
    assert!(stubs.contains("def price(*, name: str)"), "{stubs}");

    let program = "sum(stock.price(name=n) for n in stock.items())";
    let answer = call(&client, TOOL_NAME, json!({"code": program})).await;
    assert_ne!(answer.is_error, Some(true), "{answer:?}");
    let output: Value = serde_json::from_str(&text(&answer)).unwrap();
    assert_eq!(output["value"], 155, "{output}");
    assert_eq!(output["calls"], 4, "{output}");
    let seen = seen.lock().unwrap().clone();
    let inner: Vec<&str> = seen
        .iter()
        .filter(|(_, within)| within.is_some())
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(
        inner,
        [
            "stock__items",
            "stock__price",
            "stock__price",
            "stock__price"
        ]
    );

    // The tool the server does not serve is not a function, and its name is not callable.
    let refused = call(&client, TOOL_NAME, json!({"code": "vault.open()"})).await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert!(
        text(&refused).contains("E_CODE_ERROR"),
        "{}",
        text(&refused)
    );
    let direct = client
        .call_tool(CallToolRequestParams::new("stock__price"))
        .await;
    assert!(
        direct.is_err(),
        "the tools are not callable directly: {direct:?}"
    );
    client.cancel().await.unwrap();
}

/// With more functions than the description lists, the code tool names their objects and
/// points to the search; the search finds the one a query needs among 40 tools registered at
/// run time, which the program can then call.
#[tokio::test]
async fn mcp_server_code_mode_with_a_big_catalog_points_to_the_search_instead_of_every_stub() {
    let registry = Arc::new(ToolRegistry::new());
    let topics = [
        "weather", "tides", "trains", "flights", "museums", "parks", "bridges", "rivers",
    ];
    for topic in topics {
        for kind in ["report", "history", "forecast", "count", "names"] {
            let name = format!("{topic}__{kind}");
            let answer = format!("{topic} {kind}");
            registry
                .register_item(
                    &name,
                    Some(format!("Gives the {kind} of the {topic} of a city.")),
                    json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
                    handler_fn(move |_ctx, _args| {
                        let answer = answer.clone();
                        async move { Ok::<_, ToolError>(answer) }
                    }),
                    ToolSource::extension("city"),
                )
                .unwrap();
        }
    }
    let server = McpServer::builder(Arc::clone(&registry))
        .code_mode(CodeMode::new().search(Overlap))
        .build()
        .unwrap();
    let client = connect(server).await;
    let tools = client.list_all_tools().await.unwrap();
    // Callable directly (the mode's default) beside the code tool and the search.
    assert_eq!(tools.len(), 42);
    let run = description(&tools, TOOL_NAME);
    assert!(run.contains("There are 40 functions"), "{run}");
    assert!(run.contains(SEARCH_NAME) && !run.contains("def "), "{run}");

    let found = call(
        &client,
        SEARCH_NAME,
        json!({"query": "tides forecast", "limit": 1}),
    )
    .await;
    let stubs = text(&found);
    assert!(
        stubs.contains("class tides:") && stubs.contains("def forecast(*, city: str)"),
        "{stubs}"
    );
    assert_eq!(stubs.matches("def ").count(), 1, "{stubs}");
    let answer = call(
        &client,
        TOOL_NAME,
        json!({"code": "tides.forecast(city='Brest')"}),
    )
    .await;
    let output: Value = serde_json::from_str(&text(&answer)).unwrap();
    assert_eq!(output["value"], "tides forecast", "{output}");

    let blank = call(&client, SEARCH_NAME, json!({"query": "   "})).await;
    assert_eq!(blank.is_error, Some(true), "{blank:?}");
    assert!(
        text(&blank).contains("E_TOOL_INVALID_ARGS"),
        "{}",
        text(&blank)
    );
    client.cancel().await.unwrap();
}

/// A gauge whose page sets it; only the page may call `set`.
#[tool(name = "gauge")]
pub mod gauge {
    /// How many times the page set the gauge.
    pub static SETS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    /// The gauge's reading.
    #[export(ui = "ui://gauge/view.html")]
    pub fn read() -> i64 {
        7
    }

    /// Sets the gauge (its page's control).
    #[export(ui = "ui://gauge/view.html", visibility = "app")]
    pub fn set(
        /// The new reading.
        value: i64,
    ) -> i64 {
        SETS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        value
    }
}

/// A program is the model's: a tool only an MCP Apps page may call is none of its functions,
/// whether the client renders pages or not, and no call of it reaches the tool.
#[tokio::test]
async fn mcp_server_code_mode_programs_cannot_call_a_tool_only_a_page_may_call() {
    use goondan_runtime::mcp::server::AppPage;
    let registry = Arc::new(ToolRegistry::builder().tool(gauge::TOOL).build().unwrap());
    let server = McpServer::builder(Arc::clone(&registry))
        .tools(["gauge"])
        .app_page(AppPage::html("ui://gauge/view.html", "<p>gauge</p>"))
        .code_mode(CodeMode::new())
        .build()
        .unwrap();
    let client = connect(server).await;

    let tools = client.list_all_tools().await.unwrap();
    let run = description(&tools, TOOL_NAME);
    assert!(run.contains("def read("), "{run}");
    assert!(!run.contains("def set("), "{run}");

    let read = call(&client, TOOL_NAME, json!({"code": "gauge.read()"})).await;
    assert_ne!(read.is_error, Some(true), "{read:?}");
    let output: Value = serde_json::from_str(&text(&read)).unwrap();
    assert_eq!(output["value"], 7, "{output}");

    let set = call(&client, TOOL_NAME, json!({"code": "gauge.set(value=1)"})).await;
    assert_eq!(set.is_error, Some(true), "{set:?}");
    assert!(text(&set).contains("E_CODE_ERROR"), "{}", text(&set));
    assert_eq!(gauge::SETS.load(std::sync::atomic::Ordering::SeqCst), 0);
    client.cancel().await.unwrap();
}
