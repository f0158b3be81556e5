//! The step loop: catalogs rebuilt every Step (CAT-1, CAT-2, CAT-5), step middleware (CAT-3),
//! extension middleware order (MW-3), results appended in call order (MW-4), `ctx.message`
//! (CTX-5), max steps and the workdir.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use goondan_runtime::bundle::{Bundle, ToolLibrary};
use goondan_runtime::extension::{
    Extension, ExtensionApi, ExtensionError, PipelineMiddleware, ToolItem, ToolsApi,
};
use goondan_runtime::prelude::*;
use goondan_runtime::step::{
    AgentInstance, ModelResponse, ScriptedModel, StepError, StepMiddleware, TurnEnd, step_fn,
    turn_fn,
};
use goondan_runtime::{Export, Tool, from_fn, handler_fn};
use serde_json::{Value, json};

/// Adds.
#[tool(name = "calc")]
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Sleeps `ms` milliseconds, then answers `ms`; reports the call's message and workdir.
fn probe() -> Tool {
    let params = json!({"type": "object", "properties": {"ms": {"type": "integer"}}});
    Tool::builder("probe")
        .export(Export::new(
            "run",
            params,
            handler_fn(|ctx, args| async move {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                let holds = ctx
                    .message()
                    .tool_calls
                    .iter()
                    .any(|c| c.id == ctx.tool_call_id());
                Ok::<_, ToolError>(json!({
                    "ms": ms,
                    "message": ctx.message().id,
                    "role": ctx.message().role,
                    "holds": holds,
                    "workdir": ctx.workdir().display().to_string(),
                }))
            }),
        ))
        .build()
        .unwrap()
}

fn registry() -> Arc<ToolRegistry> {
    Arc::new(
        ToolRegistry::builder()
            .tool(add::TOOL)
            .tool(probe())
            .build()
            .unwrap(),
    )
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall::new(id, name, args)
}

#[tokio::test]
async fn cat_2_each_step_catalog_starts_from_spec_tools() {
    let model = Arc::new(ScriptedModel::new([
        ModelResponse::calls([call("c1", "probe__run", json!({}))]),
        ModelResponse::text("done"),
    ]));
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("a", registry(), model.clone())
        .tools(["calc"])
        .state_dir(state.path())
        .build()
        .unwrap();
    let turn = agent.run_turn("hi").await.unwrap();
    // Only `calc` is declared: `probe` is registered but not in the catalog (PERM-1).
    assert_eq!(
        model.seen_catalogs(),
        vec![vec!["calc__add"], vec!["calc__add"]]
    );
    let refused = &turn.steps[0].results[0];
    assert_eq!(refused.error_code(), Some("E_TOOL_NOT_IN_CATALOG"));
    assert_eq!(turn.end, TurnEnd::Answered);
}

#[tokio::test]
async fn cat_2_undeclared_tool_of_the_agent_is_a_step_error() {
    let model = Arc::new(ScriptedModel::new([ModelResponse::text("x")]));
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("a", registry(), model)
        .tools(["calc", "nope"])
        .state_dir(state.path())
        .build()
        .unwrap();
    let err = agent.run_turn("hi").await.unwrap_err();
    assert!(matches!(err, StepError::Catalog(_)), "{err}");
}

/// Keeps its `api.tools` and registers `late__ping` from a step middleware during Step 0.
struct Late {
    tools: Arc<Mutex<Option<ToolsApi>>>,
}

impl Extension for Late {
    fn name(&self) -> &str {
        "late"
    }

    fn register(&self, api: &mut ExtensionApi) -> Result<(), ExtensionError> {
        *self.tools.lock().unwrap() = Some(api.tools.clone());
        let tools = Arc::clone(&self.tools);
        api.pipeline.register(
            PipelineMiddleware::step(step_fn(move |step, next| {
                let tools = Arc::clone(&tools);
                async move {
                    if step.step() == 0 {
                        let api = tools.lock().unwrap().clone().unwrap();
                        let item = ToolItem::new(
                            "late__ping",
                            json!({"type": "object", "properties": {}}),
                        )
                        .description("Registered while Step 0 ran");
                        api.register(
                            item,
                            handler_fn(|_c, _a| async { Ok::<_, ToolError>("pong") }),
                        )
                        .unwrap();
                    }
                    next.run(step).await
                }
            })),
            0,
        );
        Ok(())
    }
}

#[tokio::test]
async fn cat_5_dynamic_tool_shows_up_from_the_next_step() {
    let model = Arc::new(ScriptedModel::new([
        ModelResponse::calls([call("c1", "late__ping", json!({}))]),
        ModelResponse::calls([call("c2", "late__ping", json!({}))]),
        ModelResponse::text("done"),
    ]));
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("a", registry(), model.clone())
        .tools(["calc"])
        .extension(Late {
            tools: Arc::default(),
        })
        .state_dir(state.path())
        .build()
        .unwrap();
    let turn = agent.run_turn("hi").await.unwrap();
    assert_eq!(
        model.seen_catalogs(),
        vec![
            vec!["calc__add"],
            vec!["calc__add", "late__ping"],
            vec!["calc__add", "late__ping"]
        ]
    );
    assert_eq!(
        turn.steps[0].results[0].error_code(),
        Some("E_TOOL_NOT_IN_CATALOG")
    );
    assert_eq!(turn.steps[1].results[0].output, Some(json!("pong")));
    let source = turn.steps[1]
        .catalog
        .get("late__ping")
        .unwrap()
        .source()
        .cloned();
    assert_eq!(source.unwrap().name, "late");
}

#[tokio::test]
async fn cat_3_step_middleware_narrows_the_catalog_and_the_allow_list() {
    struct Narrow;
    impl Extension for Narrow {
        fn name(&self) -> &str {
            "narrow"
        }
        fn register(&self, api: &mut ExtensionApi) -> Result<(), ExtensionError> {
            api.pipeline.register(
                PipelineMiddleware::step(step_fn(|mut step, next| async move {
                    step.tool_catalog.retain(|i| i.name().resource() != "calc");
                    next.run(step).await
                })),
                0,
            );
            Ok(())
        }
    }
    let model = Arc::new(ScriptedModel::new([
        ModelResponse::calls([
            call("c1", "calc__add", json!({"a": 1, "b": 2})),
            call("c2", "probe__run", json!({})),
        ]),
        ModelResponse::text("done"),
    ]));
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("a", registry(), model.clone())
        .tools(["calc", "probe"])
        .extension(Narrow)
        .state_dir(state.path())
        .build()
        .unwrap();
    let turn = agent.run_turn("hi").await.unwrap();
    assert_eq!(model.seen_catalogs()[0], vec!["probe__run"]);
    let results = &turn.steps[0].results;
    assert_eq!(results[0].error_code(), Some("E_TOOL_NOT_IN_CATALOG"));
    assert!(results[1].is_ok());
}

/// Records `label` before and after the rest of each pipeline.
struct Recorder {
    name: &'static str,
    entries: Vec<(i32, &'static str)>,
    log: Arc<Mutex<Vec<String>>>,
}

fn step_recorder(label: &'static str, log: Arc<Mutex<Vec<String>>>) -> impl StepMiddleware {
    step_fn(move |step, next| {
        let log = Arc::clone(&log);
        async move {
            log.lock().unwrap().push(format!("step:{label}"));
            next.run(step).await
        }
    })
}

impl Extension for Recorder {
    fn name(&self) -> &str {
        self.name
    }

    fn register(&self, api: &mut ExtensionApi) -> Result<(), ExtensionError> {
        for &(priority, label) in &self.entries {
            let log = Arc::clone(&self.log);
            api.pipeline.register(
                PipelineMiddleware::tool_call(from_fn(move |call, next| {
                    let log = Arc::clone(&log);
                    async move {
                        log.lock().unwrap().push(format!("call:{label}"));
                        next.run(call).await
                    }
                })),
                priority,
            );
            api.pipeline.register(
                PipelineMiddleware::step(step_recorder(label, Arc::clone(&self.log))),
                priority,
            );
            let log = Arc::clone(&self.log);
            api.pipeline.register(
                PipelineMiddleware::turn(turn_fn(move |turn, next| {
                    let log = Arc::clone(&log);
                    async move {
                        log.lock().unwrap().push(format!("turn:{label}"));
                        next.run(turn).await
                    }
                })),
                priority,
            );
        }
        Ok(())
    }
}

#[tokio::test]
async fn mw_3_extension_middleware_runs_by_priority_then_registration_order_in_every_stage() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let model = Arc::new(ScriptedModel::new([
        ModelResponse::calls([call("c1", "calc__add", json!({"a": 1, "b": 2}))]),
        ModelResponse::text("done"),
    ]));
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("a", registry(), model)
        .tools(["calc"])
        .extension(Recorder {
            name: "first",
            entries: vec![(0, "a0"), (5, "a5")],
            log: Arc::clone(&log),
        })
        .extension(Recorder {
            name: "second",
            entries: vec![(0, "b0"), (-1, "b-1")],
            log: Arc::clone(&log),
        })
        .state_dir(state.path())
        .build()
        .unwrap();
    agent.run_turn("hi").await.unwrap();
    let log = log.lock().unwrap().clone();
    let calls: Vec<_> = log.iter().filter(|l| l.starts_with("call:")).collect();
    assert_eq!(calls, vec!["call:b-1", "call:a0", "call:b0", "call:a5"]);
    let steps: Vec<_> = log
        .iter()
        .filter(|l| l.starts_with("step:"))
        .take(4)
        .collect();
    assert_eq!(steps, vec!["step:b-1", "step:a0", "step:b0", "step:a5"]);
    // One onion, one rule: the turn chain orders the same way, and wraps everything.
    let turns: Vec<_> = log.iter().filter(|l| l.starts_with("turn:")).collect();
    assert_eq!(turns, vec!["turn:b-1", "turn:a0", "turn:b0", "turn:a5"]);
    assert_eq!(log[..4], ["turn:b-1", "turn:a0", "turn:b0", "turn:a5"]);
}

#[tokio::test]
async fn mw_4_results_are_appended_as_tool_messages_in_call_order() {
    let model = Arc::new(ScriptedModel::new([
        ModelResponse::calls([
            call("c1", "probe__run", json!({"ms": 200})),
            call("c2", "probe__run", json!({"ms": 150})),
            call("c3", "calc__add", json!({"a": 1, "b": 1})),
        ]),
        ModelResponse::text("done"),
    ]));
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("a", registry(), model)
        .tools(["probe", "calc"])
        .concurrency(3)
        .state_dir(state.path())
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let turn = agent.run_turn("hi").await.unwrap();
    // Concurrent: well under the 350 ms the calls take one after another, and the first call,
    // which finishes last, still comes first.
    assert!(
        started.elapsed() < Duration::from_millis(340),
        "{:?}",
        started.elapsed()
    );
    let ids: Vec<_> = turn.steps[0]
        .results
        .iter()
        .map(|r| r.tool_call_id.as_str())
        .collect();
    assert_eq!(ids, vec!["c1", "c2", "c3"]);
    let conversation = agent.conversation();
    let roles: Vec<_> = conversation.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(
        roles,
        vec!["user", "assistant", "tool", "tool", "tool", "assistant"]
    );
    let tool_ids: Vec<_> = conversation
        .iter()
        .filter(|m| m.role == "tool")
        .map(|m| m.metadata["toolCallId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tool_ids, vec!["c1", "c2", "c3"]);
    let body: Value = serde_json::from_str(conversation[4].content.as_deref().unwrap()).unwrap();
    assert_eq!(body["output"], 2);
}

#[tokio::test]
async fn ctx_5_each_call_sees_the_assistant_message_that_holds_it() {
    let model = Arc::new(ScriptedModel::new([
        ModelResponse::calls([call("c1", "probe__run", json!({}))]),
        ModelResponse::calls([call("c2", "probe__run", json!({}))]),
        ModelResponse::text("done"),
    ]));
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("a", registry(), model)
        .tools(["probe"])
        .state_dir(state.path())
        .build()
        .unwrap();
    let turn = agent.run_turn("hi").await.unwrap();
    for step in &turn.steps[..2] {
        let out = step.results[0].output.clone().unwrap();
        assert_eq!(out["message"], step.assistant.id.as_str());
        assert_eq!(out["role"], "assistant");
        assert_eq!(out["holds"], true);
    }
    assert_ne!(turn.steps[0].assistant.id, turn.steps[1].assistant.id);
    // CTX-2: the workdir is `{state}/workspace`.
    let out = turn.steps[0].results[0].output.clone().unwrap();
    assert_eq!(
        out["workdir"],
        state.path().join("workspace").display().to_string()
    );
    assert!(state.path().join("workspace").is_dir());
}

#[tokio::test]
async fn max_steps_per_turn_ends_the_turn() {
    let looping = (0..10).map(|i| {
        ModelResponse::calls([call(&format!("c{i}"), "calc__add", json!({"a": i, "b": 0}))])
    });
    let model = Arc::new(ScriptedModel::new(looping));
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("a", registry(), model.clone())
        .tools(["calc"])
        .max_steps_per_turn(3)
        .state_dir(state.path())
        .build()
        .unwrap();
    let turn = agent.run_turn("loop").await.unwrap();
    assert_eq!(turn.end, TurnEnd::MaxSteps);
    assert_eq!(turn.steps.len(), 3);
    assert_eq!(model.remaining(), 7);
}

#[tokio::test]
async fn an_instance_from_a_bundle_uses_spec_tools_and_policy() {
    let yaml = "apiVersion: goondan.ai/v1\nkind: Tool\nmetadata: {name: calc}\nspec:\n  exports:\n    - name: add\n---\napiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: helper}\nspec:\n  tools: [\"Tool/calc\"]\n  policy: {maxStepsPerTurn: 2}\n";
    let bundle = Bundle::from_yaml(yaml, "b.yaml");
    let registry = Arc::new(bundle.registry(&ToolLibrary::new([add::TOOL])).unwrap());
    let script = (0..5).map(|i| {
        ModelResponse::calls([call(&format!("c{i}"), "calc__add", json!({"a": 1, "b": 2}))])
    });
    let model = Arc::new(ScriptedModel::new(script));
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::from_bundle(&bundle, "helper", registry, model)
        .unwrap()
        .state_dir(state.path())
        .build()
        .unwrap();
    let turn = agent.run_turn("go").await.unwrap();
    assert_eq!(turn.end, TurnEnd::MaxSteps);
    assert_eq!(turn.steps.len(), 2);
    assert_eq!(turn.steps[0].results[0].output, Some(json!(3)));
}

/// Rewrites the Turn's input and records the order of turn middlewares.
struct TurnProbe {
    log: Arc<Mutex<Vec<String>>>,
}

impl Extension for TurnProbe {
    fn name(&self) -> &str {
        "turn-probe"
    }

    fn register(&self, api: &mut ExtensionApi) -> Result<(), ExtensionError> {
        for (priority, label) in [(1, "inner"), (-1, "outer")] {
            let log = Arc::clone(&self.log);
            api.pipeline
                .register(PipelineMiddleware::turn(TurnLabel { label, log }), priority);
        }
        Ok(())
    }
}

struct TurnLabel {
    label: &'static str,
    log: Arc<Mutex<Vec<String>>>,
}

impl goondan_runtime::Middleware<goondan_runtime::step::TurnContext> for TurnLabel {
    fn handle(
        self: Arc<Self>,
        mut turn: goondan_runtime::step::TurnContext,
        next: goondan_runtime::step::TurnNext,
    ) -> goondan_runtime::step::StepFuture<'static, goondan_runtime::step::TurnOutcome> {
        Box::pin(async move {
            self.log
                .lock()
                .unwrap()
                .push(format!("before:{}", self.label));
            if let Some(text) = &mut turn.input.content {
                text.push_str(&format!(" [{}]", self.label));
            }
            let outcome = next.run(turn).await;
            self.log
                .lock()
                .unwrap()
                .push(format!("after:{}", self.label));
            outcome
        })
    }
}

#[tokio::test]
async fn mw_3_turn_middleware_wraps_the_turn_by_priority_and_may_edit_the_input() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let model = Arc::new(ScriptedModel::new([ModelResponse::text("done")]));
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("a", registry(), model.clone())
        .tools(["calc"])
        .extension(TurnProbe {
            log: Arc::clone(&log),
        })
        .state_dir(state.path())
        .build()
        .unwrap();
    let turn = agent.run_turn("hello").await.unwrap();
    assert_eq!(turn.answer(), Some("done"));
    assert_eq!(
        *log.lock().unwrap(),
        vec!["before:outer", "before:inner", "after:inner", "after:outer"]
    );
    let first = &model.requests()[0].messages[0];
    assert_eq!(first.content.as_deref(), Some("hello [outer] [inner]"));
}

/// Jobs that answer later (RES-2): `start` returns a handle at once and finishes when the
/// test's model lets it.
#[derive(Clone, Default)]
struct Gate(Arc<tokio::sync::Notify>);

fn jobs(gate: Gate) -> Tool {
    let params = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    Tool::builder("jobs")
        .export(Export::new(
            "start",
            params,
            handler_fn(move |_ctx, args| {
                let gate = gate.clone();
                async move {
                    let n = args.get("n").and_then(Value::as_i64).unwrap_or(0);
                    Ok::<_, ToolError>(Pending::new(async move {
                        gate.0.notified().await;
                        Ok::<_, ToolError>(json!({"doubled": n * 2}))
                    }))
                }
            }),
        ))
        .build()
        .unwrap()
}

/// Step 0 submits a job; Step 1 lets it finish and answers without calls (the Turn must wait
/// for the completion); Step 2 reads the completion and answers.
struct Submitter(Gate);

impl goondan_runtime::step::Model for Submitter {
    fn respond<'a>(
        &'a self,
        request: &'a goondan_runtime::step::ModelRequest,
    ) -> goondan_runtime::step::ModelFuture<'a> {
        let response = match request.step {
            0 => ModelResponse::calls([call("c1", "jobs__start", json!({"n": 21}))]),
            1 => {
                self.0.0.notify_one();
                ModelResponse::text("started; I will tell you")
            }
            _ => {
                let last = request.messages.last().and_then(|m| m.content.clone());
                ModelResponse::text(format!("seen: {}", last.unwrap_or_default()))
            }
        };
        Box::pin(async move { Ok(response) })
    }
}

#[tokio::test]
async fn res_2_a_submitted_calls_completion_reaches_the_model_and_the_turn_waits_for_it() {
    use goondan_runtime::step::journal::{MemoryJournal, Record, Replay};
    let gate = Gate::default();
    let registry = Arc::new(
        ToolRegistry::builder()
            .tool(jobs(gate.clone()))
            .build()
            .unwrap(),
    );
    let journal = MemoryJournal::new();
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("a", registry, Arc::new(Submitter(gate)))
        .tools(["jobs"])
        .state_dir(state.path())
        .journal(Arc::new(journal.clone()))
        .build()
        .unwrap();
    let turn = tokio::time::timeout(Duration::from_secs(20), agent.run_turn("double 21"))
        .await
        .expect("the turn never ended")
        .unwrap();
    assert_eq!(turn.end, TurnEnd::Answered);
    assert_eq!(
        turn.steps.len(),
        3,
        "the model was asked again once it finished"
    );
    assert_eq!(
        turn.steps[0].results[0].status,
        goondan_runtime::ToolStatus::Pending
    );
    let conversation = agent.conversation();
    let roles: Vec<&str> = conversation.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant"
        ]
    );
    let completion = conversation[4].content.clone().unwrap_or_default();
    assert!(
        completion.contains("`c1`") && completion.contains(r#""doubled":42"#),
        "{completion}"
    );
    assert_eq!(conversation[4].metadata["toolCallId"], "c1");
    assert_eq!(turn.answer(), Some(format!("seen: {completion}").as_str()));
    // The completion is journaled, and the journal gives back the same conversation.
    let records = journal.records();
    assert_eq!(
        records
            .iter()
            .filter(|r| r.kind() == "submissionCompleted")
            .count(),
        1
    );
    assert!(matches!(records.last(), Some(Record::TurnEnded { .. })));
    let replay = Replay::from_records(records);
    assert_eq!(replay.conversation, conversation);
    assert!(replay.submitted.is_empty() && replay.warnings.is_empty());
}

/// Retry budgets: a model that keeps calling a tool wrongly sees how many
/// tries are left, and one failure past the budget stops the Turn naming the tool; without a
/// budget it loops until `maxStepsPerTurn`. Failures that would not pass are not counted.
#[tokio::test]
async fn a_retry_budget_stops_a_turn_that_loops_on_a_failing_tool() {
    use goondan_runtime::calls::retry::RetryBudget;
    let wrong = |i: usize| {
        ModelResponse::calls([call(
            &format!("c{i}"),
            "calc__add",
            json!({"a": "2", "b": 3}),
        )])
    };
    let agent = |budget: Option<RetryBudget>, model: Arc<ScriptedModel>| {
        let state = tempfile::tempdir().unwrap();
        let mut builder = AgentInstance::builder("a", registry(), model)
            .tools(["calc", "probe"])
            .max_steps_per_turn(6)
            .state_dir(state.path());
        if let Some(budget) = budget {
            builder = builder.retry_budget(budget);
        }
        (builder.build().unwrap(), state)
    };

    let model = Arc::new(ScriptedModel::new((0..6).map(wrong)));
    let (limited, _state) = agent(
        Some(RetryBudget::per_tool(3).tool("calc__add", 2)),
        model.clone(),
    );
    let stopped = limited.run_turn("add").await;
    match stopped {
        Err(StepError::RetryBudget {
            tool,
            failures,
            error,
        }) => {
            assert_eq!((tool.as_str(), failures), ("calc__add", 3));
            assert_eq!(error.code(), "E_TOOL_INVALID_ARGS");
        }
        other => panic!("the turn went on: {other:?}"),
    }
    assert_eq!(
        model.remaining(),
        3,
        "the model was asked three times, not six"
    );
    // What the model read after each failure.
    let said: Vec<String> = limited
        .conversation()
        .iter()
        .filter(|m| m.role == "tool")
        .filter_map(|m| serde_json::from_str::<ToolCallResult>(m.content.as_deref()?).ok())
        .filter_map(|r| r.error.and_then(|e| e.suggestion().map(str::to_owned)))
        .collect();
    assert_eq!(said.len(), 3);
    assert!(
        said[0].ends_with("tries left for `calc__add` in this turn: 1"),
        "{}",
        said[0]
    );
    assert!(said[1].contains("in this turn: 0"), "{}", said[1]);
    assert!(said[2].contains("the turn stopped"), "{}", said[2]);

    // Without a budget the same model loops to the end of its Steps.
    let model = Arc::new(ScriptedModel::new((0..6).map(wrong)));
    let (unlimited, _state) = agent(None, model.clone());
    let turn = unlimited.run_turn("add").await.unwrap();
    assert_eq!((turn.end, model.remaining()), (TurnEnd::MaxSteps, 0));

    // A failure that would not pass (a call outside the catalog) is not counted.
    let outside =
        (0..4).map(|i| ModelResponse::calls([call(&format!("o{i}"), "admin__reset", json!({}))]));
    let model = Arc::new(ScriptedModel::new(
        outside.chain([ModelResponse::text("ok")]),
    ));
    let (limited, _state) = agent(Some(RetryBudget::per_tool(1)), model);
    let turn = limited.run_turn("reset").await.unwrap();
    assert_eq!(turn.end, TurnEnd::Answered);
}
