//! Code mode (issue 52): a Step whose model answers with one `code__run` call, whose program
//! calls the Step's tools as functions. Every inner call goes through the instance's executor:
//! the catalog gate, argument validation against the schema the Step shows, middleware and
//! approvals; each limit of a program is a structured error that keeps what it printed and
//! the calls it made.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use goondan_runtime::calls::approval::{Approvals, Decision, Policy, approver_fn};
use goondan_runtime::code::worker::{LaunchedWorker, WorkerCommand, WorkerLauncher};
use goondan_runtime::code::{CodeMode, codes};
use goondan_runtime::extension::{Extension, ExtensionApi, ExtensionError, PipelineMiddleware};
use goondan_runtime::prelude::*;
use goondan_runtime::step::{AgentInstance, ModelResponse, ScriptedModel, step_fn};
use goondan_runtime::{CallContext, Middleware, ToolStatus, from_fn};
use serde_json::{Value, json};

/// A shop's stock.
#[tool(name = "shop")]
pub mod shop {
    use super::*;

    /// The names of the items in stock.
    pub fn items() -> Vec<String> {
        vec!["apple".into(), "pear".into(), "melon".into(), "fig".into()]
    }

    /// The price of an item, in cents.
    #[export(output_schema)]
    pub fn price(
        /// The item's name.
        name: String,
    ) -> Result<i64, ToolError> {
        match name.as_str() {
            "apple" => Ok(30),
            "pear" => Ok(45),
            "melon" => Ok(250),
            "fig" => Ok(80),
            _ => Err(ToolError::new(format!("no item `{name}`")).with_code("E_SHOP_UNKNOWN")),
        }
    }

    /// Removes an item from the stock.
    pub fn remove(name: String) -> String {
        format!("removed {name}")
    }

    /// A catalogue of every item, several megabytes long.
    pub fn catalogue() -> String {
        "x".repeat(3 * 1024 * 1024)
    }
}

/// Records every call the executor's middleware chain sees: name and call id.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(String, String)>>>);

impl Seen {
    fn calls(&self) -> Vec<(String, String)> {
        self.0.lock().unwrap().clone()
    }
}

/// The test's middleware: the calls seen, approvals if any, and a step middleware if any.
struct Harness {
    seen: Seen,
    approvals: Option<Arc<Approvals>>,
    narrow: bool,
}

impl Extension for Harness {
    fn name(&self) -> &str {
        "harness"
    }

    fn register(&self, api: &mut ExtensionApi) -> Result<(), ExtensionError> {
        let seen = self.seen.clone();
        let record = from_fn(move |call: CallContext, next| {
            seen.0
                .lock()
                .unwrap()
                .push((call.tool_name().to_owned(), call.tool_call_id().to_owned()));
            next.run(call)
        });
        api.pipeline
            .register(PipelineMiddleware::tool_call(record), i32::MIN);
        if let Some(approvals) = &self.approvals {
            let mw: Arc<dyn Middleware> = approvals.clone();
            api.pipeline
                .register(PipelineMiddleware::from_arc::<CallContext>(mw), 0);
        }
        if self.narrow {
            // This Step offers `shop__price` for apples and figs only.
            let narrow = step_fn(|mut step, next| async move {
                if let Some(item) = step.tool_catalog.get("shop__price") {
                    let mut item = item.clone();
                    item.set_parameters(json!({
                        "type": "object",
                        "properties": {"name": {"enum": ["apple", "fig"]}},
                        "required": ["name"],
                        "additionalProperties": false,
                    }));
                    step.tool_catalog.push(item);
                }
                next.run(step).await
            });
            api.pipeline.register(PipelineMiddleware::step(narrow), 0);
        }
        Ok(())
    }
}

struct Run {
    model: Arc<ScriptedModel>,
    result: ToolCallResult,
    seen: Seen,
}

/// Runs one Turn whose model calls `code__run` with `program`, with code mode `mode` over the
/// `shop` tools minus `remove` (unless `all`), and the harness's extras.
async fn run_program(program: &str, mode: CodeMode, harness: Harness, all: bool) -> Run {
    let model = Arc::new(ScriptedModel::new([
        ModelResponse::calls([ToolCall::new("c1", "code__run", json!({ "code": program }))]),
        ModelResponse::text("done"),
    ]));
    let registry = Arc::new(ToolRegistry::builder().tool(shop::TOOL).build().unwrap());
    let seen = harness.seen.clone();
    let state = tempfile::tempdir().unwrap();
    let mut builder = AgentInstance::builder("shopper", registry, model.clone())
        .code_mode(mode)
        .extension(harness)
        .state_dir(state.path());
    builder = if all {
        builder.tools(["shop"])
    } else {
        builder.toolset(goondan_runtime::tools::toolset::Toolset::of("shop").exclude(["remove"]))
    };
    let agent = builder.build().unwrap();
    let turn = agent.run_turn("go").await.unwrap();
    let result = turn.steps[0].results[0].clone();
    Run {
        model,
        result,
        seen,
    }
}

fn harness() -> Harness {
    Harness {
        seen: Seen::default(),
        approvals: None,
        narrow: false,
    }
}

async fn run(program: &str) -> Run {
    run_program(program, CodeMode::new(), harness(), false).await
}

fn value(run: &Run) -> &Value {
    match &run.result.output {
        Some(output) => &output["value"],
        None => panic!("the program failed: {:?}", run.result.error),
    }
}

fn error(run: &Run, code: &str) -> String {
    assert_eq!(run.result.error_code(), Some(code), "{:?}", run.result);
    run.result.error.as_ref().unwrap().message().to_owned()
}

#[tokio::test]
async fn a_program_calls_two_tools_in_a_loop_and_filters_each_call_through_the_executor() {
    let run = run(
        "cheap = []\nfor name in shop.items():\n    if shop.price(name=name) < 100:\n        cheap.append(name)\nprint(len(cheap), 'cheap')\ncheap",
    )
    .await;
    assert_eq!(value(&run), &json!(["apple", "pear", "fig"]));
    let output = run.result.output.as_ref().unwrap();
    assert_eq!(output["printed"], "3 cheap\n");
    assert_eq!(output["calls"], 5);
    // The middleware chain saw the code call, then each inner call under its id.
    let seen = run.seen.calls();
    let names: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "code__run",
            "shop__items",
            "shop__price",
            "shop__price",
            "shop__price",
            "shop__price"
        ]
    );
    assert_eq!(seen[1].1, "c1.1");
    assert_eq!(seen[5].1, "c1.5");
    // The model saw the code tool with the stubs, beside the tools themselves.
    let shown = &run.model.requests()[0].catalog;
    let description = shown
        .get("code__run")
        .unwrap()
        .description()
        .unwrap()
        .to_owned();
    assert!(description.contains("class shop:"), "{description}");
    assert!(
        description.contains("def price(*, name: str) -> int:"),
        "{description}"
    );
    assert!(description.contains("The item's name."), "{description}");
    assert!(
        !description.contains("def remove"),
        "only the Step's tools: {description}"
    );
    assert!(shown.contains("shop__price"));
}

#[tokio::test]
async fn with_the_tools_not_callable_directly_the_model_sees_the_code_tool_alone() {
    let mode = CodeMode::new().tools_callable_directly(false);
    let run = run_program("shop.price(name='fig')", mode, harness(), false).await;
    assert_eq!(value(&run), &json!(80));
    let shown = &run.model.requests()[0].catalog;
    assert_eq!(shown.names().collect::<Vec<_>>(), ["code__run"]);
}

#[tokio::test]
async fn a_tool_outside_the_step_s_catalog_raises_not_in_catalog_which_the_program_catches() {
    let run =
        run("try:\n    shop.remove(name='fig')\nexcept ToolError as e:\n    r = str(e)\nr").await;
    let text = value(&run).as_str().unwrap().to_owned();
    assert!(text.starts_with("E_TOOL_NOT_IN_CATALOG: "), "{text}");
    // The refusal came from the executor's gate, never from the handler.
    assert!(run.seen.calls().iter().all(|(n, _)| n != "shop__remove"));
}

#[tokio::test]
async fn wrong_keyword_arguments_raise_invalid_args_and_a_tool_s_own_error_keeps_its_code() {
    let run = run(
        "out = []\nfor kwargs in [{'nme': 'fig'}, {'name': 3}, {'name': 'kiwi'}]:\n    try:\n        shop.price(**kwargs)\n    except ToolError as e:\n        out.append(str(e).split(':')[0])\nout",
    )
    .await;
    assert_eq!(
        value(&run),
        &json!([
            "E_TOOL_INVALID_ARGS",
            "E_TOOL_INVALID_ARGS",
            "E_SHOP_UNKNOWN"
        ])
    );
}

#[tokio::test]
async fn a_schema_the_step_narrows_is_enforced_inside_the_program_and_shown_in_the_stub() {
    let mut h = harness();
    h.narrow = true;
    let run = run_program(
        "try:\n    shop.price(name='pear')\nexcept ToolError as e:\n    r = str(e)\n[r, shop.price(name='fig')]",
        CodeMode::new(),
        h,
        false,
    )
    .await;
    let got = value(&run);
    assert!(
        got[0].as_str().unwrap().starts_with("E_TOOL_INVALID_ARGS"),
        "{got}"
    );
    assert_eq!(got[1], 80);
    let shown = &run.model.requests()[0].catalog;
    let description = shown.get("code__run").unwrap().description().unwrap();
    assert!(
        description.contains("def price(*, name: Literal[\"apple\", \"fig\"]) -> int:"),
        "{description}"
    );
}

#[tokio::test]
async fn an_approval_gated_tool_asks_through_the_usual_approvals_and_a_denial_is_catchable() {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&asked);
    let approvals = Approvals::new(approver_fn(move |request| {
        log.lock().unwrap().push(request.tool_name().to_owned());
        let deny = request.args().get("name") == Some(&json!("melon"));
        async move {
            if deny {
                Decision::Deny {
                    reason: "melons stay".into(),
                }
            } else {
                Decision::Approve
            }
        }
    }))
    .policy("shop__remove", Policy::Ask)
    .default_policy(Policy::Allow);
    let mut h = harness();
    h.approvals = Some(Arc::new(approvals));
    let run = run_program(
        "out = [shop.remove(name='fig')]\ntry:\n    shop.remove(name='melon')\nexcept ToolError as e:\n    out.append(str(e).split(':')[0])\nout",
        CodeMode::new(),
        h,
        true,
    )
    .await;
    assert_eq!(value(&run), &json!(["removed fig", "E_TOOL_DENIED"]));
    assert_eq!(*asked.lock().unwrap(), ["shop__remove", "shop__remove"]);
}

#[tokio::test]
async fn a_syntax_error_is_e_code_syntax_with_the_line() {
    let run = run("x = 1\nif x >:\n    pass").await;
    let message = error(&run, codes::SYNTAX);
    assert!(message.contains("line 2"), "{message}");
    assert!(message.contains("SyntaxError"), "{message}");
}

#[tokio::test]
async fn an_endless_loop_reaches_the_time_limit_and_keeps_what_was_printed_and_called() {
    let mode = CodeMode::new().time_limit(Duration::from_millis(200));
    let run = run_program(
        "print('started')\nshop.items()\nwhile True:\n    pass",
        mode,
        harness(),
        false,
    )
    .await;
    let message = error(&run, codes::LIMIT);
    assert!(message.contains("time limit"), "{message}");
    assert!(message.contains("started"), "{message}");
    assert!(
        message.contains("tool calls made: 1 (shop__items ok)"),
        "{message}"
    );
}

#[tokio::test]
async fn deep_recursion_reaches_the_recursion_limit() {
    let run = run("def down(n):\n    return down(n + 1)\ndown(0)").await;
    let message = error(&run, codes::LIMIT);
    assert!(message.contains("recursion depth limit"), "{message}");
    assert!(message.contains("line 2"), "{message}");
}

#[tokio::test]
async fn a_huge_list_or_string_reaches_the_memory_limit_before_it_is_made() {
    for program in ["[0] * (10 ** 10)", "'x' * (10 ** 10)"] {
        let run = run(program).await;
        let message = error(&run, codes::LIMIT);
        assert!(message.contains("memory limit"), "{program}: {message}");
    }
}

#[tokio::test]
async fn too_many_tool_calls_end_the_program_even_when_it_catches_everything() {
    let mode = CodeMode::new().max_calls(3);
    let run = run_program(
        "n = 0\nwhile True:\n    try:\n        shop.items()\n        n += 1\n    except Exception:\n        pass",
        mode,
        harness(),
        false,
    )
    .await;
    let message = error(&run, codes::LIMIT);
    assert!(message.contains("tool calls limit"), "{message}");
    assert!(message.contains("tool calls made: 3"), "{message}");
    let inner = run
        .seen
        .calls()
        .iter()
        .filter(|(n, _)| n == "shop__items")
        .count();
    assert_eq!(inner, 3);
}

#[tokio::test]
async fn printing_past_the_output_limit_is_e_code_limit_with_the_start_of_the_output() {
    let mode = CodeMode::new().output_limit(100);
    let run = run_program(
        "for i in range(1000):\n    try:\n        print('line', i)\n    except Exception:\n        pass\n1",
        mode,
        harness(),
        false,
    )
    .await;
    let message = error(&run, codes::LIMIT);
    assert!(message.contains("output limit"), "{message}");
    assert!(message.contains("line 0"), "{message}");
}

#[tokio::test]
async fn import_os_open_and_unknown_names_are_e_code_error_with_a_traceback() {
    for (program, says) in [
        (
            "import os\nos.listdir('/')",
            "PermissionError: `Path.iterdir` is not available",
        ),
        (
            "open('/etc/passwd').read()",
            "PermissionError: `open` is not available",
        ),
        ("import socket", "ModuleNotFoundError"),
        (
            "print('hi')\nfile_system.read(path='x')",
            "NameError: name 'file_system' is not defined\nprinted before it stopped:\nhi",
        ),
    ] {
        let run = run(program).await;
        let message = error(&run, codes::ERROR);
        assert!(message.contains(says), "{program}: {message}");
        assert!(message.contains("Traceback"), "{program}: {message}");
    }
}

#[tokio::test]
async fn a_tool_answering_megabytes_raises_a_catchable_limit_in_the_program() {
    let run = run_program(
        "try:\n    shop.catalogue()\n    r = 'taken'\nexcept ToolError as e:\n    r = str(e)\nr",
        CodeMode::new(),
        harness(),
        true,
    )
    .await;
    let text = value(&run).as_str().unwrap().to_owned();
    assert!(text.starts_with("E_CODE_LIMIT: the result is"), "{text}");
}

#[tokio::test]
async fn the_code_tool_called_outside_code_mode_s_step_is_refused() {
    // Without code mode, `code__run` is not in the catalog: the executor refuses it.
    let model = Arc::new(ScriptedModel::new([
        ModelResponse::calls([ToolCall::new("c1", "code__run", json!({"code": "1"}))]),
        ModelResponse::text("done"),
    ]));
    let registry = Arc::new(ToolRegistry::builder().tool(shop::TOOL).build().unwrap());
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("shopper", registry, model)
        .tools(["shop"])
        .state_dir(state.path())
        .build()
        .unwrap();
    let turn = agent.run_turn("go").await.unwrap();
    assert_eq!(
        turn.steps[0].results[0].error_code(),
        Some("E_TOOL_NOT_IN_CATALOG")
    );
}

#[tokio::test]
async fn with_a_journal_the_code_call_and_each_inner_call_are_journaled_once_and_read_back_clean() {
    use goondan_runtime::step::journal::{Journal, MemoryJournal, Record};
    let journal = Arc::new(MemoryJournal::new());
    let registry = Arc::new(ToolRegistry::builder().tool(shop::TOOL).build().unwrap());
    let state = tempfile::tempdir().unwrap();
    let agent = |model: ScriptedModel| {
        AgentInstance::builder("shopper", Arc::clone(&registry), Arc::new(model))
            .tools(["shop"])
            .code_mode(CodeMode::new())
            .journal(journal.clone())
            .state_dir(state.path())
            .build()
            .unwrap()
    };
    let first = agent(ScriptedModel::new([
        ModelResponse::calls([ToolCall::new(
            "c1",
            "code__run",
            json!({"code": "[shop.price(name=n) for n in shop.items()]"}),
        )]),
        ModelResponse::text("done"),
    ]));
    let turn = first.run_turn("prices?").await.unwrap();
    let output = turn.steps[0].results[0].output.clone().unwrap();
    assert_eq!(output["value"], json!([30, 45, 250, 80]));
    let records = journal.read().await.unwrap().records;
    let started: Vec<&str> = records
        .iter()
        .filter_map(|r| match r {
            Record::CallStarted { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(started, ["c1"]);
    // Each inner call once: its start with the program's arguments, then its result.
    let inner: Vec<(&str, usize, &str)> = records
        .iter()
        .filter_map(|r| match r {
            Record::InnerCallStarted { index, tool, .. } => {
                Some(("started", *index, tool.as_str()))
            }
            Record::InnerCallFinished {
                call_id,
                index,
                result,
                ..
            } if call_id == "c1" && result.status == ToolStatus::Ok => {
                Some(("finished", *index, &*result.tool_name))
            }
            _ => None,
        })
        .collect();
    let mut want = Vec::new();
    for (i, tool) in [
        "shop__items",
        "shop__price",
        "shop__price",
        "shop__price",
        "shop__price",
    ]
    .into_iter()
    .enumerate()
    {
        want.push(("started", i + 1, tool));
        want.push(("finished", i + 1, tool));
    }
    assert_eq!(inner, want);
    let pear = records.iter().find_map(|r| match r {
        Record::InnerCallStarted { index: 3, args, .. } => Some(args.clone()),
        _ => None,
    });
    assert_eq!(pear, Some(json!({"name": "pear"})));
    // A new process reads the journal back: nothing unfinished, nothing left over.
    let again = agent(ScriptedModel::new([]));
    assert!(again.resume().await.unwrap().is_none());
    assert!(
        again.journal_warnings().is_empty(),
        "{:?}",
        again.journal_warnings()
    );
    assert_eq!(again.conversation().len(), first.conversation().len());
}

/// The code tool's description, as the model was first shown it.
fn code_description(model: &ScriptedModel) -> String {
    let requests = model.requests();
    let item = requests[0]
        .catalog
        .get("code__run")
        .expect("the code tool is shown");
    item.description().unwrap_or("").to_owned()
}

/// `final_answer(text)` ends the program and the Turn: `text` is the Turn's answer, given
/// in the model's place without another request, journaled as an answer, and read back as
/// one; without `final_answer` offered, the name is not defined.
#[tokio::test]
async fn a_program_s_final_answer_ends_the_turn_without_asking_the_model_again() {
    use goondan_runtime::step::TurnEnd;
    use goondan_runtime::step::journal::{Journal, MemoryJournal, Record};
    let journal = Arc::new(MemoryJournal::new());
    let registry = Arc::new(ToolRegistry::builder().tool(shop::TOOL).build().unwrap());
    let state = tempfile::tempdir().unwrap();
    let agent = |model: Arc<ScriptedModel>, mode: CodeMode| {
        AgentInstance::builder("shopper", Arc::clone(&registry), model)
            .tools(["shop"])
            .code_mode(mode)
            .journal(journal.clone())
            .state_dir(state.path())
            .build()
            .unwrap()
    };
    let program =
        "n = len(shop.items())\nfinal_answer(str(n) + ' items in stock')\nshop.remove(name='fig')";
    let code_call =
        || ModelResponse::calls([ToolCall::new("c1", "code__run", json!({ "code": program }))]);
    let model = Arc::new(ScriptedModel::new([code_call()]));
    let first = agent(model.clone(), CodeMode::new());
    let shown = first.run_turn("how many?").await.unwrap();
    assert_eq!(shown.answer(), Some("4 items in stock"));
    assert_eq!(shown.end, TurnEnd::Answered);
    assert_eq!(model.requests().len(), 1, "the model was asked once");
    assert_eq!(shown.model_requests(), 1);
    let by = &shown.steps[1].assistant.metadata[goondan_runtime::step::ANSWERED_BY];
    assert_eq!(by, "code__run");
    let description = code_description(&model);
    assert!(description.contains("final_answer(text)"), "{description}");
    // The program stopped at its answer: `shop.remove` never ran.
    let output = shown.steps[0].results[0].output.clone().unwrap();
    assert_eq!(output["answer"], "4 items in stock");
    assert_eq!(output["calls"], 1);
    let records = journal.read().await.unwrap().records;
    let answered = records.iter().any(|r| {
        matches!(r, Record::ModelAnswered { assistant, .. }
            if assistant.content.as_deref() == Some("4 items in stock"))
    });
    assert!(answered, "{records:?}");
    // A new process reads the Turn back, answer included; nothing is left to resume.
    let again = agent(Arc::new(ScriptedModel::new([])), CodeMode::new());
    assert!(again.resume().await.unwrap().is_none());
    assert_eq!(again.conversation(), first.conversation());

    // Turned off, the model is not told of it and the name is not defined.
    let model = Arc::new(ScriptedModel::new([
        code_call(),
        ModelResponse::text("the program failed"),
    ]));
    let off = agent(model.clone(), CodeMode::new().final_answer(false));
    let turn = off.run_turn("how many?").await.unwrap();
    assert_eq!(turn.answer(), Some("the program failed"));
    let result = &turn.steps[0].results[0];
    assert_eq!(result.error_code(), Some(codes::ERROR), "{result:?}");
    let description = code_description(&model);
    assert!(!description.contains("final_answer"), "{description}");
}

/// A journal left by a process that stopped in the middle of the code call `c1` running
/// `program`: the Turn's input, the model's answer, the code call's start, then `inner`.
async fn stopped_in(
    program: &str,
    inner: Vec<goondan_runtime::step::journal::Record>,
) -> goondan_runtime::step::journal::MemoryJournal {
    use goondan_runtime::Message;
    use goondan_runtime::step::journal::{MemoryJournal, Record};
    let mut input = Message::assistant("u1", Some("go".into()), Vec::new());
    input.role = "user".into();
    let call = ToolCall::new("c1", "code__run", json!({ "code": program }));
    let (turn_id, message_id) = ("t1".to_owned(), "a1".to_owned());
    let mut records = vec![
        Record::TurnStarted {
            turn_id: turn_id.clone(),
            trace_id: "trace-1".into(),
            input,
        },
        Record::ModelAnswered {
            turn_id: turn_id.clone(),
            step: 0,
            assistant: Message::assistant(message_id.clone(), None, vec![call]),
            usage: None,
        },
        Record::CallAdmitted {
            turn_id: turn_id.clone(),
            message_id: message_id.clone(),
            call_id: "c1".into(),
        },
        Record::CallStarted {
            turn_id,
            message_id,
            call_id: "c1".into(),
        },
    ];
    records.extend(inner);
    let journal = MemoryJournal::new();
    goondan_runtime::step::journal::Journal::append(&journal, &records)
        .await
        .unwrap();
    journal
}

fn inner_started(index: usize, tool: &str, args: Value) -> goondan_runtime::step::journal::Record {
    goondan_runtime::step::journal::Record::InnerCallStarted {
        turn_id: "t1".into(),
        message_id: "a1".into(),
        call_id: "c1".into(),
        index,
        tool: tool.into(),
        args,
    }
}

fn inner_finished(
    index: usize,
    tool: &str,
    value: Value,
) -> goondan_runtime::step::journal::Record {
    goondan_runtime::step::journal::Record::InnerCallFinished {
        turn_id: "t1".into(),
        message_id: "a1".into(),
        call_id: "c1".into(),
        index,
        result: ToolCallResult::ok(format!("c1.{index}"), tool, value),
    }
}

/// Resumes the Turn `journal` left, with every `shop` tool and the harness's record of the
/// calls the executor ran; the model has only its final answer.
async fn resume(journal: &goondan_runtime::step::journal::MemoryJournal) -> Run {
    let model = Arc::new(ScriptedModel::new([ModelResponse::text("done")]));
    let registry = Arc::new(ToolRegistry::builder().tool(shop::TOOL).build().unwrap());
    let h = harness();
    let seen = h.seen.clone();
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("shopper", registry, model.clone())
        .tools(["shop"])
        .code_mode(CodeMode::new())
        .extension(h)
        .journal(Arc::new(journal.clone()))
        .state_dir(state.path())
        .build()
        .unwrap();
    let turn = agent
        .resume()
        .await
        .unwrap()
        .expect("the Turn was unfinished");
    assert!(
        agent.journal_warnings().is_empty(),
        "{:?}",
        agent.journal_warnings()
    );
    // The model was asked for the Step after the code call's, never for its own again.
    let steps: Vec<usize> = model.requests().iter().map(|r| r.step).collect();
    assert_eq!(steps, [1]);
    let result = turn.steps[0].results[0].clone();
    Run {
        model,
        result,
        seen,
    }
}

#[tokio::test]
async fn a_resumed_program_gets_journaled_results_without_running_them_and_an_interrupted_call_it_can_catch()
 {
    use goondan_runtime::step::journal::Record;
    let program = "out = [shop.price(name='fig')]\ntry:\n    out.append(shop.remove(name='fig'))\nexcept ToolError as e:\n    out.append(str(e).split(':')[0])\nout.append(shop.price(name='apple'))\nout";
    let journal = stopped_in(
        program,
        vec![
            inner_started(1, "shop__price", json!({"name": "fig"})),
            // Not what the tool answers today: the journal's answer is the one the program gets.
            inner_finished(1, "shop__price", json!(99)),
            inner_started(2, "shop__remove", json!({"name": "fig"})),
        ],
    )
    .await;
    let run = resume(&journal).await;
    assert_eq!(value(&run), &json!([99, "E_TOOL_INTERRUPTED", 30]));
    assert_eq!(run.result.output.as_ref().unwrap()["calls"], 3);
    // Only the call the journal did not have ran; the code call ran again under its own id.
    let seen: Vec<(String, String)> = run.seen.calls();
    assert_eq!(
        seen,
        [
            ("code__run".to_owned(), "c1".to_owned()),
            ("shop__price".to_owned(), "c1.3".to_owned())
        ]
    );
    // Nothing journaled twice: the code call's start and the first two inner starts are the
    // first process's; the interrupted call's result and the third call are new.
    let records = journal.records();
    let count = |f: &dyn Fn(&Record) -> bool| records.iter().filter(|r| f(r)).count();
    assert_eq!(count(&|r| matches!(r, Record::CallStarted { .. })), 1);
    for index in 1..=3 {
        assert_eq!(
            count(&|r| matches!(r, Record::InnerCallStarted { index: i, .. } if *i == index)),
            1,
            "the start of call {index}"
        );
        assert_eq!(
            count(&|r| matches!(r, Record::InnerCallFinished { index: i, .. } if *i == index)),
            1,
            "the result of call {index}"
        );
    }
    let interrupted = records.iter().find_map(|r| match r {
        Record::InnerCallFinished {
            index: 2, result, ..
        } => result.error_code(),
        _ => None,
    });
    assert_eq!(interrupted, Some("E_TOOL_INTERRUPTED"));
}

#[tokio::test]
async fn a_resumed_program_asking_another_call_than_its_journal_stops_as_interrupted_and_runs_nothing()
 {
    for (inner, says) in [
        (
            vec![
                inner_started(1, "shop__price", json!({"name": "pear"})),
                inner_finished(1, "shop__price", json!(45)),
            ],
            "call 1 is now `shop__price` with other arguments",
        ),
        (
            vec![inner_started(1, "shop__remove", json!({"name": "fig"}))],
            "call 1 is now `shop__price`, where the journal has `shop__remove`",
        ),
        (
            vec![
                inner_started(1, "shop__price", json!({"name": "fig"})),
                inner_finished(1, "shop__price", json!(80)),
                inner_started(2, "shop__remove", json!({"name": "fig"})),
            ],
            "it now ends after 1 calls, where the journal has 2",
        ),
    ] {
        let journal = stopped_in("shop.price(name='fig')", inner).await;
        let run = resume(&journal).await;
        let message = error(&run, "E_TOOL_INTERRUPTED");
        assert!(message.contains(says), "{message}");
        assert!(
            message.contains("may or may not have taken effect"),
            "{message}"
        );
        let names: Vec<String> = run.seen.calls().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["code__run"], "no inner call ran");
    }
}

#[tokio::test]
async fn the_inner_calls_failures_count_against_the_retry_budget() {
    use goondan_runtime::calls::retry::RetryBudget;
    use goondan_runtime::step::StepError;
    let program = "for i in range(3):\n    try:\n        shop.price(nme='fig')\n    except ToolError:\n        pass";
    let model = Arc::new(ScriptedModel::new([
        ModelResponse::calls([ToolCall::new("c1", "code__run", json!({ "code": program }))]),
        ModelResponse::text("done"),
    ]));
    let registry = Arc::new(ToolRegistry::builder().tool(shop::TOOL).build().unwrap());
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("shopper", registry, model)
        .tools(["shop"])
        .code_mode(CodeMode::new())
        .retry_budget(RetryBudget::per_tool(1))
        .state_dir(state.path())
        .build()
        .unwrap();
    // The second failure is one more than the budget: the Turn stops after the Step.
    let stopped = agent.run_turn("go").await;
    assert!(
        matches!(&stopped, Err(StepError::RetryBudget { tool, failures: 2, .. }) if tool == "shop__price"),
        "{stopped:?}"
    );
}

/// A worker that is a shell script (as if the worker process broke): it reads the program's
/// line, then says what the script says.
struct Script(&'static str);

impl WorkerLauncher for Script {
    fn launch(&self, _worker: WorkerCommand) -> Result<LaunchedWorker, String> {
        Ok(LaunchedWorker {
            command: WorkerCommand {
                program: "/bin/sh".into(),
                args: vec!["-c".into(), format!("read _; {}", self.0).into()],
                env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            },
            guard: Box::new(()),
        })
    }
}

async fn run_in(worker: Script, mode: CodeMode) -> Run {
    run_program("shop.items()", mode.worker(worker), harness(), false).await
}

#[tokio::test]
async fn a_worker_that_sends_garbage_is_e_code_error_that_keeps_what_was_printed_and_called() {
    let script = Script(
        r#"echo '{"type":"print","text":"hello"}'; echo '{"type":"call","tool":"shop__items","args":{}}'; read _; echo 'not a message'; exec sleep 30"#,
    );
    let run = run_in(script, CodeMode::new()).await;
    let message = error(&run, codes::ERROR);
    assert!(message.contains("does not read"), "{message}");
    assert!(message.contains("hello"), "{message}");
    assert!(
        message.contains("tool calls made: 1 (shop__items ok)"),
        "{message}"
    );
    // The agent went on: the model got the error and answered.
    assert_eq!(run.model.requests().len(), 2);
}

#[tokio::test]
async fn a_worker_that_sends_an_endless_line_is_e_code_limit() {
    let script = Script("head -c 20000000 /dev/zero | tr '\\0' x; sleep 30");
    let run = run_in(script, CodeMode::new()).await;
    let message = error(&run, codes::LIMIT);
    assert!(message.contains("more than"), "{message}");
}

#[tokio::test]
async fn a_worker_that_dies_mid_program_is_e_code_error_with_how_it_ended() {
    let script =
        Script(r#"echo '{"type":"print","text":"partial"}'; echo 'last words' >&2; kill -9 $$"#);
    let run = run_in(script, CodeMode::new()).await;
    let message = error(&run, codes::ERROR);
    assert!(
        message.contains("ended before the program did"),
        "{message}"
    );
    assert!(message.contains("signal: 9"), "{message}");
    assert!(message.contains("it said: last words"), "{message}");
    assert!(message.contains("partial"), "{message}");
}

#[tokio::test]
async fn a_worker_is_held_to_the_calls_output_and_time_limits_on_the_host_s_side() {
    let calls = Script(
        r#"while true; do echo '{"type":"call","tool":"shop__items","args":{}}'; read _ || exit; done"#,
    );
    let run = run_in(calls, CodeMode::new().max_calls(2)).await;
    let message = error(&run, codes::LIMIT);
    assert!(message.contains("tool calls limit"), "{message}");
    assert!(message.contains("tool calls made: 2"), "{message}");

    let prints =
        Script(r#"while true; do echo '{"type":"print","text":"0123456789"}' || exit; done"#);
    let run = run_in(prints, CodeMode::new().output_limit(100)).await;
    let message = error(&run, codes::LIMIT);
    assert!(message.contains("output limit"), "{message}");
    assert!(message.contains(&"0123456789".repeat(10)), "{message}");

    let silent = Script("exec sleep 30");
    let started = std::time::Instant::now();
    let run = run_in(
        silent,
        CodeMode::new().time_limit(Duration::from_millis(100)),
    )
    .await;
    let message = error(&run, codes::LIMIT);
    assert!(message.contains("time limit"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[tokio::test]
async fn a_worker_that_cannot_start_is_e_code_error_and_nothing_runs_in_its_place() {
    struct Refuses;
    impl WorkerLauncher for Refuses {
        fn launch(&self, _worker: WorkerCommand) -> Result<LaunchedWorker, String> {
            Err("no sandbox here".into())
        }
    }
    let run = run_program(
        "shop.items()",
        CodeMode::new().worker(Refuses),
        harness(),
        false,
    )
    .await;
    let message = error(&run, codes::ERROR);
    assert!(message.contains("no sandbox here"), "{message}");
    assert!(run.seen.calls().iter().all(|(tool, _)| tool == "code__run"));
}

#[tokio::test]
async fn a_worker_that_stops_reading_is_stopped_at_its_time_limit() {
    let script =
        Script(r#"echo '{"type":"call","tool":"shop__catalogue","args":{}}'; exec sleep 30"#);
    // The catalogue's megabytes fill the pipe the worker no longer reads.
    let mode = CodeMode::new()
        .time_limit(Duration::from_millis(100))
        .result_limit(8 << 20)
        .worker(script);
    let run = run_program("shop.catalogue()", mode, harness(), true).await;
    let message = error(&run, codes::LIMIT);
    assert!(message.contains("time limit"), "{message}");
    assert!(message.contains("tool calls made: 1"), "{message}");
}

/// What a program prints goes to the instance's progress sink as it prints it, under the
/// code call's id, one report per line, between its calls.
#[tokio::test]
async fn a_program_s_prints_are_reported_as_progress_as_they_happen() {
    use goondan_runtime::tools::context::{Progress, ProgressSink};

    /// Every report, and how many calls the harness had seen when it came.
    struct Reports(Seen, Mutex<Vec<(String, String, usize)>>);
    impl ProgressSink for Reports {
        fn report(&self, call: &str, progress: Progress) {
            let calls = self.0.calls().len();
            self.1.lock().unwrap().push((
                call.to_owned(),
                progress.message.unwrap_or_default(),
                calls,
            ));
        }
    }

    let program = "print('first')\nn = len(shop.items())\nprint('items:', n)\nn";
    let model = Arc::new(ScriptedModel::new([
        ModelResponse::calls([ToolCall::new("c1", "code__run", json!({ "code": program }))]),
        ModelResponse::text("done"),
    ]));
    let registry = Arc::new(ToolRegistry::builder().tool(shop::TOOL).build().unwrap());
    let harness = harness();
    let reports = Arc::new(Reports(harness.seen.clone(), Mutex::new(Vec::new())));
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("shopper", registry, model)
        .tools(["shop"])
        .code_mode(CodeMode::new())
        .extension(harness)
        .progress(reports.clone())
        .state_dir(state.path())
        .build()
        .unwrap();
    let turn = agent.run_turn("go").await.unwrap();
    assert_eq!(
        turn.steps[0].results[0].output.as_ref().unwrap()["value"],
        4
    );
    let reports = reports.1.lock().unwrap().clone();
    assert_eq!(
        reports,
        [
            // Before the program's call (the code call alone was seen), then after it.
            ("c1".to_owned(), "first".to_owned(), 1),
            ("c1".to_owned(), "items: 4".to_owned(), 2),
        ]
    );
}
