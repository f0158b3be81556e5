//! `self-restart`: the structured restart signal, and reading it back.

use goondan_base::SelfRestart;
use goondan_base::self_restart::{DEFAULT_REASON, RestartSignal};
use goondan_runtime::testing::{ResultAssertions, TestKit};
use serde_json::json;

#[tokio::test]
async fn request_gives_a_restart_signal() {
    let kit = TestKit::with_tools([SelfRestart]).unwrap();
    let out = kit
        .call("self-restart__request", json!({"reason": "  new config  "}))
        .await;
    out.assert_output(json!({"ok": true, "restartRequested": true, "restartReason": "new config"}));
    let signal = RestartSignal::from_output(out.assert_ok()).unwrap();
    assert_eq!(signal.reason, "new config");
}

#[tokio::test]
async fn reason_defaults_like_upstream() {
    let kit = TestKit::with_tools([SelfRestart]).unwrap();
    for input in [json!({}), json!({"reason": "   "})] {
        let out = kit.call("self-restart__request", input).await;
        assert_eq!(out.assert_ok()["restartReason"], DEFAULT_REASON);
    }
}

#[test]
fn other_outputs_carry_no_signal() {
    assert!(RestartSignal::from_output(&json!({"ok": true})).is_none());
    assert!(RestartSignal::from_output(&json!({"restartRequested": false})).is_none());
    assert!(RestartSignal::from_output(&json!("restartRequested")).is_none());
}
