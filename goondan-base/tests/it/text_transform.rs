//! `text-transform` through the executor, with upstream's outputs.

use goondan_base::TextTransform;
use goondan_runtime::testing::{ResultAssertions, TestKit};
use serde_json::json;

fn kit() -> TestKit {
    TestKit::with_tools([TextTransform]).unwrap()
}

#[tokio::test]
async fn replace_first_or_all() {
    let kit = kit();
    let first = kit
        .call(
            "text-transform__replace",
            json!({"text": "a-b-c", "search": "-", "replacement": "+"}),
        )
        .await;
    first.assert_output(json!({"original": "a-b-c", "result": "a+b-c", "replacements": 1}));
    let all = kit
        .call(
            "text-transform__replace",
            json!({"text": "aaaa", "search": "aa", "replacement": "b", "all": true}),
        )
        .await;
    all.assert_output(json!({"original": "aaaa", "result": "bb", "replacements": 2}));
    let none = kit
        .call(
            "text-transform__replace",
            json!({"text": "abc", "search": "x"}),
        )
        .await;
    none.assert_output(json!({"original": "abc", "result": "abc", "replacements": 0}));
    let removed = kit
        .call(
            "text-transform__replace",
            json!({"text": "abc", "search": "b"}),
        )
        .await;
    assert_eq!(removed.assert_ok()["result"], "ac");
    let empty = kit
        .call(
            "text-transform__replace",
            json!({"text": "abc", "search": ""}),
        )
        .await;
    empty.assert_error("E_TEXT_INVALID_INPUT");
}

#[tokio::test]
async fn slice_like_javascript() {
    let kit = kit();
    let cases = [
        (json!({"text": "hello world"}), "hello world", 0, 11),
        (json!({"text": "hello world", "start": 6}), "world", 6, 11),
        (
            json!({"text": "hello world", "start": 0, "end": 5}),
            "hello",
            0,
            5,
        ),
        (json!({"text": "hello world", "start": -5}), "world", -5, 11),
        (
            json!({"text": "hello world", "start": 1, "end": -1}),
            "ello worl",
            1,
            -1,
        ),
        (json!({"text": "hello", "start": 4, "end": 2}), "", 4, 2),
        (
            json!({"text": "hello", "start": 2, "end": 99}),
            "llo",
            2,
            99,
        ),
        (
            json!({"text": "가나다라", "start": 1, "end": 3}),
            "나다",
            1,
            3,
        ),
    ];
    for (input, result, start, end) in cases {
        let out = kit.call("text-transform__slice", input.clone()).await;
        let out = out.assert_ok();
        assert_eq!(out["result"], result, "{input}");
        assert_eq!(out["start"], start, "{input}");
        assert_eq!(out["end"], end, "{input}");
        assert_eq!(out["length"], result.chars().count(), "{input}");
        assert_eq!(out["original"], input["text"]);
    }
}

#[tokio::test]
async fn split_with_delimiter_and_limit() {
    let kit = kit();
    let lines = kit
        .call("text-transform__split", json!({"text": "a\nb\nc"}))
        .await;
    lines.assert_output(json!({"delimiter": "\n", "count": 3, "parts": ["a", "b", "c"]}));
    let limited = kit
        .call(
            "text-transform__split",
            json!({"text": "a,b,,c", "delimiter": ",", "maxParts": 3}),
        )
        .await;
    limited.assert_output(json!({"delimiter": ",", "count": 3, "parts": ["a", "b", ""]}));
    let chars = kit
        .call(
            "text-transform__split",
            json!({"text": "가나", "delimiter": ""}),
        )
        .await;
    assert_eq!(chars.assert_ok()["parts"], json!(["가", "나"]));
}

#[tokio::test]
async fn join_stringifies_scalars() {
    let kit = kit();
    let out = kit
        .call(
            "text-transform__join",
            json!({"parts": ["a", 1, 2.5, 3.0, true], "delimiter": "|"}),
        )
        .await;
    out.assert_output(json!({"delimiter": "|", "count": 5, "result": "a|1|2.5|3|true"}));
    let newline = kit
        .call("text-transform__join", json!({"parts": ["x", "y"]}))
        .await;
    assert_eq!(newline.assert_ok()["result"], "x\ny");
    let bad = kit
        .call("text-transform__join", json!({"parts": ["a", {"b": 1}]}))
        .await;
    assert!(
        bad.assert_error("E_TEXT_INVALID_INPUT")
            .message()
            .contains("item 1")
    );
}

#[tokio::test]
async fn trim_modes() {
    let kit = kit();
    let text = "  hi \t";
    for (mode, result, trimmed) in [("both", "hi", 4), ("start", "hi \t", 2), ("end", "  hi", 2)] {
        let out = kit
            .call("text-transform__trim", json!({"text": text, "mode": mode}))
            .await;
        out.assert_output(
            json!({"original": text, "result": result, "mode": mode, "trimmedLength": trimmed}),
        );
    }
    let default = kit
        .call("text-transform__trim", json!({"text": " x "}))
        .await;
    assert_eq!(default.assert_ok()["mode"], "both");
}

#[tokio::test]
async fn case_upper_and_lower() {
    let kit = kit();
    let up = kit
        .call(
            "text-transform__case",
            json!({"text": "Hello", "to": "upper"}),
        )
        .await;
    up.assert_output(json!({"original": "Hello", "result": "HELLO", "to": "upper"}));
    let down = kit
        .call(
            "text-transform__case",
            json!({"text": "HeLLo", "to": "lower"}),
        )
        .await;
    assert_eq!(down.assert_ok()["result"], "hello");
    let bad = kit
        .call("text-transform__case", json!({"text": "x", "to": "title"}))
        .await;
    assert!(bad.is_error());
}
