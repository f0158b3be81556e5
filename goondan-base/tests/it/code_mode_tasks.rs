//! Code mode against the classic loop on tasks over the base tools (issue 52): the same
//! ground-truth calls, one per model round trip or written as one program per turn, reach the
//! real tools and leave the same calls, results and files, in fewer round trips. The figures
//! (tokens, wall time) come from `benches/code_mode.rs`.

use std::sync::Arc;

use goondan_runtime::code::CodeMode;
use goondan_runtime::step::{AgentInstance, ModelResponse, ScriptedModel};
use goondan_runtime::{ToolCall, ToolRegistry};
use serde_json::json;

#[path = "../support/code_mode_tasks.rs"]
mod tasks;

use tasks::Way;

/// Every task, both ways: the same record, no failure, code mode in one round trip a turn
/// (the program gives the answer) where the classic loop takes one per call and one more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_base_tool_tasks_give_the_same_calls_and_files_both_ways_in_fewer_round_trips() {
    for task in tasks::tasks() {
        let mut outcomes = Vec::new();
        for way in [Way::Classic, Way::Code] {
            let model = Arc::new(ScriptedModel::new(tasks::script(&task, way)));
            let outcome = tasks::run(&task, way, model.clone()).await;
            assert_eq!(model.remaining(), 0, "{} ({way:?})", task.id);
            assert!(
                outcome.failures.is_empty(),
                "{} ({way:?}): {:?}",
                task.id,
                outcome.failures
            );
            outcomes.push(outcome);
        }
        let (classic, code) = (&outcomes[0], &outcomes[1]);
        let calls: usize = task.turns.iter().map(|t| t.calls.len()).sum();
        assert!(task.turns.iter().all(|t| t.calls.len() >= 3), "{}", task.id);
        assert_eq!(
            classic.record["calls"].as_array().map(Vec::len),
            Some(calls),
            "{}: {}",
            task.id,
            classic.record
        );
        assert_eq!(classic.record, code.record, "{}", task.id);
        assert_eq!(classic.round_trips, calls + task.turns.len(), "{}", task.id);
        assert_eq!(code.round_trips, task.turns.len(), "{}", task.id);
    }
}

/// The program of the README's "Code mode" section runs as shown, over the real base tools:
/// it writes the TODO lines of `notes.txt` to `todo.txt`, and its `final_answer` is the
/// Turn's answer, the model asked once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_the_readme_s_program_runs_over_the_base_tools_and_gives_the_answer() {
    let readme = include_str!("../../../README.md");
    let section = &readme[readme
        .find("## Code mode")
        .expect("the README has a Code mode section")..];
    let start = section.find("```python\n").expect("a Python block") + "```python\n".len();
    let end = start + section[start..].find("```").expect("the block ends");
    let program = &section[start..end];
    let model = Arc::new(ScriptedModel::new([ModelResponse::calls([ToolCall::new(
        "c1",
        "code__run",
        json!({ "code": program }),
    )])]));
    let registry = ToolRegistry::builder()
        .tools(goondan_base::tools())
        .build()
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("notes", Arc::new(registry), model.clone())
        .tools(["file-system"])
        .code_mode(CodeMode::new().tools_callable_directly(false).max_calls(20))
        .state_dir(state.path())
        .build()
        .unwrap();
    std::fs::create_dir_all(agent.workdir()).unwrap();
    std::fs::write(
        agent.workdir().join("notes.txt"),
        "TODO: buy milk\nmilk is white\nTODO: call Ada\n",
    )
    .unwrap();
    let turn = agent.run_turn("gather my TODOs").await.unwrap();
    assert_eq!(turn.answer(), Some("2 TODOs are in todo.txt"), "{turn:?}");
    assert_eq!(turn.model_requests(), 1);
    let written = std::fs::read_to_string(agent.workdir().join("todo.txt")).unwrap();
    assert_eq!(written, "TODO: buy milk\nTODO: call Ada");
}
