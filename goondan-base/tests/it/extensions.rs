//! The base extensions in a step loop: tool-search narrows the catalog (CAT-3, CAT-4), logging
//! logs every call through `tracing`.

use std::io::Write;
use std::sync::{Arc, Mutex};

use goondan_base::extensions::{Logging, ToolSearch};
use goondan_runtime::step::{AgentInstance, ModelResponse, ScriptedModel};
use goondan_runtime::{ToolCall, ToolRegistry};
use serde_json::json;

fn registry() -> Arc<ToolRegistry> {
    Arc::new(
        ToolRegistry::builder()
            .tools(goondan_base::tools())
            .build()
            .unwrap(),
    )
}

#[tokio::test]
async fn cat_3_tool_search_keeps_a_large_catalog_small_and_adds_what_was_found() {
    let model = Arc::new(ScriptedModel::new([
        ModelResponse::calls([ToolCall::new(
            "c1",
            ToolSearch::TOOL,
            json!({"query": "write text to a file"}),
        )]),
        ModelResponse::calls([
            ToolCall::new(
                "c2",
                "file-system__write",
                json!({"path": "a.txt", "content": "x"}),
            ),
            ToolCall::new("c3", "file-system__mkdir", json!({"path": "d"})),
        ]),
        ModelResponse::calls([ToolCall::new(
            "c4",
            ToolSearch::TOOL,
            json!({"query": "  "}),
        )]),
        ModelResponse::text("done"),
    ]));
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("a", registry(), model.clone())
        .tools(["bash", "file-system"])
        .extension(
            ToolSearch::new()
                .threshold(3)
                .pin("bash__exec")
                .max_results(1),
        )
        .state_dir(state.path())
        .build()
        .unwrap();
    let turn = agent.run_turn("save a note").await.unwrap();
    let seen = model.seen_catalogs();
    // Step 0: six tools are more than the threshold: the pinned tool and the search tool only
    // (the search tool is registered by the extension, CAT-4).
    assert_eq!(seen[0], vec!["bash__exec", ToolSearch::TOOL]);
    // Step 1: what the search found joins them.
    assert_eq!(
        seen[1],
        vec!["bash__exec", "file-system__write", ToolSearch::TOOL]
    );
    let found = turn.steps[0].results[0].output.clone().unwrap();
    assert_eq!(found["matches"][0]["name"], "file-system__write", "{found}");
    // What was not found is refused like any call outside the catalog.
    assert!(turn.steps[1].results[0].is_ok());
    assert_eq!(
        turn.steps[1].results[1].error_code(),
        Some("E_TOOL_NOT_IN_CATALOG")
    );
    // A blank query is an invalid argument, and the found tools stay.
    assert_eq!(
        turn.steps[2].results[0].error_code(),
        Some("E_TOOL_INVALID_ARGS")
    );
    assert_eq!(seen[3], seen[1]);
}

#[tokio::test]
async fn tool_search_shows_a_small_catalog_whole_without_itself() {
    let model = Arc::new(ScriptedModel::new([ModelResponse::text("done")]));
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("a", registry(), model.clone())
        .tools(["bash", "file-system"])
        .extension(ToolSearch::new())
        .state_dir(state.path())
        .build()
        .unwrap();
    agent.run_turn("hi").await.unwrap();
    let seen = model.seen_catalogs();
    assert_eq!(seen[0].len(), 6, "{:?}", seen[0]);
    assert!(!seen[0].contains(&ToolSearch::TOOL.to_owned()));
}

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

async fn logged(logging: Logging) -> String {
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let model = Arc::new(ScriptedModel::new([
        ModelResponse::calls([
            ToolCall::new("c1", "bash__exec", json!({"command": "echo secret-arg"})),
            ToolCall::new("c2", "file-system__read", json!({"path": "missing"})),
        ]),
        ModelResponse::text("done"),
    ]));
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("a", registry(), model)
        .tools(["bash", "file-system"])
        .extension(logging)
        .state_dir(state.path())
        .build()
        .unwrap();
    agent.run_turn("go").await.unwrap();
    String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap()
}

#[tokio::test]
async fn logging_logs_start_end_duration_and_outcome_without_arguments() {
    let log = logged(Logging::new()).await;
    let started: Vec<_> = log
        .lines()
        .filter(|l| l.contains("tool call started"))
        .collect();
    let finished: Vec<_> = log
        .lines()
        .filter(|l| l.contains("tool call finished"))
        .collect();
    assert_eq!(started.len(), 2, "{log}");
    assert_eq!(finished.len(), 2, "{log}");
    assert!(started[0].contains("tool=bash__exec") && started[0].contains("tool_call_id=c1"));
    assert!(
        finished[0].contains("duration_ms=") && finished[0].contains("status=\"ok\""),
        "{log}"
    );
    assert!(
        finished[1].contains("status=\"error\"") && finished[1].contains("E_FS_NOT_FOUND"),
        "{log}"
    );
    assert!(!log.contains("secret-arg"), "{log}");
}

#[tokio::test]
async fn logging_logs_arguments_only_when_configured() {
    let log = logged(Logging::new().with_args(true)).await;
    let started: Vec<_> = log
        .lines()
        .filter(|l| l.contains("tool call started"))
        .collect();
    assert!(started[0].contains("secret-arg"), "{log}");
}
