//! A crash during a handoff: `goondan run` and its agent processes killed
//! (SIGKILL, the whole process group) while the agent asked by `agents__request` runs a call.
//! The next `goondan run` on the same state directory resumes both Turns: the caller's handoff
//! is not sent again blindly (the model is told it was interrupted), the asked agent finishes
//! its Turn before its next one, and no message of either conversation is lost.
//! Also the Orchestrator's respawn: the agent process alone killed in a session, and the
//! respawned process finishing the Turn it left.

use std::process::Stdio;
use std::time::Duration;

use goondan_test_peers::replay::ReplayServer;
use serde_json::json;

use crate::run_support::{KEY, call, goondan, text, tool_results, users};

/// `lead` hands work to `helper` (`agents__request`); `helper` waits. Each thinks with a model
/// of its own, so each model's answers come in its own order.
/// With `nats`, the Swarm's `policy.journal` keeps the journals on that server's JetStream.
fn bundle(
    dir: &std::path::Path,
    lead: &ReplayServer,
    helper: &ReplayServer,
    nats: Option<&str>,
) -> std::path::PathBuf {
    let model = |name: &str, server: &ReplayServer| {
        format!(
            "apiVersion: goondan.ai/v1\nkind: Model\nmetadata: {{name: {name}}}\nspec:\n  provider: openai\n  model: gpt-test\n  endpoint: \"{}\"\n  apiKey: {{valueFrom: {{env: GOONDAN_TEST_KEY}}}}\n",
            server.url("/v1")
        )
    };
    let agent = |name: &str, tool: &str| {
        format!(
            "apiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {{name: {name}}}\nspec:\n  modelConfig: {{modelRef: \"Model/{name}-model\"}}\n  tools:\n    - ref: {{kind: Tool, name: {tool}, package: \"@goondan/base\"}}\n"
        )
    };
    let yaml = [
        model("lead-model", lead),
        model("helper-model", helper),
        agent("lead", "agents"),
        agent("helper", "wait"),
        format!(
            "apiVersion: goondan.ai/v1\nkind: Swarm\nmetadata: {{name: team}}\nspec:\n  entryAgent: Agent/lead\n  agents: [Agent/lead, Agent/helper]\n{}",
            nats.map(|url| format!("  policy:\n    journal: {{nats: \"{url}\", lease: 2s}}\n"))
                .unwrap_or_default()
        ),
    ]
    .join("---\n");
    let file = dir.join("goondan.yaml");
    std::fs::write(&file, yaml).unwrap();
    file
}

/// `goondan run` of `bundle` with `input`.
fn run(bundle: &std::path::Path, input: &str, dir: &std::path::Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(goondan());
    cmd.arg("run")
        .arg(bundle)
        .args(["--input", input])
        .env("GOONDAN_TEST_KEY", KEY)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_during_a_handoff_interrupts_the_caller_and_the_asked_agent_finishes_its_turn() {
    crash_during_a_handoff(None).await;
}

/// The same on JetStream, chosen in the bundle (`policy.journal`): the second run takes each
/// instance over once the killed run's leases expire; nothing is kept in the state directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_during_a_handoff_on_jetstream_is_resumed_the_same_way() {
    let server = goondan_test_peers::nats::NatsServer::start_jetstream();
    crash_during_a_handoff(Some(&server.url)).await;
}

async fn crash_during_a_handoff(nats: Option<&str>) {
    tokio::time::timeout(Duration::from_secs(120), async {
        let lead = ReplayServer::start([
            // The first run: hand the work over; the crash comes while helper waits.
            call(
                "h1",
                "agents__request",
                &json!({"target": "helper", "input": "wait 2s for me"}),
            ),
            // The second run: the resumed Turn, told the handoff was interrupted...
            text(&["The helper was cut off."]),
            // ...then the new Turn asks helper again and reports its answer.
            call(
                "h2",
                "agents__request",
                &json!({"target": "helper", "input": "are you back?"}),
            ),
            text(&["Helper is back."]),
        ])
        .await;
        let helper = ReplayServer::start([
            call("w1", "wait__seconds", &json!({"seconds": 2})),
            // The resumed Turn, after the wait (read-only) ran again.
            text(&["Waited."]),
            // The second request's Turn.
            text(&["Back."]),
        ])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let file = bundle(dir.path(), &lead, &helper, nats);

        let first = run(&file, "get helper to wait", dir.path())
            .spawn()
            .unwrap();
        helper.wait_for_requests(1).await;
        // helper's wait has started (its start is journaled before the handler runs).
        tokio::time::sleep(Duration::from_millis(500)).await;
        let pgid = nix::unistd::Pid::from_raw(i32::try_from(first.id().unwrap()).unwrap());
        nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL).unwrap();
        let killed = first.wait_with_output().await.unwrap();
        assert!(!killed.status.success());
        assert_eq!((lead.requests().len(), helper.requests().len()), (1, 1));

        let out = run(&file, "is helper back?", dir.path())
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Helper is back."),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );

        let (lead_seen, helper_seen) = (lead.requests(), helper.requests());
        assert_eq!(
            lead_seen.len(),
            4,
            "lead's first answer was not asked for again"
        );
        assert_eq!(
            helper_seen.len(),
            3,
            "helper's first answer was not asked for again"
        );
        // The handoff was not sent again on its own: lead's model was told it was interrupted.
        let told = tool_results(&lead_seen[1].body);
        assert_eq!(told.len(), 1, "{}", lead_seen[1].body);
        assert!(
            told[0].contains("E_TOOL_INTERRUPTED") && told[0].contains("`agents__request`"),
            "{}",
            told[0]
        );
        // helper finished its Turn (the wait ran again: it is read-only) before the next one.
        let waited = tool_results(&helper_seen[1].body);
        assert_eq!(waited.len(), 1, "{}", helper_seen[1].body);
        assert!(waited[0].contains("waitedSeconds"), "{}", waited[0]);
        assert_eq!(
            users(&helper_seen[2].body),
            ["wait 2s for me", "are you back?"]
        );
        // Nothing of lead's conversation was lost, and helper's answer reached it.
        assert_eq!(
            users(&lead_seen[3].body),
            ["get helper to wait", "is helper back?"]
        );
        let answered = tool_results(&lead_seen[3].body);
        assert_eq!(answered.len(), 2, "{}", lead_seen[3].body);
        assert!(answered[1].contains("Back."), "{}", answered[1]);
        let journals = dir.path().join(".goondan/journal");
        let files = std::fs::read_dir(&journals).map_or(0, |d| d.count());
        if nats.is_some() {
            assert_eq!(
                files,
                0,
                "the journals are on JetStream, not in {}",
                journals.display()
            );
        } else {
            assert!(
                files >= 2,
                "one journal per agent in {}",
                journals.display()
            );
        }
    })
    .await
    .expect("the test did not finish in time");
}

/// The processes whose parent is `parent`.
fn children_of(parent: i32) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (name) state ppid ...`: the name may hold spaces, so read after its `)`.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<i32>().ok());
        if ppid == Some(parent) {
            found.push(pid);
        }
    }
    found
}

/// The Orchestrator's respawn: in a `goondan run` session, the agent process
/// alone is killed (SIGKILL) while a call runs; the session reports the crash, and the next
/// input reaches a respawned agent process that first finishes the Turn the crash cut short
/// (the model's answer not asked for again, the read-only wait run again), then answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_respawned_agent_process_finishes_the_turn_its_killed_predecessor_left() {
    use crate::run_support::bundle_with;
    use expectrl::Session;

    let server = ReplayServer::start([
        call("w1", "wait__seconds", &json!({"seconds": 3})),
        text(&["Waited."]),
        text(&["Second answer."]),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = bundle_with(dir.path(), &server, &["wait"], None);
    tokio::task::block_in_place(|| {
        let mut command = std::process::Command::new(goondan());
        command
            .arg("run")
            .arg(&file)
            .env("GOONDAN_TEST_KEY", KEY)
            .current_dir(dir.path());
        let mut p = Session::spawn(command).unwrap();
        p.set_expect_timeout(Some(Duration::from_secs(30)));
        p.expect("> ").unwrap();
        p.send_line("wait a little").unwrap();
        let start = std::time::Instant::now();
        while server.requests().is_empty() {
            assert!(start.elapsed() < Duration::from_secs(30), "never asked");
            std::thread::sleep(Duration::from_millis(20));
        }
        // The wait has started: kill the agent process, not the session.
        std::thread::sleep(Duration::from_millis(500));
        let run = p.get_process().pid().as_raw();
        let agents = children_of(run);
        assert_eq!(
            agents.len(),
            1,
            "one agent process under the session: {agents:?}"
        );
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(agents[0]),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        let seen = p.expect("> ").unwrap();
        let seen = String::from_utf8_lossy(seen.before()).into_owned();
        assert!(
            seen.contains("`assistant/default` restarted")
                && seen.contains("ended before answering; it is being restarted"),
            "{seen}"
        );
        p.send_line("and now?").unwrap();
        p.expect("Second answer.").unwrap();
        p.expect("> ").unwrap();
        let respawned = children_of(run);
        assert!(
            respawned.len() == 1 && respawned != agents,
            "a new agent process: {respawned:?}"
        );
    });
    let seen = server.requests();
    assert_eq!(
        seen.len(),
        3,
        "the answer before the crash was not asked for again"
    );
    let waited = tool_results(&seen[1].body);
    assert_eq!(waited.len(), 1, "{}", seen[1].body);
    assert!(waited[0].contains("waitedSeconds"), "{}", waited[0]);
    assert_eq!(users(&seen[2].body), ["wait a little", "and now?"]);
}
