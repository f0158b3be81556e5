//! The `@goondan/base` package: how agents reference its tools (BASE-5) and what they expose.

use goondan_base::{PACKAGE, TOOL_NAMES, resolve_ref, tools};
use goondan_runtime::testing::{ResultAssertions, TestKit};
use serde_json::json;

#[test]
fn base_5_refs_to_the_package_resolve_to_its_tools() {
    assert_eq!(PACKAGE, "@goondan/base");
    for (name, limit) in [
        ("bash", 1200),
        ("file-system", 2000),
        ("http-fetch", 1000),
        ("agents", 1500),
    ] {
        let tool = resolve_ref("@goondan/base", name).unwrap().unwrap();
        assert_eq!(tool.name(), name);
        assert_eq!(tool.error_message_limit(), limit, "{name}");
    }
    assert!(resolve_ref("@goondan/base", "agents-nope").is_none());
    assert!(resolve_ref("@other/package", "bash").is_none());
    assert!(resolve_ref("", "bash").is_none());
}

#[test]
fn base_5_tools_lists_every_resource_with_its_exports() {
    let kit = TestKit::with_tools(tools()).unwrap();
    let mut names: Vec<String> = kit
        .registry()
        .names()
        .iter()
        .map(ToString::to_string)
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "agents__catalog",
            "agents__list",
            "agents__request",
            "agents__send",
            "agents__spawn",
            "bash__exec",
            "bash__script",
            "file-system__list",
            "file-system__mkdir",
            "file-system__read",
            "file-system__write",
            "http-fetch__get",
            "http-fetch__post",
            "json-query__count",
            "json-query__flatten",
            "json-query__pick",
            "json-query__query",
            "self-restart__request",
            "slack__delete",
            "slack__downloadFile",
            "slack__edit",
            "slack__react",
            "slack__read",
            "slack__send",
            "telegram__delete",
            "telegram__downloadFile",
            "telegram__edit",
            "telegram__react",
            "telegram__send",
            "telegram__setChatAction",
            "text-transform__case",
            "text-transform__join",
            "text-transform__replace",
            "text-transform__slice",
            "text-transform__split",
            "text-transform__trim",
            "wait__seconds",
        ]
    );
    assert_eq!(tools().len(), TOOL_NAMES.len());
    let exec = kit.registry().get("bash__exec").unwrap();
    let params = exec.export().parameters();
    assert_eq!(params["required"], json!(["command"]));
    assert_eq!(params["additionalProperties"], json!(false));
    assert!(params["properties"]["timeoutMs"].is_object());
    assert!(exec.export().description().is_some());
}

#[tokio::test]
async fn base_5_the_tools_work_together_on_one_workdir() {
    let kit = TestKit::with_tools(tools()).unwrap();
    kit.call(
        "file-system__write",
        json!({"path": "run.sh", "content": "echo from-script"}),
    )
    .await
    .assert_ok();
    let r = kit.call("bash__script", json!({"path": "run.sh"})).await;
    assert_eq!(r.assert_ok()["stdout"], "from-script\n");
    let r = kit
        .call("bash__exec", json!({"command": "printf made > made.txt"}))
        .await;
    r.assert_ok();
    let r = kit
        .call("file-system__read", json!({"path": "made.txt"}))
        .await;
    assert_eq!(r.assert_ok()["content"], "made");
    kit.call("http-fetch__get", json!({"url": "http://169.254.169.254/"}))
        .await
        .assert_error("E_HTTP_FORBIDDEN_ADDRESS");
}
