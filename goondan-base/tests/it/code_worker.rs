//! Code mode's worker processes in the sandbox (issue 52): each program runs in a `goondan`
//! process confined by the kernel, so a program past its memory limit, or a worker killed
//! mid-program, ends its code call with a structured error and the agent goes on; and the
//! worker has no view of the host's files.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use goondan_base::code_worker::CodeSandbox;
use goondan_runtime::code::worker::{LaunchedWorker, Unconfined, WorkerCommand, WorkerLauncher};
use goondan_runtime::code::{CodeMode, codes};
use goondan_runtime::prelude::*;
use goondan_runtime::step::{AgentInstance, ModelResponse, ScriptedModel, TurnOutcome};
use serde_json::{Value, json};

/// What the test programs call.
#[tool(name = "probe")]
pub mod probe {
    /// Greets `name`.
    pub fn hello(name: String) -> String {
        format!("hello {name}")
    }

    /// Kills, with SIGKILL, every process whose command line holds `marker`.
    pub fn kill(marker: String) -> usize {
        let mut killed = 0;
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            if cmdline
                .split(|b| *b == 0)
                .any(|arg| arg == marker.as_bytes())
            {
                let pid = entry.file_name().to_string_lossy().into_owned();
                let status = std::process::Command::new("kill")
                    .args(["-KILL", &pid])
                    .status();
                killed += usize::from(status.is_ok_and(|s| s.success()));
            }
        }
        killed
    }
}

/// The sandboxed worker of this test: the `goondan` program, each worker marked by an extra
/// argument that the kill tool looks for.
struct Marked {
    sandbox: CodeSandbox,
    marker: String,
}

impl WorkerLauncher for Marked {
    fn launch(&self, mut worker: WorkerCommand) -> Result<LaunchedWorker, String> {
        worker.args.push(self.marker.clone().into());
        self.sandbox.launch(worker)
    }
}

/// The `goondan` program as the worker, unconfined.
struct Goondan;

impl WorkerLauncher for Goondan {
    fn launch(&self, mut worker: WorkerCommand) -> Result<LaunchedWorker, String> {
        worker.program = env!("CARGO_BIN_EXE_goondan").into();
        Unconfined.launch(worker)
    }
}

fn sandbox() -> CodeSandbox {
    CodeSandbox::new().program(env!("CARGO_BIN_EXE_goondan"))
}

/// One Turn whose model runs each of `programs` as a code call, one Step each, then answers.
async fn turn(mode: CodeMode, programs: &[&str]) -> TurnOutcome {
    let mut responses: Vec<ModelResponse> = programs
        .iter()
        .enumerate()
        .map(|(n, code)| {
            ModelResponse::calls([ToolCall::new(
                format!("c{n}"),
                "code__run",
                json!({ "code": code }),
            )])
        })
        .collect();
    responses.push(ModelResponse::text("done"));
    let model = Arc::new(ScriptedModel::new(responses));
    let registry = Arc::new(ToolRegistry::builder().tool(probe::TOOL).build().unwrap());
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("coder", registry, model)
        .tools(["probe"])
        .code_mode(mode)
        .state_dir(state.path())
        .build()
        .unwrap();
    agent.run_turn("go").await.unwrap()
}

fn error(turn: &TurnOutcome, step: usize, code: &str) -> String {
    let result = &turn.steps[step].results[0];
    assert_eq!(result.error_code(), Some(code), "{result:?}");
    result.error.as_ref().unwrap().message().to_owned()
}

fn value(turn: &TurnOutcome, step: usize) -> Value {
    let result = &turn.steps[step].results[0];
    match &result.output {
        Some(output) => output["value"].clone(),
        None => panic!("the program failed: {:?}", result.error),
    }
}

#[tokio::test]
async fn code_a_program_runs_in_a_sandboxed_worker_and_calls_the_tools() {
    let mode = CodeMode::new().worker(sandbox());
    let turn = turn(
        mode,
        &["print('start')\n[probe.hello(name=n) for n in ['a', 'b']]"],
    )
    .await;
    assert_eq!(value(&turn, 0), json!(["hello a", "hello b"]));
    let output = turn.steps[0].results[0].output.clone().unwrap();
    assert_eq!(output["printed"], json!("start\n"));
    assert_eq!(output["calls"], json!(2));
}

/// A program in a sandboxed worker ends the Turn with its answer (`final_answer`): the
/// worker's message reaches the host, and the model is asked once.
#[tokio::test]
async fn code_a_worker_s_final_answer_ends_the_turn_in_the_model_s_place() {
    let code = "final_answer(probe.hello(name='w') + '!')";
    let model = Arc::new(ScriptedModel::new([ModelResponse::calls([ToolCall::new(
        "c0",
        "code__run",
        json!({ "code": code }),
    )])]));
    let registry = Arc::new(ToolRegistry::builder().tool(probe::TOOL).build().unwrap());
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("coder", registry, model.clone())
        .tools(["probe"])
        .code_mode(CodeMode::new().worker(sandbox()))
        .state_dir(state.path())
        .build()
        .unwrap();
    let turn = agent.run_turn("go").await.unwrap();
    assert_eq!(turn.answer(), Some("hello w!"));
    assert_eq!(turn.model_requests(), 1);
    assert_eq!(model.remaining(), 0);
}

#[tokio::test]
async fn code_a_program_past_the_memory_limit_in_small_steps_is_e_code_limit_and_the_next_runs() {
    // The interpreter's own bound is per allocation: each step here is small, and only the
    // kernel's limit on the worker's cgroup stops the list.
    let mode = CodeMode::new()
        .memory_limit(1 << 30)
        .time_limit(Duration::from_secs(60))
        .worker(sandbox().memory(64 << 20).unwrap());
    let turn = turn(
        mode,
        &[
            "print('growing')\nprobe.hello(name='x')\na = []\nwhile True:\n    a.append('x' * 1000 + str(len(a)))",
            "probe.hello(name='again')",
        ],
    )
    .await;
    let message = error(&turn, 0, codes::LIMIT);
    assert!(message.contains("memory limit"), "{message}");
    assert!(message.contains("kernel ended it"), "{message}");
    assert!(message.contains("growing"), "{message}");
    assert!(
        message.contains("tool calls made: 1 (probe__hello ok)"),
        "{message}"
    );
    assert_eq!(value(&turn, 1), json!("hello again"));
}

#[tokio::test]
async fn code_a_worker_killed_mid_program_is_e_code_error_and_the_next_program_works() {
    let marker = format!("code-worker-test-{}", std::process::id());
    let mode = CodeMode::new().worker(Marked {
        sandbox: sandbox(),
        marker: marker.clone(),
    });
    let first = format!("print('before')\nprobe.kill(marker='{marker}')\nprint('after')\n1");
    let turn = turn(mode, &[&first, "probe.hello(name='again')"]).await;
    let message = error(&turn, 0, codes::ERROR);
    assert!(
        message.contains("ended before the program did"),
        "{message}"
    );
    assert!(message.contains("before"), "{message}");
    assert!(!message.contains("after"), "{message}");
    assert!(
        message.contains("tool calls made: 1 (probe__kill ok)"),
        "{message}"
    );
    assert_eq!(value(&turn, 1), json!("hello again"));
}

#[test]
fn code_the_worker_s_sandbox_shows_no_host_file_and_writes_nowhere() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "the-outside-secret-4711").unwrap();
    let written = outside.path().join("written");
    // Whatever runs as the worker (here a shell, as if the interpreter had a way out) is
    // confined the same way.
    let script = format!(
        "cat {secret}; echo x > {written}; echo x > /tmp/code-worker-probe; echo x > ./here; echo done",
        secret = secret.display(),
        written = written.display(),
    );
    let launched = CodeSandbox::new()
        .launch(WorkerCommand {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            env: Vec::new(),
        })
        .unwrap();
    let output = Command::new(&launched.command.program)
        .args(&launched.command.args)
        .env_clear()
        .envs(launched.command.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stdout.contains("done"), "the shell ran: {stdout} {stderr}");
    assert!(!stdout.contains("the-outside-secret"), "{stdout}");
    assert!(!written.exists(), "{stderr}");
    assert!(!std::path::Path::new("/tmp/code-worker-probe").exists());
    drop(launched);
}

/// The three routes of a program (a thread, an unconfined worker, a sandboxed worker) give the
/// same answers; it prints what a program costs on each (`--nocapture`), the figures of
/// `docs/benchmarks.md` ("Where a program runs").
#[tokio::test]
async fn code_every_route_gives_the_same_answers_and_prints_what_a_program_costs() {
    const PROGRAMS: usize = 10;
    let programs = vec!["probe.hello(name='x')"; PROGRAMS];
    let mut figures = Vec::new();
    for (route, mode) in [
        ("thread", CodeMode::new()),
        ("unconfined worker", CodeMode::new().worker(Goondan)),
        ("sandboxed worker", CodeMode::new().worker(sandbox())),
    ] {
        let started = Instant::now();
        let turn = turn(mode, &programs).await;
        let per_program = started.elapsed() / u32::try_from(PROGRAMS).unwrap();
        for step in 0..PROGRAMS {
            assert_eq!(value(&turn, step), json!("hello x"));
        }
        figures.push(format!("{route}: {per_program:?} per program"));
    }
    eprintln!(
        "code mode, one turn of {PROGRAMS} programs: {}",
        figures.join(", ")
    );
}
