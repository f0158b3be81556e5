//! `json-query` through the executor: upstream's path syntax, pick, count, flatten, and
//! structured errors for bad input.

use goondan_base::JsonQuery;
use goondan_runtime::testing::{ResultAssertions, TestKit};
use serde_json::{Value, json};

fn kit() -> TestKit {
    TestKit::with_tools([JsonQuery]).unwrap()
}

const DOC: &str =
    r#"{"users":[{"name":"Ann","tags":["a","b"]},{"name":"Bo","age":null}],"a.b":{"c":3},"n":7}"#;

async fn query(kit: &TestKit, path: Option<&str>) -> Value {
    let mut input = json!({"data": DOC});
    if let Some(p) = path {
        input["path"] = json!(p);
    }
    kit.call("json-query__query", input)
        .await
        .assert_ok()
        .clone()
}

#[tokio::test]
async fn query_follows_dot_and_bracket_paths() {
    let kit = kit();
    let cases = [
        ("users[0].name", json!("Ann")),
        (".users[1].name", json!("Bo")),
        ("users.0.tags[1]", json!("b")),
        ("users[0][tags][0]", json!("a")),
        ("[a.b].c", json!(3)),
        ("n", json!(7)),
    ];
    for (path, expected) in cases {
        let out = query(&kit, Some(path)).await;
        assert_eq!(
            out,
            json!({"path": path, "found": true, "value": expected}),
            "{path}"
        );
    }
    let root = query(&kit, None).await;
    assert_eq!(root["path"], ".");
    assert_eq!(root["value"], serde_json::from_str::<Value>(DOC).unwrap());
}

#[tokio::test]
async fn query_tells_missing_from_null() {
    let kit = kit();
    let null = query(&kit, Some("users[1].age")).await;
    assert_eq!(
        null,
        json!({"path": "users[1].age", "found": true, "value": null})
    );
    for missing in [
        "users[5]",
        "users[-1]",
        "users[x]",
        "nope.deeper",
        "n.m",
        "users[1].age.x",
    ] {
        let out = query(&kit, Some(missing)).await;
        assert_eq!(out["found"], false, "{missing}");
        assert_eq!(out["value"], Value::Null, "{missing}");
    }
}

#[tokio::test]
async fn pick_keeps_existing_keys_only() {
    let kit = kit();
    let out = kit
        .call(
            "json-query__pick",
            json!({"data": DOC, "keys": ["n", "missing", "a.b"]}),
        )
        .await;
    out.assert_output(
        json!({"keys": ["n", "missing", "a.b"], "result": {"n": 7, "a.b": {"c": 3}}}),
    );
    let err = kit
        .call("json-query__pick", json!({"data": "[1,2]", "keys": ["a"]}))
        .await;
    assert!(err.assert_error("E_JSON_SHAPE").suggestion().is_some());
}

#[tokio::test]
async fn count_reports_size_and_type() {
    let kit = kit();
    let cases = [
        (".", 3, "object"),
        ("users", 2, "array"),
        ("users[0].name", 3, "string"),
        ("n", 1, "number"),
        ("users[1].age", 0, "null"),
        ("nowhere", 0, "null"),
    ];
    for (path, count, kind) in cases {
        let out = kit
            .call("json-query__count", json!({"data": DOC, "path": path}))
            .await;
        out.assert_output(json!({"path": path, "count": count, "type": kind}));
    }
    let t = kit.call("json-query__count", json!({"data": "true"})).await;
    t.assert_output(json!({"path": ".", "count": 1, "type": "boolean"}));
    let s = kit
        .call("json-query__count", json!({"data": "\"가나다\""}))
        .await;
    assert_eq!(s.assert_ok()["count"], 3);
}

#[tokio::test]
async fn flatten_respects_depth() {
    let kit = kit();
    let data = "[1,[2,[3,[4]]],[]]";
    let one = kit.call("json-query__flatten", json!({"data": data})).await;
    one.assert_output(json!({"depth": 1, "count": 3, "result": [1, 2, [3, [4]]]}));
    let deep = kit
        .call("json-query__flatten", json!({"data": data, "depth": 5}))
        .await;
    deep.assert_output(json!({"depth": 5, "count": 4, "result": [1, 2, 3, 4]}));
    let none = kit
        .call("json-query__flatten", json!({"data": data, "depth": 0}))
        .await;
    assert_eq!(none.assert_ok()["count"], 3);
    let err = kit.call("json-query__flatten", json!({"data": "{}"})).await;
    err.assert_error("E_JSON_SHAPE");
}

#[tokio::test]
async fn bad_json_is_a_structured_error() {
    let kit = kit();
    for data in ["{not json", ""] {
        let out = kit.call("json-query__query", json!({"data": data})).await;
        let err = out.assert_error("E_JSON_PARSE");
        assert!(err.suggestion().unwrap().contains("data"), "{data:?}");
    }
}
