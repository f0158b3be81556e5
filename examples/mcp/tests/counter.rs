//! `cargo run -p goondan-examples-mcp --example counter` serves the counter and its page: a host
//! that renders MCP Apps (rmcp's client, declaring the extension) reads the page from
//! `counter/view.html`, sees each tool linked to it, and calls `counter__increment` as the
//! page's button does.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use goondan_examples_mcp::counter::{PAGE_URI, page_dir, server};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ExtensionCapabilities, Implementation,
    ReadResourceRequestParams,
};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};

/// A host that renders MCP Apps.
#[derive(Clone)]
struct Host;

impl ClientHandler for Host {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        let mut extensions = ExtensionCapabilities::new();
        if let Value::Object(settings) = json!({"mimeTypes": ["text/html;profile=mcp-app"]}) {
            extensions.insert("io.modelcontextprotocol/ui".to_owned(), settings);
        }
        caps.extensions = Some(extensions);
        ClientConfig::new(caps, Implementation::new("counter-host", "1.0"))
    }
}

#[tokio::test]
async fn counter_example_serves_its_page_and_the_page_s_calls() {
    let server = server().unwrap();
    let (client_io, server_io) = tokio::io::duplex(256 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = Host.serve(client_io).await.unwrap();

    let read = client
        .read_resource(ReadResourceRequestParams::new(PAGE_URI))
        .await
        .unwrap();
    let read = serde_json::to_value(&read).unwrap();
    let html = std::fs::read_to_string(page_dir().join("view.html")).unwrap();
    assert_eq!(read["contents"][0]["text"], html);
    assert_eq!(read["contents"][0]["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(read["contents"][0]["_meta"]["ui"]["prefersBorder"], true);
    // The page calls the tool by its Goondan name.
    assert!(html.contains("counter__increment"));

    let tools = client.list_all_tools().await.unwrap();
    let ui = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        serde_json::to_value(tool).unwrap()["_meta"]["ui"].clone()
    };
    assert_eq!(
        ui("counter__show"),
        json!({"resourceUri": PAGE_URI, "visibility": ["model", "app"]})
    );
    assert_eq!(
        ui("counter__increment"),
        json!({"resourceUri": PAGE_URI, "visibility": ["app"]})
    );
    assert_eq!(ui("counter__reset"), json!({"visibility": ["model"]}));

    let call = |name: &'static str| {
        let client = &client;
        async move {
            let result = client
                .call_tool(CallToolRequestParams::new(name))
                .await
                .unwrap();
            serde_json::to_value(result).unwrap()
        }
    };
    assert_eq!(
        call("counter__increment").await["structuredContent"],
        json!({"count": 1})
    );
    let second = call("counter__increment").await;
    assert_eq!(second["structuredContent"], json!({"count": 2}));
    assert_eq!(second["content"][0]["text"], r#"{"count":2}"#);
    assert_eq!(
        call("counter__reset").await["structuredContent"],
        json!({"count": 0})
    );
    assert_eq!(
        call("counter__show").await["structuredContent"],
        json!({"count": 0})
    );
    client.cancel().await.unwrap();
}
