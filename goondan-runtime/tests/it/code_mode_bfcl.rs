//! Code mode against the classic loop on BFCL's multi-turn base tasks (issue 52), with BFCL's
//! own API classes as the peer (`tests/support/bfcl_tasks.rs`): the same ground-truth calls,
//! one per model round trip or written as one program per turn that gives the answer, leave
//! the APIs with the same calls served, the same results and the same state, in fewer round
//! trips. The figures (tokens, wall time, the whole task set) come from
//! `benches/code_mode.rs`.

use std::sync::Arc;

use goondan_runtime::step::ScriptedModel;

use crate::bfcl::{self, Way};

/// Three tasks of three or more calls in every turn: each way gives the same record, code mode
/// in one round trip a turn (the program gives the answer) where the classic loop takes one
/// per call and one more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bfcl_tasks_give_the_same_calls_and_state_both_ways_in_fewer_round_trips() {
    let data = bfcl::data_dir();
    let tasks: Vec<_> = bfcl::tasks(&data)
        .into_iter()
        .filter(|t| t.min_calls() >= 3)
        .take(3)
        .collect();
    assert_eq!(
        tasks.len(),
        3,
        "BFCL has tasks of three or more calls a turn"
    );
    for task in &tasks {
        let mut outcomes = Vec::new();
        for way in [Way::Classic, Way::Code] {
            let model = Arc::new(ScriptedModel::new(bfcl::script(task, way)));
            let outcome = bfcl::run(&data, task, way, model.clone()).await;
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
        assert_eq!(
            classic.record["calls"].as_array().map(Vec::len),
            Some(calls)
        );
        assert_eq!(classic.record, code.record, "{}", task.id);
        assert_eq!(classic.round_trips, calls + task.turns.len(), "{}", task.id);
        assert_eq!(code.round_trips, task.turns.len(), "{}", task.id);
    }
}
