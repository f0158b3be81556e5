//! `cargo run -p goondan-examples-mcp --example mcp` serves the quickstart's catalog over MCP: an MCP client (rmcp's)
//! lists it and calls a tool through it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

#[tokio::test]
async fn mcp_example_serves_the_quickstart_catalog() {
    let server = goondan_examples_mcp::server().unwrap();
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_io).await.unwrap();
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(
        names.contains(&"text-utils__uppercase".to_owned()),
        "{names:?}"
    );
    assert!(names.iter().any(|n| n.starts_with("notes__")), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("admin__")), "{names:?}");

    let args = json!({"text": "hello, goondan"});
    let result = client
        .call_tool(
            CallToolRequestParams::new("text-utils__uppercase")
                .with_arguments(args.as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false));
    assert_eq!(
        result.structured_content,
        Some(json!({"result": "HELLO, GOONDAN"}))
    );

    // Beside the tools, the example's own resource handler answers resources/*.
    let resources = client.list_all_resources().await.unwrap();
    assert_eq!(resources.len(), 1, "{resources:?}");
    assert_eq!(resources[0].uri, goondan_examples_mcp::GUIDE_URI);
    let read = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            goondan_examples_mcp::GUIDE_URI,
        ))
        .await
        .unwrap();
    let text = serde_json::to_value(&read).unwrap();
    assert_eq!(
        text["contents"][0]["text"],
        goondan_examples_mcp::GUIDE,
        "{text}"
    );
    let missing = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "goondan://nope",
        ))
        .await;
    assert!(missing.is_err(), "{missing:?}");
}
