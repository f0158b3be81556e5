//! Tasks over the base tools, run two ways: the classic loop (one model round trip per
//! ground-truth call, then the answer) and code mode (the turn's calls as one program that
//! ends with the answer, `final_answer`). Each task starts from a workdir of known files; every call of either way goes
//! through the executor to the real base tools (`file-system`, `text-transform`, `json-query`,
//! `bash` in its sandbox), and each run records the calls (name, arguments, result) and the
//! workdir's files after the last turn, which the two ways must share. Included with `#[path]`
//! by `tests/it/code_mode_tasks.rs` and `benches/code_mode.rs`.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use goondan_runtime::code::{CodeMode, TOOL_NAME};
use goondan_runtime::extension::{Extension, ExtensionApi, ExtensionError, PipelineMiddleware};
use goondan_runtime::step::{AgentInstance, Model, ModelResponse};
use goondan_runtime::{CallContext, ToolRegistry, from_fn};
use serde_json::{Value, json};

/// The base tools the tasks use: the Agent's `spec.tools`.
pub(crate) const TOOLS: [&str; 4] = ["file-system", "text-transform", "json-query", "bash"];

/// One ground-truth call: a catalog name and its arguments.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) name: &'static str,
    pub(crate) arguments: Value,
}

/// One turn: what the user says, and the calls that answer it.
#[derive(Debug, Clone)]
pub(crate) struct Turn {
    pub(crate) user: &'static str,
    pub(crate) calls: Vec<Call>,
}

/// A task: the workdir's files at the start, and its turns.
#[derive(Debug, Clone)]
pub(crate) struct Task {
    pub(crate) id: &'static str,
    pub(crate) files: &'static [(&'static str, &'static str)],
    pub(crate) turns: Vec<Turn>,
}

#[path = "../../../goondan-runtime/tests/support/scripted_turns.rs"]
mod scripted;

pub(crate) use scripted::{Outcome, Way};

fn call(name: &'static str, arguments: Value) -> Call {
    Call { name, arguments }
}

const CONFIG: &str = "{\n  \"name\": \"svc\",\n  \"version\": \"1.2.3\",\n  \"port\": 8080\n}\n";
const CONFIG_BUMPED: &str =
    "{\n  \"name\": \"svc\",\n  \"version\": \"1.3.0\",\n  \"port\": 8080\n}\n";
const LOG: &str = "INFO start\nERROR disk full\nINFO retry\nERROR disk still full\nINFO done\n";
const ORDERS: &str = r#"{"orders": [{"id": "A-100", "total": 30}, {"id": "A-101", "total": 45}, {"id": "A-102", "total": 250}]}"#;
const PEOPLE: &str = "ada,1815\ngrace,1906\nkatherine,1918";
const MAIN: &str = "oldname: the main file\nrun oldname --fast\n";
const MAIN_RENAMED: &str = "newname: the main file\nrun newname --fast\n";

/// The task set: every turn makes three calls or more, each a call a model would make for
/// what the user asks, the later ones using what the earlier ones answered.
pub(crate) fn tasks() -> Vec<Task> {
    vec![
        Task {
            id: "notes-index",
            files: &[
                ("notes/alpha.md", "# Alpha\nfirst steps\n"),
                ("notes/beta.md", "# Beta\nsecond thoughts\n"),
            ],
            turns: vec![Turn {
                user: "Write notes/INDEX.md listing each note's title and first line.",
                calls: vec![
                    call("file-system__list", json!({"path": "notes"})),
                    call("file-system__read", json!({"path": "notes/alpha.md"})),
                    call("file-system__read", json!({"path": "notes/beta.md"})),
                    call(
                        "file-system__write",
                        json!({"path": "notes/INDEX.md",
                            "content": "- Alpha: first steps\n- Beta: second thoughts\n"}),
                    ),
                ],
            }],
        },
        Task {
            id: "config-bump",
            files: &[("config.json", CONFIG)],
            turns: vec![Turn {
                user: "Bump the service's minor version in config.json.",
                calls: vec![
                    call("file-system__read", json!({"path": "config.json"})),
                    call(
                        "json-query__pick",
                        json!({"data": CONFIG, "keys": ["name", "version"]}),
                    ),
                    call(
                        "text-transform__replace",
                        json!({"text": CONFIG, "search": "\"version\": \"1.2.3\"",
                            "replacement": "\"version\": \"1.3.0\""}),
                    ),
                    call(
                        "file-system__write",
                        json!({"path": "config.json", "content": CONFIG_BUMPED}),
                    ),
                ],
            }],
        },
        Task {
            id: "log-errors",
            files: &[("logs/app.log", LOG)],
            turns: vec![
                Turn {
                    user: "Collect the errors of logs/app.log into report/errors.txt.",
                    calls: vec![
                        call(
                            "bash__exec",
                            json!({"command": "grep -c ERROR logs/app.log"}),
                        ),
                        call("bash__exec", json!({"command": "grep ERROR logs/app.log"})),
                        call("file-system__mkdir", json!({"path": "report"})),
                        call(
                            "file-system__write",
                            json!({"path": "report/errors.txt",
                                "content": "2 errors\nERROR disk full\nERROR disk still full\n"}),
                        ),
                    ],
                },
                Turn {
                    user: "Make an upper-case copy of it, report/ERRORS.txt.",
                    calls: vec![
                        call("file-system__read", json!({"path": "report/errors.txt"})),
                        call(
                            "text-transform__case",
                            json!({"text": "2 errors\nERROR disk full\nERROR disk still full\n",
                                "to": "upper"}),
                        ),
                        call(
                            "file-system__write",
                            json!({"path": "report/ERRORS.txt",
                                "content": "2 ERRORS\nERROR DISK FULL\nERROR DISK STILL FULL\n"}),
                        ),
                    ],
                },
            ],
        },
        Task {
            id: "orders-summary",
            files: &[("orders.json", ORDERS)],
            turns: vec![Turn {
                user: "Summarise orders.json in summary.txt: how many orders, and the first one.",
                calls: vec![
                    call("file-system__read", json!({"path": "orders.json"})),
                    call(
                        "json-query__count",
                        json!({"data": ORDERS, "path": "orders"}),
                    ),
                    call(
                        "json-query__query",
                        json!({"data": ORDERS, "path": "orders[0].id"}),
                    ),
                    call(
                        "file-system__write",
                        json!({"path": "summary.txt", "content": "3 orders, the first A-100\n"}),
                    ),
                ],
            }],
        },
        Task {
            id: "people-names",
            files: &[("data/people.csv", PEOPLE)],
            turns: vec![Turn {
                user: "Write the names of data/people.csv, one line, separated by '; '.",
                calls: vec![
                    call("file-system__read", json!({"path": "data/people.csv"})),
                    call(
                        "text-transform__split",
                        json!({"text": PEOPLE, "delimiter": "\n"}),
                    ),
                    call(
                        "text-transform__join",
                        json!({"parts": ["ada", "grace", "katherine"], "delimiter": "; "}),
                    ),
                    call(
                        "file-system__write",
                        json!({"path": "data/names.txt", "content": "ada; grace; katherine"}),
                    ),
                ],
            }],
        },
        Task {
            id: "rename-project",
            files: &[("src/main.txt", MAIN), ("src/notes.txt", "nothing here\n")],
            turns: vec![
                Turn {
                    user: "Rename the project from oldname to newname in src/.",
                    calls: vec![
                        call(
                            "file-system__list",
                            json!({"path": "src", "recursive": true}),
                        ),
                        call("bash__exec", json!({"command": "grep -rl oldname src"})),
                        call("file-system__read", json!({"path": "src/main.txt"})),
                        call(
                            "text-transform__replace",
                            json!({"text": MAIN, "search": "oldname",
                                "replacement": "newname", "all": true}),
                        ),
                        call(
                            "file-system__write",
                            json!({"path": "src/main.txt", "content": MAIN_RENAMED}),
                        ),
                    ],
                },
                Turn {
                    user: "Keep a copy of src/main.txt in archive/, and check nothing says oldname.",
                    calls: vec![
                        call("file-system__mkdir", json!({"path": "archive"})),
                        call(
                            "bash__exec",
                            json!({"command": "cp src/main.txt archive/main.txt"}),
                        ),
                        call(
                            "bash__exec",
                            json!({"command": "grep -rc oldname src archive || true"}),
                        ),
                    ],
                },
            ],
        },
    ]
}

/// What the model answers to every request of the task, in order (`scripted_turns.rs`): the
/// function of `file-system__read` is `file_system.read` (the code tool's name mapping: `-`
/// becomes `_`, `__` a dot).
pub(crate) fn script(task: &Task, way: Way) -> Vec<ModelResponse> {
    let turns = task.turns.iter().map(|turn| {
        turn.calls
            .iter()
            .map(|call| {
                let (resource, export) = call.name.split_once("__").unwrap_or(("", call.name));
                scripted::Known {
                    name: call.name.to_owned(),
                    function: format!("{}.{export}", resource.replace('-', "_")),
                    arguments: &call.arguments,
                }
            })
            .collect()
    });
    scripted::script(turns, way)
}

/// Records every call of a base tool the executor runs: the classic loop's and a program's
/// alike (the code call itself is not a base tool's).
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Value>>>);

impl Extension for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }

    fn register(&self, api: &mut ExtensionApi) -> Result<(), ExtensionError> {
        let calls = Arc::clone(&self.0);
        let record = from_fn(move |call: CallContext, next| {
            let calls = Arc::clone(&calls);
            async move {
                let name = call.tool_name().to_owned();
                let args = Value::Object(call.args.clone());
                let result = next.run(call).await;
                if name != TOOL_NAME {
                    let answer = match &result.error {
                        Some(e) => json!({"error": e.code()}),
                        None => result.output.clone().unwrap_or(Value::Null),
                    };
                    if let Ok(mut calls) = calls.lock() {
                        calls.push(json!({"name": name, "args": args, "result": answer}));
                    }
                }
                result
            }
        });
        api.pipeline
            .register(PipelineMiddleware::tool_call(record), i32::MIN);
        Ok(())
    }
}

/// Every file under `dir`, by its path relative to it, with its text.
fn files(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(rel) = path.strip_prefix(dir) {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                out.insert(rel.display().to_string(), text);
            }
        }
    }
    out
}

/// What a result holds that differs from one run to the next: the workdir's own path, and
/// how long a command took.
fn steady(value: &mut Value, workdir: &str) {
    match value {
        Value::String(s) if s.contains(workdir) => *s = s.replace(workdir, "{workdir}"),
        Value::Array(items) => items.iter_mut().for_each(|v| steady(v, workdir)),
        Value::Object(map) => {
            map.remove("durationMs");
            map.values_mut().for_each(|v| steady(v, workdir));
        }
        _ => {}
    }
}

/// Runs every turn of `task` the `way` given, with `model` answering (it must answer as
/// [`script`] does), in a fresh workdir holding the task's files.
pub(crate) async fn run(task: &Task, way: Way, model: Arc<dyn Model>) -> Outcome {
    let state = tempfile::tempdir().unwrap_or_else(|e| panic!("a temporary folder: {e}"));
    let workdir = state.path().join("workspace");
    for (path, text) in task.files {
        let path = workdir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{}: {e}", task.id));
        }
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", task.id));
    }
    let registry = ToolRegistry::builder()
        .tools(goondan_base::tools())
        .build()
        .unwrap_or_else(|e| panic!("the base tools: {e}"));
    let recorder = Recorder::default();
    let mut builder = AgentInstance::builder("base", Arc::new(registry), model)
        .tools(TOOLS)
        .state_dir(state.path())
        .extension(recorder.clone());
    if way == Way::Code {
        builder = builder.code_mode(CodeMode::new().tools_callable_directly(false));
    }
    let agent = builder
        .build()
        .unwrap_or_else(|e| panic!("the agent of {}: {e}", task.id));
    let label = format!("{} ({way:?})", task.id);
    let played = scripted::play(&agent, task.turns.iter().map(|t| t.user), &label).await;
    let calls = recorder.0.lock().map(|c| c.clone()).unwrap_or_default();
    let answers = &played.answers;
    let mut record = json!({"calls": calls, "answers": answers, "files": files(agent.workdir())});
    steady(&mut record, &agent.workdir().display().to_string());
    played.outcome(record)
}
