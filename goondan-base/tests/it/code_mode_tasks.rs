//! Code mode against the classic loop on tasks over the base tools (issue 52): the same
//! ground-truth calls, one per model round trip or written as one program per turn, reach the
//! real tools and leave the same calls, results and files, in fewer round trips. The figures
//! (tokens, wall time) come from `benches/code_mode.rs`.

use std::sync::Arc;

use goondan_runtime::step::ScriptedModel;

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
