//! `wait`: it waits, it is capped, and cancellation ends it early.

use std::time::{Duration, Instant};

use goondan_base::{Wait, WaitPolicy};
use goondan_runtime::ToolContext;
use goondan_runtime::testing::{ResultAssertions, TestKit};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn waits_the_seconds_asked() {
    let kit = TestKit::with_tools([Wait::default()]).unwrap();
    let started = Instant::now();
    let out = kit.call("wait__seconds", json!({"seconds": 0.3})).await;
    out.assert_output(json!({"waitedSeconds": 0.3, "waitedMs": 300}));
    assert!(started.elapsed() >= Duration::from_millis(290));
    let zero = kit.call("wait__seconds", json!({"seconds": 0})).await;
    zero.assert_output(json!({"waitedSeconds": 0.0, "waitedMs": 0}));
}

#[tokio::test]
async fn refuses_out_of_range() {
    let kit = TestKit::with_tools([Wait::default()]).unwrap();
    for seconds in [json!(-1), json!(300.5), json!(1e9)] {
        let started = Instant::now();
        let out = kit.call("wait__seconds", json!({"seconds": seconds})).await;
        let err = out.assert_error("E_WAIT_OUT_OF_RANGE");
        assert!(err.suggestion().unwrap().contains("300"));
        assert!(started.elapsed() < Duration::from_secs(1));
    }
    let capped = TestKit::with_tools([Wait::new(WaitPolicy { max_seconds: 1.0 })]).unwrap();
    capped
        .call("wait__seconds", json!({"seconds": 2}))
        .await
        .assert_error("E_WAIT_OUT_OF_RANGE");
}

#[tokio::test]
async fn cancellation_ends_the_wait() {
    let token = CancellationToken::new();
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::builder(dir.path())
        .cancellation(token.clone())
        .build();
    let canceller = {
        let token = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            token.cancel();
        })
    };
    let started = Instant::now();
    let input = serde_json::from_value(json!({"seconds": 60})).unwrap();
    let result = Wait::default().seconds(&ctx, input).await;
    canceller.await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    let err = result.unwrap_err();
    assert_eq!(err.code(), "E_WAIT_CANCELLED");
}
