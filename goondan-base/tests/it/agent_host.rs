//! `goondan agent-host` on a real `nats-server`: the bundle's agents placed on each host run
//! there as processes of the `goondan` program, reached from the entry side over NATS.

use goondan_test_peers::nats;

use std::process::Stdio;
use std::time::Duration;

use goondan_runtime::agents::orchestrator::nats::{NatsOptions, NatsSwarm};
use goondan_runtime::agents::orchestrator::{SwarmSpec, codes};
use goondan_runtime::tools::agent::{AgentEvent, AgentRuntime, RequestOptions};
use tokio::io::{AsyncBufReadExt, BufReader};

const BUNDLE: &str = "\
apiVersion: goondan.ai/v1
kind: Agent
metadata: {name: planner}
---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {name: coder}
---
apiVersion: goondan.ai/v1
kind: Swarm
metadata: {name: team}
spec: {entryAgent: \"Agent/planner\", agents: [\"Agent/planner\", \"Agent/coder\"]}
";

async fn host(url: &str, bundle: &std::path::Path, agents: &str) -> tokio::process::Child {
    host_with(url, bundle, agents, &[]).await
}

/// `goondan agent-host` with the extra connection flags `flags`, once it serves.
async fn host_with(
    url: &str,
    bundle: &std::path::Path,
    agents: &str,
    flags: &[&str],
) -> tokio::process::Child {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_goondan"))
        .args([
            "agent-host",
            "--nats",
            url,
            "--swarm",
            "team",
            "--agents",
            agents,
        ])
        .args(flags)
        .arg("--bundle")
        .arg(bundle)
        .current_dir(bundle.parent().unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    tokio::time::timeout(Duration::from_secs(20), reader.read_line(&mut line))
        .await
        .expect("the host did not start within 20 s")
        .unwrap();
    assert!(line.starts_with("agent-host "), "{line}");
    assert!(
        line.contains(&format!("serving {agents} of swarm `team`")),
        "{line}"
    );
    child
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_host_serves_the_bundles_agents_placed_on_it_over_nats() {
    tokio::time::timeout(Duration::from_secs(90), async {
        let server = nats::NatsServer::start();
        let dir = tempfile::tempdir().unwrap();
        let bundle = dir.path().join("goondan.yaml");
        std::fs::write(&bundle, BUNDLE).unwrap();
        let _planner_host = host(&server.url, &bundle, "planner").await;
        let _coder_host = host(&server.url, &bundle, "coder").await;
        let swarm = SwarmSpec::new("team", "planner")
            .agent("planner")
            .agent("coder");
        let entry = NatsSwarm::connect(&NatsOptions::new(&server.url), swarm)
            .await
            .unwrap();
        // The bundle gives the agents no model: the agent process on the host runs the Turn
        // and answers why it could not finish it (a bundle agent answered, over NATS).
        for agent in ["coder", "planner"] {
            let e = entry
                .request(
                    agent,
                    AgentEvent::new("agent.request", "hi".into()),
                    RequestOptions::default(),
                )
                .await
                .unwrap_err();
            assert_eq!(
                e.code(),
                goondan_runtime::agents::swarm::TURN_FAILED,
                "{e:?}"
            );
            assert!(e.message().contains(&format!("agent `{agent}`")), "{e:?}");
        }
        let e = entry
            .request(
                "nobody",
                AgentEvent::new("agent.request", "hi".into()),
                RequestOptions::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), codes::UNKNOWN_TARGET);
    })
    .await
    .expect("the test did not finish in time");
}

#[test]
fn agent_host_refuses_an_agent_the_swarm_does_not_define() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("goondan.yaml");
    std::fs::write(&bundle, BUNDLE).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_goondan"))
        .args([
            "agent-host",
            "--nats",
            "nats://127.0.0.1:1",
            "--swarm",
            "team",
            "--agents",
            "ghost",
        ])
        .arg("--bundle")
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("agent `ghost` is not defined in swarm `team`"),
        "{err}"
    );
}

/// `goondan run --nats URL --input TEXT BUNDLE`, as a process.
async fn run_over_nats(url: &str, bundle: &std::path::Path) -> std::process::Output {
    run_over_nats_with(url, bundle, &[]).await
}

/// [`run_over_nats`] with the extra connection flags `flags`.
async fn run_over_nats_with(
    url: &str,
    bundle: &std::path::Path,
    flags: &[&str],
) -> std::process::Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_goondan"))
        .args(["run", "--nats", url, "--input", "hi"])
        .args(flags)
        .arg(bundle)
        .current_dir(bundle.parent().unwrap())
        .output()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goondan_run_nats_is_the_entry_side_of_a_swarm_served_by_hosts() {
    tokio::time::timeout(Duration::from_secs(90), async {
        let server = nats::NatsServer::start();
        let dir = tempfile::tempdir().unwrap();
        let bundle = dir.path().join("goondan.yaml");
        std::fs::write(&bundle, BUNDLE).unwrap();

        // No host serves the swarm yet: the request fails at once, from NATS, not locally.
        let out = run_over_nats(&server.url, &bundle).await;
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(codes::NO_HOST), "{err}");
        assert!(
            !dir.path().join(".goondan").exists(),
            "the entry side runs no agent here"
        );

        // A host serves the entry agent: its Turn runs there (and, the bundle giving it no
        // model, answers why it could not finish): the error on stderr, exit status 1.
        let _planner_host = host(&server.url, &bundle, "planner").await;
        let out = run_over_nats(&server.url, &bundle).await;
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(goondan_runtime::agents::swarm::TURN_FAILED),
            "{err}"
        );
        assert!(err.contains("agent `planner`"), "{err}");
        assert!(err.starts_with("error: "), "{err}");
    })
    .await
    .expect("the test did not finish in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_token_flag_reaches_the_server_from_agent_host_and_run() {
    tokio::time::timeout(Duration::from_secs(90), async {
        let server = nats::NatsServer::start_with("127.0.0.1", &["--auth", "cli-t0ken"]);
        let dir = tempfile::tempdir().unwrap();
        let bundle = dir.path().join("goondan.yaml");
        std::fs::write(&bundle, BUNDLE).unwrap();
        let token = ["--nats-token", "cli-t0ken"];
        let _planner_host = host_with(&server.url, &bundle, "planner", &token).await;
        // The entry side with the token reaches the host (whose Turn fails: no model).
        let out = run_over_nats_with(&server.url, &bundle, &token).await;
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(goondan_runtime::agents::swarm::TURN_FAILED),
            "{err}"
        );
        // A wrong token: refused by the server, and said so.
        let out = run_over_nats_with(&server.url, &bundle, &["--nats-token", "wrong"]).await;
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("authorization violation"), "{err}");
        assert!(err.contains("token"), "{err}");
    })
    .await
    .expect("the test did not finish in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_host_with_state_finishes_the_turn_its_killed_predecessor_left() {
    a_killed_hosts_turn_is_finished_by_the_next_host(false).await;
}

/// Exactly once across hosts: the journal on JetStream, two hosts with
/// nothing on disk in common; the second takes the instance over once the killed host's lease
/// expires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_journal_on_jetstream_another_host_finishes_the_turn_of_a_killed_host() {
    a_killed_hosts_turn_is_finished_by_the_next_host(true).await;
}

/// A host is killed (SIGKILL, its agent processes with it) while a call of a Turn runs; the
/// next host, given the same journal (`--state DIR` on one machine, or `--journal nats://` on
/// JetStream), finishes that Turn before the next one without asking the model again.
async fn a_killed_hosts_turn_is_finished_by_the_next_host(jetstream: bool) {
    use crate::run_support::{KEY, bundle_with, call, text, tool_results};
    use goondan_test_peers::replay::ReplayServer;
    use serde_json::json;

    tokio::time::timeout(Duration::from_secs(120), async {
        let server = if jetstream {
            nats::NatsServer::start_jetstream()
        } else {
            nats::NatsServer::start()
        };
        let model = ReplayServer::start([
            // The first host: the model asks for a long wait, and the host dies during it.
            call("call_w", "wait__seconds", &json!({"seconds": 4})),
            // The second host: the resumed Turn, after the wait ran again (it is read-only)...
            text(&["Waited."]),
            // ...then the new request's Turn.
            text(&["Here again."]),
        ])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let bundle = bundle_with(dir.path(), &model, &["wait"], Some("team"));
        let state = dir.path().join("host-state");
        let start_host = |host: &str| {
            let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_goondan"));
            child
                .args(["agent-host", "--nats", &server.url, "--swarm", "team"])
                .arg("--bundle")
                .arg(&bundle);
            if jetstream {
                // Each host in a directory of its own, as on machines of their own.
                let workdir = dir.path().join(host);
                std::fs::create_dir_all(&workdir).unwrap();
                child
                    .args(["--journal", &server.url, "--journal-lease", "2s"])
                    .arg("--workdir")
                    .arg(workdir);
            } else {
                child.arg("--state").arg(&state);
            }
            child
                .env("GOONDAN_TEST_KEY", KEY)
                .current_dir(dir.path())
                .stdout(Stdio::piped())
                .process_group(0)
                .kill_on_drop(true);
            child.spawn().unwrap()
        };
        let wait_serving = |child: &mut tokio::process::Child| {
            let stdout = child.stdout.take().unwrap();
            async move {
                let mut line = String::new();
                BufReader::new(stdout).read_line(&mut line).await.unwrap();
                assert!(line.starts_with("agent-host "), "{line}");
            }
        };
        let mut first = start_host("first");
        wait_serving(&mut first).await;
        // The entry side, as `goondan run --nats`; it waits in vain for the first Turn.
        let entry = tokio::process::Command::new(env!("CARGO_BIN_EXE_goondan"))
            .args(["run", "--nats", &server.url, "--input", "hi"])
            .arg(&bundle)
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        while model.requests().is_empty() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the model was never asked"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The wait has started (its start is journaled before the handler runs): kill the
        // host and its agent processes.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let pgid = nix::unistd::Pid::from_raw(i32::try_from(first.id().unwrap()).unwrap());
        nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL).unwrap();
        let _ = first.wait().await;
        drop(entry);

        let mut second = start_host("second");
        wait_serving(&mut second).await;
        let out = run_over_nats(&server.url, &bundle).await;
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "Here again.\n");
        let seen = model.requests();
        assert_eq!(
            seen.len(),
            3,
            "the model's answer before the crash was not asked again"
        );
        let results = tool_results(&seen[1].body);
        assert_eq!(results.len(), 1, "{}", seen[1].body);
        assert!(results[0].contains("waitedSeconds"), "{}", results[0]);
        assert_eq!(
            crate::run_support::users(&seen[2].body),
            ["hi", "hi"],
            "the first Turn's input is kept"
        );
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(i32::try_from(second.id().unwrap()).unwrap()),
            nix::sys::signal::Signal::SIGKILL,
        );
    })
    .await
    .expect("the test did not finish in time");
}
