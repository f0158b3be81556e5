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
async fn cat_3_tool_search_narrows_the_next_catalog_and_keeps_itself() {
    let model = Arc::new(ScriptedModel::new([
        ModelResponse::calls([ToolCall::new(
            "c1",
            ToolSearch::TOOL,
            json!({"query": "write file"}),
        )]),
        ModelResponse::calls([
            ToolCall::new(
                "c2",
                "file-system__write",
                json!({"path": "a.txt", "content": "x"}),
            ),
            ToolCall::new("c3", "bash__exec", json!({"command": "true"})),
        ]),
        ModelResponse::calls([ToolCall::new("c4", ToolSearch::TOOL, json!({"query": ""}))]),
        ModelResponse::text("done"),
    ]));
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("a", registry(), model.clone())
        .tools(["bash", "file-system"])
        .extension(ToolSearch::new().max_results(2))
        .state_dir(state.path())
        .build()
        .unwrap();
    let turn = agent.run_turn("save a note").await.unwrap();
    let seen = model.seen_catalogs();
    // Step 0: everything, the search tool included (registered by the extension, CAT-4).
    assert_eq!(seen[0].len(), 7, "{:?}", seen[0]);
    assert!(seen[0].contains(&ToolSearch::TOOL.to_owned()));
    // Step 1: the two best matches and the search tool.
    assert_eq!(
        seen[1],
        vec!["file-system__write", "file-system__read", ToolSearch::TOOL]
    );
    let matches = turn.steps[0].results[0].output.clone().unwrap()["matches"].clone();
    assert_eq!(matches[0]["name"], "file-system__write");
    // What was narrowed away is refused.
    assert!(turn.steps[1].results[0].is_ok());
    assert_eq!(
        turn.steps[1].results[1].error_code(),
        Some("E_TOOL_NOT_IN_CATALOG")
    );
    // An empty query shows everything again.
    assert_eq!(seen[3].len(), 7);
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
