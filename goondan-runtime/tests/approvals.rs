//! Approvals: the `toolCall` middleware that asks before risky calls.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/captured_events.rs"]
mod captured_events;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use goondan_runtime::calls::approval::{Approvals, Decision, Policy, approver_fn};
use goondan_runtime::prelude::*;
use goondan_runtime::testing::{ResultAssertions, TestKit};
use serde_json::json;

/// Files, with a counter of the writes that really ran.
#[tool(name = "files")]
pub mod files {
    use super::*;

    /// The paths of the writes that really ran (tests run in parallel: each uses its own path).
    pub static WRITTEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

    pub(crate) fn was_written(path: &str) -> bool {
        WRITTEN.lock().unwrap().iter().any(|p| p == path)
    }

    /// Overwrite a file.
    #[export(destructive)]
    pub async fn write(
        /// Where.
        path: String,
        /// How many copies (1 to 3).
        #[schemars(range(min = 1, max = 3))]
        copies: u8,
    ) -> Result<String, ToolError> {
        WRITTEN.lock().unwrap().push(path.clone());
        Ok(format!("{path} x{copies}"))
    }

    /// Read a file.
    #[export(read_only)]
    pub async fn read(
        /// Where.
        path: String,
    ) -> Result<String, ToolError> {
        Ok(format!("content of {path}"))
    }

    /// Fetch a page from the web.
    #[export(open_world)]
    pub async fn fetch(
        /// The address.
        url: String,
    ) -> Result<String, ToolError> {
        Ok(format!("page {url}"))
    }

    /// Say hello (no hints at all).
    pub async fn hello() -> Result<String, ToolError> {
        Ok("hello".into())
    }
}

/// An approver that records what it was asked and answers from a script.
#[derive(Clone, Default)]
struct Recorder {
    asked: Arc<Mutex<Vec<(String, String)>>>,
}

impl Recorder {
    fn approvals(&self, answer: impl Fn(&str) -> Decision + Send + Sync + 'static) -> Approvals {
        let asked = Arc::clone(&self.asked);
        let answer = Arc::new(answer);
        Approvals::new(approver_fn(move |request| {
            asked
                .lock()
                .unwrap()
                .push((request.tool_name().to_owned(), request.why().to_owned()));
            let decision = answer(request.tool_name());
            async move { decision }
        }))
    }

    fn asked(&self) -> Vec<String> {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .map(|(n, _)| n.clone())
            .collect()
    }
}

fn kit(approvals: Approvals) -> TestKit {
    TestKit::builder()
        .tool(files::TOOL)
        .middleware(0, approvals)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_denied_call_is_e_tool_denied_with_the_reason_as_suggestion_and_never_runs() {
    let recorder = Recorder::default();
    let kit = kit(recorder.approvals(|_| Decision::Deny {
        reason: "not on a Friday".into(),
    }));
    let result = kit
        .call("files__write", json!({"path": "denied.txt", "copies": 1}))
        .await;
    result.assert_error("E_TOOL_DENIED");
    let error = result.error.as_ref().unwrap();
    assert_eq!(error.suggestion(), Some("not on a Friday"));
    assert!(error.message().contains("files__write"), "{error:?}");
    assert!(error.help_url().is_some(), "documented in docs/errors.md");
    assert!(!files::was_written("denied.txt"));
    assert_eq!(recorder.asked(), ["files__write"]);
}

#[tokio::test]
async fn the_default_policy_asks_about_destructive_and_open_world_calls_only() {
    let recorder = Recorder::default();
    let kit = kit(recorder.approvals(|_| Decision::Approve));
    kit.call("files__write", json!({"path": "a", "copies": 2}))
        .await
        .assert_ok();
    kit.call("files__read", json!({"path": "a"}))
        .await
        .assert_ok();
    kit.call("files__fetch", json!({"url": "http://127.0.0.1/"}))
        .await
        .assert_ok();
    kit.call("files__hello", json!({})).await.assert_ok();
    assert_eq!(recorder.asked(), ["files__write", "files__fetch"]);
    let whys: Vec<String> = recorder
        .asked
        .lock()
        .unwrap()
        .iter()
        .map(|(_, w)| w.clone())
        .collect();
    assert_eq!(
        whys,
        [
            "the tool is marked destructive",
            "the tool reaches the open world"
        ]
    );
}

#[tokio::test]
async fn patterns_choose_the_policy_first_match_wins_and_deny_needs_no_approver() {
    let recorder = Recorder::default();
    let approvals = recorder
        .approvals(|_| Decision::Approve)
        .policy("files__read", Policy::Deny)
        .policy("files__*", Policy::Ask)
        .default_policy(Policy::Allow);
    let kit = kit(approvals);
    let refused = kit.call("files__read", json!({"path": "a"})).await;
    refused.assert_error("E_TOOL_DENIED");
    assert!(
        refused.error.as_ref().unwrap().suggestion().is_some(),
        "a policy denial says why"
    );
    kit.call("files__hello", json!({})).await.assert_ok();
    assert_eq!(recorder.asked(), ["files__hello"], "`files__*` asks always");

    let destructive_only = Recorder::default();
    let kit2 = self::kit(
        destructive_only
            .approvals(|_| Decision::Approve)
            .default_policy(Policy::AskWhenDestructive),
    );
    kit2.call("files__fetch", json!({"url": "http://127.0.0.1/"}))
        .await
        .assert_ok();
    kit2.call("files__write", json!({"path": "a", "copies": 1}))
        .await
        .assert_ok();
    assert_eq!(destructive_only.asked(), ["files__write"]);
}

#[tokio::test]
async fn edited_arguments_run_and_are_checked_against_the_schema() {
    let recorder = Recorder::default();
    let kit = kit(recorder.approvals(|_| {
        let mut args = serde_json::Map::new();
        args.insert("path".into(), json!("safe.txt"));
        args.insert("copies".into(), json!(3));
        Decision::ApproveWith(args)
    }));
    let result = kit
        .call("files__write", json!({"path": "/etc/passwd", "copies": 1}))
        .await;
    assert_eq!(result.output, Some(json!("safe.txt x3")));

    // An edit the schema refuses (copies out of range) is refused like the model's own call.
    let kit = self::kit(recorder.approvals(|_| {
        let mut args = serde_json::Map::new();
        args.insert("path".into(), json!("safe.txt"));
        args.insert("copies".into(), json!(9));
        Decision::ApproveWith(args)
    }));
    kit.call("files__write", json!({"path": "a", "copies": 1}))
        .await
        .assert_error("E_TOOL_INVALID_ARGS");
}

#[tokio::test]
async fn a_call_cancelled_while_waiting_for_approval_is_cancelled_not_run() {
    let approvals = Approvals::new(approver_fn(|_| async {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        Decision::Approve
    }));
    let kit = kit(approvals);
    let token = kit.context().cancellation().clone();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        token.cancel();
    });
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        kit.call(
            "files__write",
            json!({"path": "cancelled.txt", "copies": 1}),
        ),
    )
    .await
    .expect("cancellation ends the wait");
    canceller.await.unwrap();
    result.assert_error("E_TOOL_CANCELLED");
    assert!(!files::was_written("cancelled.txt"));
}

#[test]
fn policies_parse_from_their_words_and_print_back() {
    for policy in [
        Policy::Ask,
        Policy::Allow,
        Policy::AskWhenRisky,
        Policy::AskWhenDestructive,
        Policy::Deny,
    ] {
        assert_eq!(policy.to_string().parse::<Policy>(), Ok(policy));
    }
    let err = "maybe".parse::<Policy>().unwrap_err();
    assert!(err.to_string().contains("always, never, risky"), "{err}");
}

// --- tracing events ---------------------------------------------------------------------

use captured_events::{Event, captured, field};

#[tokio::test]
async fn approvals_and_denials_are_tracing_events() {
    let captured = captured();
    let recorder = Recorder::default();
    let kit = kit(recorder.approvals(|name| {
        if name == "files__fetch" {
            Decision::Deny {
                reason: "no web today".into(),
            }
        } else {
            Decision::Approve
        }
    }));
    let call = |name: &str, id: &str, args: serde_json::Value| ToolCall::new(id, name, args);
    let ok = kit
        .execute(call(
            "files__write",
            "approval-events-1",
            json!({"path": "a", "copies": 1}),
        ))
        .await;
    ok.assert_ok();
    let no = kit
        .execute(call(
            "files__fetch",
            "approval-events-2",
            json!({"url": "http://127.0.0.1/"}),
        ))
        .await;
    no.assert_error("E_TOOL_DENIED");

    let events = captured.events();
    let of = |id: &str| -> Vec<Event> {
        events
            .iter()
            .filter(|(n, f)| n.starts_with("approval.") && field(f, "tool_call_id") == Some(id))
            .cloned()
            .collect()
    };
    let approved = of("approval-events-1");
    assert_eq!(approved.len(), 1, "{events:?}");
    assert_eq!(approved[0].0, "approval.approved");
    assert_eq!(field(&approved[0].1, "edited"), Some("false"));
    let denied = of("approval-events-2");
    assert_eq!(denied.len(), 1, "{events:?}");
    assert_eq!(denied[0].0, "approval.denied");
    assert_eq!(field(&denied[0].1, "reason"), Some("no web today"));
    assert_eq!(field(&denied[0].1, "tool"), Some("files__fetch"));
}
