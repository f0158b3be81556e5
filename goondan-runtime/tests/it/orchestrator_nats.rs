//! The Orchestrator across machines, on a real `nats-server` (HO-1..8 over NATS).
//!
//! One test body, two transports: each body of [`both!`] runs once against a local
//! [`Orchestrator`] (agent processes over Unix sockets) and once against a swarm on NATS whose
//! agent `a` runs on one host process and `b`, `c` on another, reached through a
//! [`NatsSwarm`]. Hosts are `goondan-test-agent-host nats-host ...` processes (see
//! `agent_hosts/orchestrator.rs`). Then what only a swarm across machines has: a host killed
//! with `kill -9`, two swarms on one server, credentials, and two hosts in two network
//! namespaces. The tests of what only the local transport has (Unix-socket frames, the local
//! Orchestrator's own shutdown) are in `orchestrator.rs`.

use crate::orchestration;
use goondan_test_peers::nats;

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use goondan_runtime::agents::orchestrator::nats::{AgentHost, NatsAuth, NatsOptions, NatsSwarm};
use goondan_runtime::agents::orchestrator::{
    Orchestrator, OrchestratorConfig, ProcessConfig, SwarmSpec, codes,
};
use goondan_runtime::tools::agent::{AgentRuntime, RequestOptions};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use self::nats::NatsServer;
use self::orchestration::{HOST_BIN, bounded, ev, opts, start_local, swarm_named};

/// A host process serving some agents of a swarm on NATS; killed (`SIGKILL`) when dropped.
struct Host {
    child: tokio::process::Child,
    id: String,
    _dir: tempfile::TempDir,
}

impl Host {
    /// Starts `goondan-test-agent-host nats-host URL SWARM AGENTS [USER PASS]`, optionally
    /// under `ip netns exec NS`, and waits for its `ready` line.
    async fn start(
        netns: Option<&str>,
        url: &str,
        swarm: &str,
        agents: &str,
        creds: &[&str],
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = match netns {
            Some(ns) => {
                let mut c = tokio::process::Command::new("ip");
                c.args(["netns", "exec", ns, HOST_BIN]);
                c
            }
            None => tokio::process::Command::new(HOST_BIN),
        };
        cmd.args(["nats-host", url, swarm, agents])
            .args(creds)
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        let mut reader = BufReader::new(stdout);
        let read = reader.read_line(&mut line);
        tokio::time::timeout(Duration::from_secs(20), read)
            .await
            .expect("the host did not get ready within 20 s")
            .unwrap();
        let id = line
            .strip_prefix("ready ")
            .unwrap_or_else(|| panic!("the host said `{line}` instead of `ready ID`"))
            .trim()
            .to_owned();
        Self {
            child,
            id,
            _dir: dir,
        }
    }

    /// `kill -9`.
    async fn kill_9(&mut self) {
        self.child.start_kill().unwrap();
        let _ = self.child.wait().await;
    }
}

/// A swarm to test against, with what keeps it alive.
struct Fixture {
    rt: Arc<dyn AgentRuntime>,
    local: Option<Orchestrator>,
    _server: Option<NatsServer>,
    _hosts: Vec<Host>,
    _dir: Option<tempfile::TempDir>,
}

impl Fixture {
    /// Agent processes of a local Orchestrator.
    async fn local() -> Self {
        Self::local_of(swarm_named("test-swarm")).await
    }

    /// Agent processes of a local Orchestrator of `swarm`.
    async fn local_of(swarm: SwarmSpec) -> Self {
        let (orch, dir) = start_local(swarm, None).await;
        Self {
            rt: Arc::new(orch.clone()),
            local: Some(orch),
            _server: None,
            _hosts: Vec::new(),
            _dir: Some(dir),
        }
    }

    /// A swarm on NATS: `a` on one host, `b` and `c` on another.
    async fn nats() -> Self {
        let server = NatsServer::start();
        let h1 = Host::start(None, &server.url, "test-swarm", "a", &[]).await;
        let h2 = Host::start(None, &server.url, "test-swarm", "b,c", &[]).await;
        assert_ne!(h1.id, h2.id);
        let entry = NatsSwarm::connect(&NatsOptions::new(&server.url), swarm_named("test-swarm"))
            .await
            .unwrap();
        Self {
            rt: Arc::new(entry),
            local: None,
            _server: Some(server),
            _hosts: vec![h1, h2],
            _dir: None,
        }
    }

    async fn stop(self) {
        if let Some(orch) = &self.local {
            orch.shutdown(Duration::from_secs(5)).await;
        }
    }
}

/// One test body, two transports: `name::local` and `name::nats`.
macro_rules! both {
    ($(#[$doc:meta])* $name:ident, $body:path) => {
        $(#[$doc])*
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn local() {
                bounded(90, async {
                    let f = Fixture::local().await;
                    $body(Arc::clone(&f.rt), f.local.clone()).await;
                    f.stop().await;
                })
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn nats() {
                bounded(90, async {
                    let f = Fixture::nats().await;
                    $body(Arc::clone(&f.rt), f.local.clone()).await;
                    f.stop().await;
                })
                .await;
            }
        }
    };
}

async fn handoff(rt: Arc<dyn AgentRuntime>, local: Option<Orchestrator>) {
    if let Some(orch) = &local {
        assert!(orch.list(true).await.unwrap().is_empty());
    }
    let task = json!({"op": "ask", "target": "b", "input": {"op": "echo", "value": 42}});
    let r = rt.request("a", ev(task), opts(None)).await.unwrap();
    let out = r.response.unwrap();
    assert_eq!(r.target, "a");
    assert_eq!(out["via"], "a");
    assert_eq!(out["answer"]["agent"], "b");
    assert_eq!(out["answer"]["value"], 42);
    assert_eq!(out["answer"]["from"], "a/default");
    // Three processes: this one, a, b.
    let (pa, pb) = (
        out["pid"].as_u64().unwrap(),
        out["answer"]["pid"].as_u64().unwrap(),
    );
    assert_ne!(pa, pb);
    assert_ne!(pa, u64::from(std::process::id()));
    if let Some(orch) = &local {
        assert_eq!(orch.pid("a", "default"), Some(pa as u32));
        assert_eq!(orch.pid("b", "default"), Some(pb as u32));
        // Both were spawned on first use (HO-6), b by a.
        let all = orch.list(true).await.unwrap();
        let owners: Vec<_> = all
            .iter()
            .map(|i| (i.target.as_str(), i.owner_agent.as_str()))
            .collect();
        assert!(owners.contains(&("a", "orchestrator")), "{owners:?}");
        assert!(owners.contains(&("b", "a")), "{owners:?}");
    }
    // The instance stays: a second request reaches the same process (HO-6 spawned it once).
    let again = rt
        .request(
            "a",
            ev(json!({"op": "ask", "target": "b",
        "input": {"op": "echo"}})),
            opts(None),
        )
        .await
        .unwrap()
        .response
        .unwrap();
    assert_eq!(again["answer"]["pid"], out["answer"]["pid"]);
}

both!(
    /// A request to `a`, which hands work to `b` (on another host over NATS).
    ho_1_ho_6_handoff_spawns_the_target_on_first_request,
    handoff
);

async fn trace(rt: Arc<dyn AgentRuntime>, _local: Option<Orchestrator>) {
    let options = RequestOptions {
        trace_id: Some("trace-abc".into()),
        turn_id: Some("turn-1".into()),
        ..RequestOptions::default()
    };
    let r = rt
        .request("b", ev(json!({"op": "echo"})), options)
        .await
        .unwrap();
    let out = r.response.unwrap();
    assert_eq!(out["correlationId"], r.correlation_id.as_str());
    assert_eq!(out["traceId"], "trace-abc");
    let task = json!({"op": "ask", "target": "b", "input": {"op": "echo"}});
    let out = rt
        .request("a", ev(task), opts(None))
        .await
        .unwrap()
        .response
        .unwrap();
    assert_eq!(out["correlationId"], out["answer"]["correlationId"]);
}

both!(
    /// Trace ids and correlation ids cross the transport.
    ho_3_correlation_id_and_trace_reach_the_target,
    trace
);

async fn errors(rt: Arc<dyn AgentRuntime>, _local: Option<Orchestrator>) {
    let e = rt
        .request("ghost", ev(json!({})), opts(None))
        .await
        .unwrap_err();
    assert_eq!(e.code(), codes::UNKNOWN_TARGET, "{e:?}");
    assert!(e.suggestion().unwrap().contains("a, b, c"), "{e:?}");
    let started = Instant::now();
    let e = rt
        .request("b", ev(json!({"op": "sleep", "ms": 5000})), opts(Some(300)))
        .await
        .unwrap_err();
    assert_eq!(e.code(), codes::TIMEOUT, "{e:?}");
    assert!(e.suggestion().is_some());
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // A nested timeout, from a's request to b, comes back as a's error.
    let task = json!({"op": "ask", "target": "b", "timeoutMs": 200,
        "input": {"op": "sleep", "ms": 5000}});
    let e = rt
        .request("a", ev(task), opts(Some(20000)))
        .await
        .unwrap_err();
    assert_eq!(e.code(), codes::TIMEOUT, "{e:?}");
}

both!(
    /// Unknown targets and timeouts are structured errors on both transports.
    ag_1_ho_4_unknown_target_and_timeout_are_structured_errors,
    errors
);

async fn cycle(rt: Arc<dyn AgentRuntime>, local: Option<Orchestrator>) {
    let task = json!({"op": "ask", "target": "b",
        "input": {"op": "ask", "target": "a", "input": {"op": "echo"}}});
    let started = Instant::now();
    let e = rt
        .request("a", ev(task), opts(Some(20000)))
        .await
        .unwrap_err();
    assert_eq!(e.code(), codes::CYCLE, "{e:?}");
    assert!(
        e.message().contains("a/default -> b/default -> a/default"),
        "{e:?}"
    );
    assert!(e.suggestion().unwrap().contains("agents__send"), "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    let task = json!({"op": "ask", "target": "b", "input": {"op": "ask", "target": "c",
        "input": {"op": "ask", "target": "a", "input": {"op": "echo"}}}});
    let e = rt
        .request("a", ev(task), opts(Some(20000)))
        .await
        .unwrap_err();
    assert_eq!(e.code(), codes::CYCLE, "{e:?}");
    assert!(
        e.message().contains("b/default -> c/default -> a/default"),
        "{e:?}"
    );
    // Asking itself is a cycle too.
    let e = rt
        .request(
            "a",
            ev(json!({"op": "ask", "target": "a", "input": {}})),
            opts(None),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), codes::CYCLE, "{e:?}");
    assert!(local.is_none_or(|orch| orch.in_flight() == 0));
}

both!(
    /// A cycle across hosts is refused, not deadlocked: the chain travels with the request.
    ho_4_a_cycle_is_refused_not_deadlocked,
    cycle
);

async fn hundred(rt: Arc<dyn AgentRuntime>, local: Option<Orchestrator>) {
    let calls = (0..100u64).map(|i| {
        let rt = Arc::clone(&rt);
        async move {
            let target = ["a", "b", "c"][(i % 3) as usize];
            let input = if i % 2 == 0 {
                json!({"op": "echo", "value": i})
            } else {
                // Half of them hop once more (across hosts on NATS).
                let next = if target == "a" { "b" } else { "a" };
                json!({"op": "ask", "target": next, "input": {"op": "echo", "value": i}})
            };
            let r = rt
                .request(target, ev(input), opts(Some(30000)))
                .await
                .unwrap();
            (i, target, r)
        }
    });
    let mut ids = std::collections::HashSet::new();
    for (i, target, r) in futures_util::future::join_all(calls).await {
        assert!(ids.insert(r.correlation_id.clone()));
        let out = r.response.unwrap();
        if i % 2 == 0 {
            assert_eq!(out["value"], i);
            assert_eq!(out["agent"], target);
            assert_eq!(out["correlationId"], r.correlation_id.as_str());
        } else {
            assert_eq!(out["via"], target);
            assert_eq!(out["answer"]["value"], i);
        }
    }
    assert!(local.is_none_or(|orch| orch.in_flight() == 0));
}

both!(
    /// 100 concurrent requests across agents (and hosts) keep their correlation.
    ho_7_hundred_concurrent_requests_keep_correlation,
    hundred
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_4_kill_9_of_a_host_mid_request_fails_at_once_and_another_host_takes_the_next() {
    bounded(90, async {
        let server = NatsServer::start();
        let mut first = Host::start(None, &server.url, "s", "b", &[]).await;
        let entry = NatsSwarm::connect(&NatsOptions::new(&server.url), swarm_named("s"))
            .await
            .unwrap();
        let warm = entry
            .request("b", ev(json!({"op": "echo"})), opts(None))
            .await
            .unwrap();
        let first_pid = warm.response.unwrap()["pid"].clone();
        // A long request, taken by the only host; then a second host joins the queue group.
        let slow = {
            let entry = entry.clone();
            tokio::spawn(async move {
                let started = Instant::now();
                let r = entry
                    .request(
                        "b",
                        ev(json!({"op": "sleep", "ms": 20000})),
                        opts(Some(30000)),
                    )
                    .await;
                (r, started.elapsed())
            })
        };
        tokio::time::sleep(Duration::from_millis(500)).await;
        let _second = Host::start(None, &server.url, "s", "b", &[]).await;
        let killed_at = Instant::now();
        first.kill_9().await;
        let (r, _) = slow.await.unwrap();
        let failed_after = killed_at.elapsed();
        let e = r.unwrap_err();
        assert_eq!(e.code(), codes::CRASHED, "{e:?}");
        assert!(e.message().contains(&first.id), "{e:?}");
        assert!(e.suggestion().is_some());
        assert!(
            failed_after < Duration::from_secs(3),
            "failed {failed_after:?} after the kill; the timeout was 30 s"
        );
        // The next request goes to the host still serving b.
        let next = entry
            .request("b", ev(json!({"op": "echo"})), opts(Some(10000)))
            .await
            .unwrap();
        assert_ne!(next.response.unwrap()["pid"], first_pid);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_4_a_request_no_host_serves_fails_at_once_with_e_agent_no_host() {
    bounded(60, async {
        let server = NatsServer::start();
        let _host = Host::start(None, &server.url, "s", "a", &[]).await;
        let entry = NatsSwarm::connect(&NatsOptions::new(&server.url), swarm_named("s"))
            .await
            .unwrap();
        let started = Instant::now();
        let e = entry
            .request("c", ev(json!({"op": "echo"})), opts(Some(30000)))
            .await
            .unwrap_err();
        assert_eq!(e.code(), codes::NO_HOST, "{e:?}");
        assert!(started.elapsed() < Duration::from_secs(2));
        // From an agent, too: a asks c.
        let task = json!({"op": "ask", "target": "c", "input": {"op": "echo"}});
        let e = entry
            .request("a", ev(task), opts(Some(30000)))
            .await
            .unwrap_err();
        assert_eq!(e.code(), codes::NO_HOST, "{e:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_swarms_on_one_server_never_see_each_others_messages() {
    bounded(60, async {
        let server = NatsServer::start();
        let _one = Host::start(None, &server.url, "one", "a,b,c", &[]).await;
        let _two = Host::start(None, &server.url, "two", "a,b,c", &[]).await;
        let nats = NatsOptions::new(&server.url);
        let one = NatsSwarm::connect(&nats, swarm_named("one")).await.unwrap();
        let two = NatsSwarm::connect(&nats, swarm_named("two")).await.unwrap();
        let three = NatsSwarm::connect(&nats, swarm_named("three"))
            .await
            .unwrap();
        let p1 = one
            .request("b", ev(json!({"op": "echo"})), opts(None))
            .await
            .unwrap();
        let p2 = two
            .request("b", ev(json!({"op": "echo"})), opts(None))
            .await
            .unwrap();
        // Each swarm's b is its own host's process.
        assert_ne!(p1.response.unwrap()["pid"], p2.response.unwrap()["pid"]);
        // A swarm without hosts reaches none of the others' agents.
        let e = three
            .request("b", ev(json!({"op": "echo"})), opts(None))
            .await
            .unwrap_err();
        assert_eq!(e.code(), codes::NO_HOST, "{e:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_are_passed_through_and_a_wrong_password_is_a_clear_error() {
    bounded(60, async {
        let server =
            NatsServer::start_with("127.0.0.1", &["--user", "goondan", "--pass", "s3cret"]);
        let _host = Host::start(None, &server.url, "s", "a,b,c", &["goondan", "s3cret"]).await;
        let good = NatsOptions::new(&server.url).auth(NatsAuth::UserPassword {
            user: "goondan".into(),
            password: "s3cret".into(),
        });
        let entry = NatsSwarm::connect(&good, swarm_named("s")).await.unwrap();
        let r = entry
            .request("b", ev(json!({"op": "echo", "value": 1})), opts(None))
            .await
            .unwrap();
        assert_eq!(r.response.unwrap()["value"], 1);
        let bad = NatsOptions::new(&server.url).auth(NatsAuth::UserPassword {
            user: "goondan".into(),
            password: "wrong".into(),
        });
        let e = NatsSwarm::connect(&bad, swarm_named("s"))
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("authorization violation"), "{e}");
        assert!(e.contains("check the user and password"), "{e}");
        assert!(e.contains(&server.url), "{e}");
        let none = NatsSwarm::connect(&NatsOptions::new(&server.url), swarm_named("s")).await;
        assert!(none.is_err());
    })
    .await;
}

/// A network namespace joined to the root namespace by a veth pair: `root_ip` on the root side,
/// `ns_ip` inside, the root side as its default route. Deleted (with its veth pair) on drop.
struct Netns {
    name: String,
    root_ip: String,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = std::process::Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run `ip`: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Netns {
    /// Namespace `tag` of this test process, on the /30 subnet `10.a.b.(4*slot)`.
    fn create(tag: &str, slot: u32) -> Result<Self, String> {
        let pid = std::process::id();
        let name = format!("goondan-{pid}-{tag}");
        let (root_if, ns_if) = (format!("gr{pid}{tag}"), format!("gn{pid}{tag}"));
        let (a, b) = (200 + pid % 50, (pid / 50) % 250);
        let root_ip = format!("10.{a}.{b}.{}", slot * 4 + 1);
        let ns_ip = format!("10.{a}.{b}.{}", slot * 4 + 2);
        ip(&["netns", "add", &name])?;
        let ns = Self { name, root_ip };
        let n = ns.name.as_str();
        ip(&[
            "link", "add", &root_if, "type", "veth", "peer", "name", &ns_if,
        ])?;
        ip(&["link", "set", &ns_if, "netns", n])?;
        ip(&[
            "addr",
            "add",
            &format!("{}/30", ns.root_ip),
            "dev",
            &root_if,
        ])?;
        ip(&["link", "set", &root_if, "up"])?;
        ip(&[
            "-n",
            n,
            "addr",
            "add",
            &format!("{ns_ip}/30"),
            "dev",
            &ns_if,
        ])?;
        ip(&["-n", n, "link", "set", &ns_if, "up"])?;
        ip(&["-n", n, "link", "set", "lo", "up"])?;
        ip(&["-n", n, "route", "add", "default", "via", &ns.root_ip])?;
        Ok(ns)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting the namespace deletes its end of the veth pair, and so the pair.
        let _ = ip(&["netns", "delete", &self.name]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_1_two_hosts_in_two_network_namespaces_hand_work_to_each_other() {
    let made = Netns::create("a", 0).and_then(|one| Ok((one, Netns::create("b", 1)?)));
    let (one, two) = match made {
        Ok(pair) => pair,
        Err(why) => {
            eprintln!("network namespaces are forbidden on this machine: {why}");
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "network namespaces are needed in CI: {why}"
            );
            return;
        }
    };
    bounded(90, async {
        // The server listens on the root side of the first pair only; the second namespace
        // reaches it through its default route.
        let server = NatsServer::start_with(&one.root_ip, &[]);
        let _h1 = Host::start(Some(&one.name), &server.url, "s", "a,c", &[]).await;
        let _h2 = Host::start(Some(&two.name), &server.url, "s", "b", &[]).await;
        let entry = NatsSwarm::connect(&NatsOptions::new(&server.url), swarm_named("s"))
            .await
            .unwrap();
        // a (first namespace) asks b (second), which asks c (first again).
        let task = json!({"op": "ask", "target": "b", "input": {"op": "ask", "target": "c",
            "input": {"op": "echo", "value": "across"}}});
        let out = entry
            .request("a", ev(task), opts(Some(30000)))
            .await
            .unwrap()
            .response
            .unwrap();
        assert_eq!(out["via"], "a");
        assert_eq!(out["answer"]["via"], "b");
        assert_eq!(out["answer"]["answer"]["agent"], "c");
        assert_eq!(out["answer"]["answer"]["value"], "across");
        assert_eq!(out["answer"]["answer"]["from"], "b/default");
    })
    .await;
    drop((one, two));
}

async fn send_spawns(rt: Arc<dyn AgentRuntime>, _local: Option<Orchestrator>) {
    // The marker is an absolute path: c writes it wherever its host runs.
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("touched");
    let task = json!({"op": "send", "target": "c", "input": {"op": "touch", "path": marker}});
    let out = rt
        .request("a", ev(task), opts(None))
        .await
        .unwrap()
        .response
        .unwrap();
    assert_eq!(out["accepted"], true);
    assert_eq!(out["target"], "c");
    assert!(out["eventId"].as_str().is_some());
    let deadline = Instant::now() + Duration::from_secs(20);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "c never handled the event");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "c");
}

both!(
    /// `agents__send` from an agent is fire-and-forget and starts its target (on another host
    /// over NATS).
    ag_2_send_is_fire_and_forget_and_spawns_the_target,
    send_spawns
);

fn kill_9(pid: &Value) {
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.as_u64().unwrap().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

async fn kill_9_agent(rt: Arc<dyn AgentRuntime>, local: Option<Orchestrator>) {
    let warm = rt
        .request("b", ev(json!({"op": "echo"})), opts(None))
        .await
        .unwrap();
    let old = warm.response.unwrap()["pid"].clone();
    let caller = Arc::clone(&rt);
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let task = json!({"op": "ask", "target": "b", "timeoutMs": 30000,
        "input": {"op": "sleep", "ms": 30000, "started": started}});
    let pending = tokio::spawn(async move {
        let r = caller.request("a", ev(task), opts(Some(40000))).await;
        (r, Instant::now())
    });
    // Until b is working on a's request.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !started.exists() {
        assert!(Instant::now() < deadline, "a's request never reached b");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let killed_at = Instant::now();
    kill_9(&old);
    let (r, failed_at) = pending.await.unwrap();
    let e = r.unwrap_err();
    assert_eq!(e.code(), codes::CRASHED, "{e:?}");
    assert!(e.suggestion().is_some());
    let took = failed_at - killed_at;
    assert!(took < Duration::from_secs(10), "{took:?} after the kill");
    // b's host (the local Orchestrator, or the host's own over NATS) starts it again.
    let again = rt
        .request(
            "b",
            ev(json!({"op": "echo", "value": 1})),
            opts(Some(20000)),
        )
        .await
        .unwrap()
        .response
        .unwrap();
    assert_eq!(again["value"], 1);
    assert_ne!(again["pid"], old);
    if let Some(orch) = &local {
        assert_eq!(orch.restarts("b", "default"), Some(1));
        assert_eq!(orch.in_flight(), 0);
    }
}

both!(
    /// `kill -9` of an agent process mid-request fails the request at once with a structured
    /// error; the agent is started again for the next request.
    ho_4_ho_8_kill_9_of_an_agent_process_mid_request_fails_at_once_then_respawns,
    kill_9_agent
);

async fn requested_restart(rt: Arc<dyn AgentRuntime>, local: Option<Orchestrator>) {
    let old = rt
        .request("b", ev(json!({"op": "echo"})), opts(None))
        .await
        .unwrap()
        .response
        .unwrap()["pid"]
        .clone();
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let slow = {
        let rt = Arc::clone(&rt);
        let sleep = json!({"op": "sleep", "ms": 1500, "started": started});
        tokio::spawn(async move { rt.request("b", ev(sleep), opts(None)).await })
    };
    // Work in flight when the restart is asked for.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !started.exists() {
        assert!(
            Instant::now() < deadline,
            "the slow request never reached b"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let asked = rt
        .request(
            "b",
            ev(json!({"op": "restart", "reason": "config changed"})),
            opts(None),
        )
        .await
        .unwrap();
    assert_eq!(asked.response.unwrap()["pid"], old);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let during = rt
        .request(
            "b",
            ev(json!({"op": "echo", "value": 2})),
            opts(Some(20_000)),
        )
        .await
        .unwrap()
        .response
        .unwrap();
    assert_ne!(during["pid"], old, "new work went to the draining process");
    assert_eq!(during["value"], 2);
    // The slow request was finished by the old process, not failed as a crash.
    let slow = slow.await.unwrap().unwrap();
    assert_eq!(slow.response.unwrap()["pid"], old);
    if let Some(orch) = &local {
        assert_eq!(orch.restarts("b", "default"), Some(1));
        assert_ne!(
            orch.pid("b", "default").map(u64::from),
            old.as_u64(),
            "b was not restarted"
        );
        assert_eq!(orch.in_flight(), 0);
    }
}

both!(
    /// An agent asking for its own restart finishes its in-flight work; new work waits for the
    /// next process.
    ho_8_a_requested_restart_finishes_in_flight_work_and_holds_new_work_for_the_next_process,
    requested_restart
);

/// An [`AgentHost`] in this test process, its agents processes of the test agent host.
async fn host_here(
    nats: &NatsOptions,
    swarm: &str,
    placed: &[&str],
    program: &str,
) -> (AgentHost, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = OrchestratorConfig {
        workdir: dir.path().to_path_buf(),
        backoff_initial: Duration::from_millis(10),
        max_spawn_failures: 3,
        ..OrchestratorConfig::default()
    };
    let placed: Vec<String> = placed.iter().map(|s| (*s).to_owned()).collect();
    let host = AgentHost::start(
        nats,
        swarm_named(swarm),
        &placed,
        ProcessConfig::new(program),
        config,
    )
    .await
    .unwrap();
    (host, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ag_3_ag_4_ag_5_spawn_list_and_catalog_from_an_agent_process_on_a_host() {
    bounded(60, async {
        let server = NatsServer::start();
        // a and b on one host: a's spawn, list and catalog go to that host's Orchestrator.
        let _ab = Host::start(None, &server.url, "s", "a,b", &[]).await;
        let entry = NatsSwarm::connect(&NatsOptions::new(&server.url), swarm_named("s"))
            .await
            .unwrap();
        let out = entry
            .request("a", ev(json!({"op": "manage"})), opts(None))
            .await
            .unwrap()
            .response
            .unwrap();
        assert_eq!(
            out["first"],
            json!({"target": "b", "instanceKey": "w1", "spawned": true, "cwd": "w1-dir"})
        );
        assert_eq!(out["again"]["spawned"], false);
        assert_eq!(out["ghost"]["code"], codes::UNKNOWN_TARGET);
        let mine = out["mine"].as_array().unwrap();
        assert_eq!(mine.len(), 1, "{mine:?}");
        assert_eq!(mine[0]["target"], "b");
        assert_eq!(mine[0]["ownerAgent"], "a");
        // The host's instances: a (started for the entry's request) and b/w1.
        assert_eq!(out["all"].as_array().unwrap().len(), 2, "{out}");
        assert_eq!(
            out["catalog"],
            json!({"swarmName": "s", "entryAgent": "a", "selfAgent": "a",
                "availableAgents": ["a", "b", "c"], "callableAgents": ["b", "c"]})
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ag_3_spawning_an_agent_placed_on_another_host_is_a_structured_error() {
    bounded(60, async {
        let server = NatsServer::start();
        let _a = Host::start(None, &server.url, "s", "a", &[]).await;
        let _b = Host::start(None, &server.url, "s", "b", &[]).await;
        let entry = NatsSwarm::connect(&NatsOptions::new(&server.url), swarm_named("s"))
            .await
            .unwrap();
        // a's host does not serve b: the spawn is refused, saying what to do instead.
        let e = entry
            .request("a", ev(json!({"op": "manage"})), opts(None))
            .await
            .unwrap_err();
        assert_eq!(e.code(), codes::SPAWN, "{e:?}");
        assert!(e.message().contains("runs on another host"), "{e:?}");
        assert!(e.suggestion().unwrap().contains("request"), "{e:?}");
        // The entry side spawns nothing itself either.
        let e = entry.spawn("b", Default::default()).await.unwrap_err();
        assert_eq!(e.code(), codes::SPAWN, "{e:?}");
        // ...and b is still reached by a request.
        let task = json!({"op": "ask", "target": "b", "input": {"op": "echo", "value": 3}});
        let out = entry
            .request("a", ev(task), opts(None))
            .await
            .unwrap()
            .response
            .unwrap();
        assert_eq!(out["answer"]["value"], 3);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_7_oversized_or_malformed_nats_messages_do_not_stop_the_host() {
    bounded(60, async {
        let server = NatsServer::start();
        let _host = Host::start(None, &server.url, "s", "a,b", &[]).await;
        let entry = NatsSwarm::connect(&NatsOptions::new(&server.url), swarm_named("s"))
            .await
            .unwrap();
        let before = entry
            .request("b", ev(json!({"op": "echo"})), opts(None))
            .await
            .unwrap()
            .response
            .unwrap()["pid"]
            .clone();
        // A stray client publishes garbage on b's subject: one-way, then waiting for a reply.
        let raw = async_nats::connect(server.url.as_str()).await.unwrap();
        let subject = "goondan.s.agent.b".to_owned();
        raw.publish(subject.clone(), "nope!".into()).await.unwrap();
        for garbage in [
            &b"nope!"[..],
            br#"{"v":99,"type":"delegate","from":"x/y","to":"b/default","payload":{}}"#,
            br#"{"v":1,"type":"delegate"}"#,
        ] {
            let reply = tokio::time::timeout(
                Duration::from_secs(5),
                raw.request(subject.clone(), garbage.to_vec().into()),
            )
            .await
            .expect("the host did not answer the garbage")
            .unwrap();
            let answer: Value = serde_json::from_slice(&reply.payload).unwrap();
            assert_eq!(answer["type"], "delegate_result", "{answer}");
            assert_eq!(
                answer["payload"]["error"]["code"],
                codes::PROTOCOL,
                "{answer}"
            );
        }
        // An answer over the server's max_payload (1 MB): a structured error at once.
        let started = Instant::now();
        let e = entry
            .request(
                "b",
                ev(json!({"op": "big", "bytes": 2_000_000})),
                opts(Some(20_000)),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), codes::PROTOCOL, "{e:?}");
        assert!(e.message().contains("max_payload"), "{e:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
        // A request over it is refused before it is published, from the entry and from a.
        let huge = json!({"op": "echo", "value": "y".repeat(2_000_000)});
        let e = entry
            .request("b", ev(huge.clone()), opts(Some(20_000)))
            .await
            .unwrap_err();
        assert_eq!(e.code(), codes::PROTOCOL, "{e:?}");
        assert!(e.message().contains("exceeds"), "{e:?}");
        // Everything still works, on the same process.
        let r = entry
            .request("b", ev(json!({"op": "echo", "value": "ok"})), opts(None))
            .await
            .unwrap()
            .response
            .unwrap();
        assert_eq!(r["value"], "ok");
        assert_eq!(r["pid"], before);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_8_graceful_shutdown_of_a_host_drains_in_flight_work() {
    bounded(60, async {
        let server = NatsServer::start();
        let nats = NatsOptions::new(&server.url);
        let (host, _dir) = host_here(&nats, "s", &["a", "b", "c"], HOST_BIN).await;
        let entry = NatsSwarm::connect(&nats, swarm_named("s")).await.unwrap();
        let pid = entry
            .request("b", ev(json!({"op": "echo"})), opts(None))
            .await
            .unwrap()
            .response
            .unwrap()["pid"]
            .as_u64()
            .unwrap();
        let slow = {
            let entry = entry.clone();
            tokio::spawn(async move {
                entry
                    .request("b", ev(json!({"op": "sleep", "ms": 600})), opts(None))
                    .await
            })
        };
        while host.orchestrator().in_flight() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        host.shutdown(Duration::from_secs(10)).await;
        let done = slow.await.unwrap().unwrap().response.unwrap();
        assert_eq!(done["slept"], 600);
        // No host serves b any more: the next request fails at once.
        let e = entry
            .request("b", ev(json!({})), opts(Some(30_000)))
            .await
            .unwrap_err();
        assert_eq!(e.code(), codes::NO_HOST, "{e:?}");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::process::Command::new("kill")
            .args(["-0", &pid.to_string()])
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success()
        {
            assert!(Instant::now() < deadline, "agent process {pid} survived");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_4_a_target_its_host_cannot_start_fails_with_a_structured_error() {
    bounded(30, async {
        let server = NatsServer::start();
        let nats = NatsOptions::new(&server.url);
        let (host, _dir) = host_here(&nats, "s", &["b"], "/nonexistent/goondan-host").await;
        let entry = NatsSwarm::connect(&nats, swarm_named("s")).await.unwrap();
        let started = Instant::now();
        let e = entry
            .request("b", ev(json!({})), opts(Some(30_000)))
            .await
            .unwrap_err();
        assert_eq!(e.code(), codes::SPAWN, "{e:?}");
        assert!(e.message().contains("/nonexistent/goondan-host"), "{e:?}");
        assert!(e.suggestion().is_some());
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(host.orchestrator().in_flight(), 0);
        host.shutdown(Duration::from_millis(100)).await;
    })
    .await;
}

/// A host here and an entry side, both with `auth`; one echo through them.
async fn echo_with(url: &str, auth: NatsAuth) -> Value {
    let nats = NatsOptions::new(url).auth(auth);
    let (_host, _dir) = host_here(&nats, "s", &["a", "b", "c"], HOST_BIN).await;
    let entry = NatsSwarm::connect(&nats, swarm_named("s")).await.unwrap();
    entry
        .request("b", ev(json!({"op": "echo", "value": 7})), opts(None))
        .await
        .unwrap()
        .response
        .unwrap()
}

async fn refused(nats: &NatsOptions) -> String {
    NatsSwarm::connect(nats, swarm_named("s"))
        .await
        .unwrap_err()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_is_passed_through_and_a_wrong_token_is_a_clear_error() {
    bounded(60, async {
        let server = NatsServer::start_with("127.0.0.1", &["--auth", "t0ken-goondan"]);
        let out = echo_with(&server.url, NatsAuth::Token("t0ken-goondan".into())).await;
        assert_eq!(out["value"], 7);
        let bad = NatsOptions::new(&server.url).auth(NatsAuth::Token("wrong".into()));
        let e = refused(&bad).await;
        assert!(e.contains("authorization violation"), "{e}");
        assert!(e.contains("token"), "{e}");
        assert!(e.contains(&server.url), "{e}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_nkey_is_passed_through_and_a_wrong_nkey_is_a_clear_error() {
    bounded(60, async {
        let user = nkeys::KeyPair::new_user();
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("nats.conf");
        std::fs::write(
            &conf,
            format!(
                "authorization {{ users = [ {{ nkey: {} }} ] }}\n",
                user.public_key()
            ),
        )
        .unwrap();
        let server = NatsServer::start_with("127.0.0.1", &["-c", conf.to_str().unwrap()]);
        let out = echo_with(&server.url, NatsAuth::NKey(user.seed().unwrap())).await;
        assert_eq!(out["value"], 7);
        let stranger = nkeys::KeyPair::new_user();
        let bad = NatsOptions::new(&server.url).auth(NatsAuth::NKey(stranger.seed().unwrap()));
        let e = refused(&bad).await;
        assert!(e.contains("authorization violation"), "{e}");
        assert!(e.contains("nkey"), "{e}");
    })
    .await;
}

/// `openssl` with `args` in `dir`.
fn openssl(dir: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl is needed to make the test's certificates");
    assert!(
        out.status.success(),
        "openssl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_private_root_certificate_and_an_untrusted_server_is_a_clear_error() {
    bounded(60, async {
        // A CA of this test, and a certificate it signs for 127.0.0.1.
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        openssl(
            d,
            &[
                &["req", "-x509"][..],
                &ec,
                &[
                    "-keyout",
                    "ca.key",
                    "-out",
                    "ca.pem",
                    "-days",
                    "2",
                    "-subj",
                    "/CN=goondan test CA",
                ],
            ]
            .concat(),
        );
        openssl(
            d,
            &[
                &["req"][..],
                &ec,
                &[
                    "-keyout",
                    "server.key",
                    "-out",
                    "server.csr",
                    "-subj",
                    "/CN=127.0.0.1",
                ],
            ]
            .concat(),
        );
        std::fs::write(
            d.join("ext.cnf"),
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "server.pem",
                "-days",
                "2",
                "-extfile",
                "ext.cnf",
            ],
        );
        let (cert, key) = (d.join("server.pem"), d.join("server.key"));
        let server = NatsServer::start_with(
            "127.0.0.1",
            &[
                "--tls",
                "--tlscert",
                cert.to_str().unwrap(),
                "--tlskey",
                key.to_str().unwrap(),
            ],
        );
        let nats = NatsOptions::new(&server.url).root_certificate(d.join("ca.pem"));
        let (_host, _hdir) = host_here(&nats, "s", &["a", "b", "c"], HOST_BIN).await;
        let entry = NatsSwarm::connect(&nats, swarm_named("s")).await.unwrap();
        let out = entry
            .request("b", ev(json!({"op": "echo", "value": "tls"})), opts(None))
            .await
            .unwrap()
            .response
            .unwrap();
        assert_eq!(out["value"], "tls");
        // Without the CA the server's certificate is not trusted.
        let e = refused(&NatsOptions::new(&server.url).require_tls(true)).await;
        assert!(e.contains("check the TLS options"), "{e}");
        assert!(e.contains(&server.url), "{e}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ag_4_list_on_the_entry_side_gathers_the_instances_of_every_host_of_the_swarm() {
    bounded(60, async {
        let server = NatsServer::start();
        let _a = Host::start(None, &server.url, "s", "a", &[]).await;
        let _bc = Host::start(None, &server.url, "s", "b,c", &[]).await;
        // Another swarm's host on the same server: its instances are not listed.
        let _other = Host::start(None, &server.url, "other", "a,b,c", &[]).await;
        let nats = NatsOptions::new(&server.url);
        let entry = NatsSwarm::connect(&nats, swarm_named("s")).await.unwrap();
        let other = NatsSwarm::connect(&nats, swarm_named("other"))
            .await
            .unwrap();
        assert!(entry.list(true).await.unwrap().is_empty());
        other
            .request("c", ev(json!({"op": "echo"})), opts(None))
            .await
            .unwrap();
        let task = json!({"op": "ask", "target": "b", "input": {"op": "echo"}});
        entry.request("a", ev(task), opts(None)).await.unwrap();
        let all = entry.list(true).await.unwrap();
        let mut seen: Vec<_> = all
            .iter()
            .map(|i| (i.target.as_str(), i.owner_agent.as_str()))
            .collect();
        seen.sort_unstable();
        assert_eq!(seen, [("a", "orchestrator"), ("b", "a")], "{all:?}");
        // The entry side's own spawns: none.
        assert!(entry.list(false).await.unwrap().is_empty());
        assert_eq!(other.list(true).await.unwrap().len(), 1);
    })
    .await;
}

/// The W3C trace context of the caller's span travels with a delegate over NATS, in a
/// `traceparent` header and in the payload (which a host reads when the header is missing),
/// so that the serving host's spans join the caller's trace (`goondan_runtime::telemetry`).
#[tokio::test(flavor = "current_thread")]
async fn a_delegate_over_nats_carries_the_caller_s_trace_context_in_a_header() {
    use futures_util::StreamExt;
    use goondan_runtime::telemetry::{Telemetry, traceparent};
    use tracing::Instrument;
    use tracing_subscriber::layer::SubscriberExt;

    bounded(60, async {
        let server = NatsServer::start();
        let raw = async_nats::connect(&server.url).await.unwrap();
        let mut seen = raw.subscribe(">").await.unwrap();
        raw.flush().await.unwrap();
        let entry = NatsSwarm::connect(&NatsOptions::new(&server.url), swarm_named("traced"))
            .await
            .unwrap();
        let receiver = goondan_test_peers::otlp::OtlpReceiver::start().await;
        let telemetry = Telemetry::builder()
            .endpoint(receiver.endpoint())
            .build()
            .unwrap();
        // This thread's subscriber only: the test runs on one thread.
        let _exporting = tracing::subscriber::set_default(
            tracing_subscriber::registry().with(telemetry.layer()),
        );
        let caller = tracing::info_span!("caller");
        let context = caller
            .in_scope(traceparent)
            .expect("an exported span has a context");
        let trace = context.split('-').nth(1).unwrap().to_owned();
        let options = RequestOptions {
            timeout_ms: Some(500),
            ..RequestOptions::default()
        };
        let asked = entry
            .request("b", ev(json!({"op": "echo"})), options)
            .instrument(caller);
        let delegate = async {
            loop {
                let m = seen.next().await.unwrap();
                if m.headers
                    .as_ref()
                    .is_some_and(|h| h.get("traceparent").is_some())
                {
                    return m;
                }
            }
        };
        let (_, m) = tokio::join!(asked, delegate);
        let header = m
            .headers
            .as_ref()
            .unwrap()
            .get("traceparent")
            .unwrap()
            .as_str()
            .to_owned();
        assert_eq!(header.split('-').nth(1), Some(trace.as_str()), "{header}");
        let body: Value = serde_json::from_slice(&m.payload).unwrap();
        assert_eq!(body["payload"]["traceparent"], header.as_str(), "{body}");
    })
    .await;
}
