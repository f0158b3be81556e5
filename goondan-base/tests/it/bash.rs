//! `bash`: real processes, through the executor (BASE-1, CTX-3).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use goondan_base::sandbox::SandboxPolicy;
use goondan_base::{Bash, BashPolicy};
use goondan_runtime::testing::{ResultAssertions, TestKit};
use goondan_runtime::{IntoTool, ToolContext};
use nix::sys::signal::kill;
use nix::unistd::Pid;
use serde_json::{Value, json};

fn kit() -> TestKit {
    TestKit::with_tools([Bash::default().into_tool()]).unwrap()
}

/// Without the sandbox: these tests read the pids a command writes (`$$`, `$!`), which inside
/// the sandbox's PID namespace are not the host's. The sandbox's own containment is tested in
/// `sandbox.rs`.
fn quick_kill_policy() -> BashPolicy {
    BashPolicy {
        kill_grace: Duration::from_millis(300),
        sandbox: SandboxPolicy::off(),
        ..BashPolicy::default()
    }
}

/// Whether `pid` is gone (or a zombie waiting for a reaper that is not ours).
fn is_gone(pid: i32) -> bool {
    if kill(Pid::from_raw(pid), None).is_err() {
        return true;
    }
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

async fn wait_gone(pid: i32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if is_gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    is_gone(pid)
}

fn read_pid(kit: &TestKit, file: &str) -> i32 {
    let text = std::fs::read_to_string(kit.workdir().join(file)).unwrap();
    text.trim().parse().unwrap()
}

#[tokio::test]
async fn base_1_exec_answers_stdout_stderr_and_exit_code() {
    let kit = kit();
    let r = kit
        .call(
            "bash__exec",
            json!({"command": "echo out; echo err >&2; exit 3"}),
        )
        .await;
    let out = r.assert_ok();
    assert_eq!(out["stdout"], "out\n");
    assert_eq!(out["stderr"], "err\n");
    assert_eq!(out["exitCode"], 3, "a non-zero exit is data");
    assert_eq!(out["signal"], Value::Null);
    assert_eq!(out["timedOut"], false);
    assert_eq!(out["truncated"], false);
    assert_eq!(out["command"], "echo out; echo err >&2; exit 3");
    assert_eq!(out["cwd"], ".");
    assert!(out["durationMs"].is_u64());
}

#[tokio::test]
async fn ctx_3_exec_runs_in_the_workdir() {
    let kit = kit();
    let r = kit.call("bash__exec", json!({"command": "pwd -P"})).await;
    let pwd = r.assert_ok()["stdout"].as_str().unwrap().trim().to_owned();
    assert_eq!(pwd, kit.workdir().canonicalize().unwrap().to_str().unwrap());
}

#[tokio::test]
async fn ctx_3_cwd_is_a_directory_inside_the_workdir() {
    let kit = kit();
    std::fs::create_dir_all(kit.workdir().join("a/b")).unwrap();
    let r = kit
        .call("bash__exec", json!({"command": "pwd -P", "cwd": "a/b"}))
        .await;
    let out = r.assert_ok();
    assert!(out["stdout"].as_str().unwrap().trim().ends_with("/a/b"));
    assert_eq!(out["cwd"], "a/b");

    for cwd in ["..", "/tmp", "../..", "a/../../"] {
        let r = kit
            .call("bash__exec", json!({"command": "pwd", "cwd": cwd}))
            .await;
        assert!(r.is_error(), "{cwd}: {r:?}");
    }
    std::os::unix::fs::symlink("/tmp", kit.workdir().join("out")).unwrap();
    kit.call("bash__exec", json!({"command": "pwd", "cwd": "out"}))
        .await
        .assert_error("E_PATH_OUTSIDE_WORKDIR");
    kit.call("bash__exec", json!({"command": "pwd", "cwd": "/tmp"}))
        .await
        .assert_error("E_PATH_OUTSIDE_WORKDIR");
    kit.call("bash__exec", json!({"command": "pwd", "cwd": "missing"}))
        .await
        .assert_error("E_BASH_CWD");
}

#[tokio::test]
async fn base_1_a_signal_is_reported() {
    let kit = kit();
    let r = kit
        .call("bash__exec", json!({"command": "kill -KILL $$"}))
        .await;
    let out = r.assert_ok();
    assert_eq!(out["exitCode"], Value::Null);
    assert_eq!(out["signal"], "SIGKILL");
}

#[tokio::test]
async fn base_1_timeout_kills_the_whole_group_with_its_grandchild() {
    let kit = TestKit::with_tools([Bash::new(quick_kill_policy()).into_tool()]).unwrap();
    let started = Instant::now();
    let r = kit
        .call(
            "bash__exec",
            json!({"command": "sleep 30 & echo $! > gc.pid; wait", "timeoutMs": 300}),
        )
        .await;
    let out = r.assert_ok();
    assert_eq!(out["timedOut"], true);
    assert_eq!(out["signal"], "SIGTERM");
    assert!(started.elapsed() < Duration::from_secs(5));
    let grandchild = read_pid(&kit, "gc.pid");
    assert!(
        wait_gone(grandchild, Duration::from_secs(3)).await,
        "grandchild {grandchild} survived"
    );
}

#[tokio::test]
async fn base_1_a_grandchild_ignoring_sigterm_gets_sigkill() {
    let kit = TestKit::with_tools([Bash::new(quick_kill_policy()).into_tool()]).unwrap();
    let r = kit
        .call(
            "bash__exec",
            json!({
                "command": "sh -c 'trap \"\" TERM; echo $$ > gc.pid; while :; do sleep 1; done' & trap '' TERM; wait",
                "timeoutMs": 400
            }),
        )
        .await;
    let out = r.assert_ok();
    assert_eq!(out["timedOut"], true);
    assert_eq!(out["signal"], "SIGKILL");
    let grandchild = read_pid(&kit, "gc.pid");
    assert!(
        wait_gone(grandchild, Duration::from_secs(3)).await,
        "grandchild {grandchild} survived"
    );
}

#[tokio::test]
async fn base_1_background_children_do_not_outlive_the_command() {
    let kit = TestKit::with_tools([Bash::new(quick_kill_policy()).into_tool()]).unwrap();
    let started = Instant::now();
    let r = kit
        .call(
            "bash__exec",
            json!({"command": "sleep 30 & echo $! > gc.pid; echo done"}),
        )
        .await;
    assert_eq!(r.assert_ok()["stdout"], "done\n");
    assert!(started.elapsed() < Duration::from_secs(5));
    let grandchild = read_pid(&kit, "gc.pid");
    assert!(wait_gone(grandchild, Duration::from_secs(3)).await);
}

#[tokio::test]
async fn base_1_cancellation_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let token = tokio_util::sync::CancellationToken::new();
    let ctx = ToolContext::builder(dir.path())
        .cancellation(token.clone())
        .build();
    let bash = Bash::new(quick_kill_policy());
    let cancel = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token.cancel();
    });
    let input =
        serde_json::from_value(json!({"command": "sleep 30 & echo $! > gc.pid; wait"})).unwrap();
    let err = bash.exec(&ctx, input).await.unwrap_err();
    assert_eq!(err.code(), "E_BASH_CANCELLED");
    cancel.await.unwrap();
    let pid: i32 = std::fs::read_to_string(dir.path().join("gc.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(wait_gone(pid, Duration::from_secs(3)).await);
}

#[tokio::test]
async fn base_1_executor_timeout_drops_the_call_and_kills_the_group() {
    let kit = TestKit::builder()
        .tool(Bash::new(quick_kill_policy()))
        .default_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let r = kit
        .call(
            "bash__exec",
            json!({"command": "sleep 30 & echo $! > gc.pid; wait"}),
        )
        .await;
    r.assert_error("E_TOOL_TIMEOUT");
    let grandchild = read_pid(&kit, "gc.pid");
    assert!(wait_gone(grandchild, Duration::from_secs(3)).await);
}

#[tokio::test]
async fn base_1_fifty_megabytes_of_output_are_capped_quickly() {
    let kit = kit();
    let started = Instant::now();
    let r = kit
        .call(
            "bash__exec",
            json!({"command": "head -c 52428800 /dev/zero | tr '\\0' a; echo tail-marker >&2"}),
        )
        .await;
    let elapsed = started.elapsed();
    let out = r.assert_ok();
    assert_eq!(out["truncated"], true);
    assert_eq!(out["stdoutBytes"], 52_428_800);
    let stdout = out["stdout"].as_str().unwrap();
    assert!(stdout.len() < 70 * 1024, "kept {} bytes", stdout.len());
    assert!(stdout.contains("bytes omitted"));
    assert_eq!(out["stderr"], "tail-marker\n");
    assert!(elapsed < Duration::from_secs(20), "took {elapsed:?}");
}

#[tokio::test]
async fn base_1_head_and_tail_are_kept() {
    let kit = kit();
    let r = kit
        .call("bash__exec", json!({"command": "echo FIRST; head -c 200000 /dev/zero | tr '\\0' x; echo; echo LAST"}))
        .await;
    let stdout = r.assert_ok()["stdout"].as_str().unwrap().to_owned();
    assert!(stdout.starts_with("FIRST\n"));
    assert!(stdout.ends_with("LAST\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn base_1_fifty_parallel_execs() {
    let kit = Arc::new(kit());
    let mut set = tokio::task::JoinSet::new();
    for n in 0..50 {
        let kit = Arc::clone(&kit);
        set.spawn(async move {
            let r = kit
                .call(
                    "bash__exec",
                    json!({"command": format!("sleep 0.1; echo {n}")}),
                )
                .await;
            (n, r.assert_ok()["stdout"].as_str().unwrap().to_owned())
        });
    }
    let mut seen = 0;
    while let Some(done) = set.join_next().await {
        let (n, stdout) = done.unwrap();
        assert_eq!(stdout, format!("{n}\n"));
        seen += 1;
    }
    assert_eq!(seen, 50);
}

#[tokio::test]
async fn base_1_env_is_the_hosts_minus_the_deny_list_plus_env() {
    // The deny list is the environment without the sandbox; the sandbox's allow-list is
    // tested in `sandbox.rs`.
    let policy = BashPolicy {
        sandbox: SandboxPolicy::off(),
        ..BashPolicy::default()
    }
    .deny_env("HOME");
    let kit = TestKit::with_tools([Bash::new(policy.clone()).into_tool()]).unwrap();
    let r = kit
        .call(
            "bash__exec",
            json!({"command": "env", "env": {"GOONDAN_EXTRA": "yes"}}),
        )
        .await;
    let stdout = r.assert_ok()["stdout"].as_str().unwrap().to_owned();
    assert!(stdout.lines().any(|l| l == "GOONDAN_EXTRA=yes"));
    assert!(
        stdout.lines().any(|l| l.starts_with("PATH=")),
        "PATH is kept"
    );
    assert!(
        !stdout.lines().any(|l| l.starts_with("HOME=")),
        "HOME was denied"
    );
    for line in stdout.lines() {
        let name = line.split('=').next().unwrap();
        assert!(
            name == "GOONDAN_EXTRA" || !policy.is_denied(name),
            "{name} leaked"
        );
    }
    kit.call(
        "bash__exec",
        json!({"command": "true", "env": {"A=B": "x"}}),
    )
    .await
    .assert_error("E_BASH_ENV");
}

#[tokio::test]
async fn base_1_script_runs_a_workdir_file_with_args() {
    let kit = kit();
    let dir = kit.workdir();
    std::fs::create_dir(dir.join("bin")).unwrap();
    std::fs::write(dir.join("bin/plain.sh"), "echo \"plain $1 $2\"\n").unwrap();
    std::fs::write(dir.join("bin/exe"), "#!/bin/sh\necho \"exe $#\"; exit 4\n").unwrap();
    let mut perms = std::fs::metadata(dir.join("bin/exe"))
        .unwrap()
        .permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(dir.join("bin/exe"), perms).unwrap();

    let r = kit
        .call(
            "bash__script",
            json!({"path": "bin/plain.sh", "args": ["a", "b c"]}),
        )
        .await;
    let out = r.assert_ok();
    assert_eq!(out["stdout"], "plain a b c\n");
    assert_eq!(out["path"], "bin/plain.sh");
    assert!(out.get("command").is_none());

    let r = kit
        .call(
            "bash__script",
            json!({"path": "./bin/exe", "args": ["1", "2", "3"]}),
        )
        .await;
    let out = r.assert_ok();
    assert_eq!(out["stdout"], "exe 3\n");
    assert_eq!(out["exitCode"], 4);

    for path in ["../x.sh", "/bin/ls", "bin/../../x"] {
        let r = kit.call("bash__script", json!({"path": path})).await;
        assert!(r.is_error(), "{path}");
    }
    std::os::unix::fs::symlink("/bin/ls", dir.join("ls")).unwrap();
    kit.call("bash__script", json!({"path": "ls"}))
        .await
        .assert_error("E_PATH_OUTSIDE_WORKDIR");
    kit.call("bash__script", json!({"path": "bin"}))
        .await
        .assert_error("E_BASH_SCRIPT");
    kit.call("bash__script", json!({"path": "nope.sh"}))
        .await
        .assert_error("E_BASH_SCRIPT");
}

#[tokio::test]
async fn base_1_bad_arguments_are_refused_by_the_executor() {
    let kit = kit();
    kit.call("bash__exec", json!({"cmd": "ls"}))
        .await
        .assert_error("E_TOOL_INVALID_ARGS");
    kit.call("bash__exec", json!({"command": "ls", "timeoutMs": "5"}))
        .await
        .assert_error("E_TOOL_INVALID_ARGS");
}

/// A `sleep` argument no other process has: `100.<pid><counter>`, to find the process later.
fn unique_sleep() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "100.{}{:04}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Live (not zombie) processes whose command line contains `marker`.
fn survivors(marker: &str) -> Vec<(i32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(marker) && !is_gone(pid) {
            found.push((pid, cmdline));
        }
    }
    found
}

/// Fails when a process with one of `markers` is alive `within` from now.
async fn assert_none_survive(markers: &[&str], within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let alive: Vec<_> = markers.iter().flat_map(|m| survivors(m)).collect();
        if alive.is_empty() {
            return;
        }
        if Instant::now() >= deadline {
            for (pid, _) in &alive {
                kill(Pid::from_raw(*pid), nix::sys::signal::Signal::SIGKILL).ok();
            }
            panic!("descendants survived the call: {alive:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// These tests prove the containment; on Linux CI (root, cgroup v2) it must be the cgroup.
fn assert_contained() {
    assert_eq!(
        goondan_base::bash::ContainmentKind::detect(),
        goondan_base::bash::ContainmentKind::Cgroup,
        "no writable cgroup v2 with `cgroup.kill`: calls fall back to their process group"
    );
}

#[tokio::test]
async fn base_1_a_setsid_daemon_neither_survives_nor_holds_the_output() {
    assert_contained();
    let kit = kit(); // the default 2 s grace
    let daemon = unique_sleep();
    let started = Instant::now();
    let r = kit
        .call(
            "bash__exec",
            json!({"command": format!("setsid sleep {daemon} & echo bye")}),
        )
        .await;
    let elapsed = started.elapsed();
    assert_eq!(r.assert_ok()["stdout"], "bye\n", "the output is kept");
    assert_eq!(r.assert_ok()["exitCode"], 0);
    assert!(elapsed < Duration::from_secs(2), "took {elapsed:?}");
    assert_none_survive(&[&daemon], Duration::ZERO).await;

    // The same once the daemon has surely detached (it touches `ready` after `setsid`).
    let daemon = unique_sleep();
    let command = format!(
        "setsid sh -c 'touch ready; exec sleep {daemon}' & \
         until [ -e ready ]; do sleep 0.01; done; echo bye"
    );
    let started = Instant::now();
    let r = kit.call("bash__exec", json!({"command": command})).await;
    let elapsed = started.elapsed();
    assert_eq!(r.assert_ok()["stdout"], "bye\n", "the output is kept");
    assert!(elapsed < Duration::from_secs(2), "took {elapsed:?}");
    assert_none_survive(&[&daemon], Duration::ZERO).await;
}

#[tokio::test]
async fn base_1_double_forks_and_detached_daemons_do_not_survive_an_exit() {
    assert_contained();
    let kit = TestKit::with_tools([Bash::new(quick_kill_policy()).into_tool()]).unwrap();
    let [plain, detached, quiet, stubborn] = [(); 4].map(|()| unique_sleep());
    // Each daemon says when it is detached (a ready file), so none is caught before it is.
    let command = format!(
        "( (sh -c 'touch r1; exec sleep {plain}' &) & ); \
         ( (setsid sh -c 'touch r2; exec sleep {detached}' &) & ); \
         setsid sh -c 'touch r3; exec sleep {quiet}' >/dev/null 2>&1 </dev/null & \
         setsid sh -c 'trap \"\" TERM; touch r4; sleep {stubborn}; :' >/dev/null 2>&1 & \
         until [ -e r1 ] && [ -e r2 ] && [ -e r3 ] && [ -e r4 ]; do sleep 0.01; done; \
         echo out; echo err >&2"
    );
    let started = Instant::now();
    let r = kit.call("bash__exec", json!({"command": command})).await;
    let out = r.assert_ok();
    assert_eq!(out["stdout"], "out\n");
    assert_eq!(out["stderr"], "err\n");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert_none_survive(&[&plain, &detached, &quiet, &stubborn], Duration::ZERO).await;
}

#[tokio::test]
async fn base_1_timeout_leaves_no_detached_descendant() {
    assert_contained();
    let kit = TestKit::with_tools([Bash::new(quick_kill_policy()).into_tool()]).unwrap();
    let [detached, double] = [(); 2].map(|()| unique_sleep());
    let command = format!(
        "setsid sleep {detached} & ( (setsid sleep {double} &) & ); echo started; sleep 30"
    );
    let r = kit
        .call("bash__exec", json!({"command": command, "timeoutMs": 500}))
        .await;
    let out = r.assert_ok();
    assert_eq!(out["timedOut"], true);
    assert_eq!(out["signal"], "SIGTERM");
    assert_eq!(
        out["stdout"], "started\n",
        "output before the timeout is kept"
    );
    assert_none_survive(&[&detached, &double], Duration::ZERO).await;
}

#[tokio::test]
async fn base_1_cancellation_leaves_no_detached_descendant() {
    assert_contained();
    let dir = tempfile::tempdir().unwrap();
    let token = tokio_util::sync::CancellationToken::new();
    let ctx = ToolContext::builder(dir.path())
        .cancellation(token.clone())
        .build();
    let bash = Bash::new(quick_kill_policy());
    let [detached, double] = [(); 2].map(|()| unique_sleep());
    let cancel = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        token.cancel();
    });
    let input = serde_json::from_value(json!({
        "command": format!("setsid sleep {detached} & ( (setsid sleep {double} &) & ); sleep 30")
    }))
    .unwrap();
    let err = bash.exec(&ctx, input).await.unwrap_err();
    assert_eq!(err.code(), "E_BASH_CANCELLED");
    cancel.await.unwrap();
    assert_none_survive(&[&detached, &double], Duration::ZERO).await;
}

#[tokio::test]
async fn base_1_a_dropped_call_leaves_no_detached_descendant() {
    assert_contained();
    let kit = TestKit::builder()
        .tool(Bash::new(quick_kill_policy()))
        .default_timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    let [detached, double] = [(); 2].map(|()| unique_sleep());
    let command = format!(
        "setsid sleep {detached} & ( (setsid sleep {double} &) & ); echo started > started; sleep 30"
    );
    let r = kit.call("bash__exec", json!({"command": command})).await;
    r.assert_error("E_TOOL_TIMEOUT");
    assert!(kit.workdir().join("started").exists(), "the command ran");
    // SIGTERM at once, SIGKILL after the 300 ms grace on a thread: allow for it.
    assert_none_survive(&[&detached, &double], Duration::from_secs(3)).await;
}

/// The directory of the cgroup a call's command ran in, from the `0::` line of its
/// `/proc/self/cgroup` (the command printed it), under this process's cgroup2 mount.
fn cgroup_of(out: &Value) -> PathBuf {
    let own = out["stdout"]
        .as_str()
        .and_then(|text| text.lines().find_map(|line| line.strip_prefix("0::")))
        .unwrap_or_else(|| panic!("no cgroup v2 line in {out}"));
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let (root, mount) = mountinfo
        .lines()
        .find_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            (after.split_whitespace().next()? == "cgroup2").then_some(())?;
            let mut fields = before.split_whitespace().skip(3);
            Some((fields.next()?.to_owned(), fields.next()?.to_owned()))
        })
        .expect("a cgroup2 mount");
    let inside = Path::new(own).strip_prefix(&root).unwrap();
    let dir = Path::new(&mount).join(inside);
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("goondan-bash-{}-", std::process::id())),
        "not a call's cgroup: {}",
        dir.display()
    );
    dir
}

/// An existing cgroup with no process inside.
fn assert_empty_cgroup(dir: &Path) {
    let procs = std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_else(|err| panic!("{}: {err}", dir.display()));
    assert_eq!(procs, "", "{} holds processes", dir.display());
    let events = std::fs::read_to_string(dir.join("cgroup.events")).unwrap();
    assert!(events.lines().any(|l| l == "populated 0"), "{events}");
}

async fn wait_removed(dir: &Path, within: Duration) {
    let deadline = Instant::now() + within;
    while dir.exists() {
        assert!(
            Instant::now() < deadline,
            "{} was not removed",
            dir.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn base_1_an_empty_call_cgroup_serves_the_tool_s_next_call_and_a_killed_one_never_does() {
    assert_contained();
    let kit = TestKit::with_tools([Bash::new(quick_kill_policy()).into_tool()]).unwrap();
    let whoami = json!({"command": "grep '^0::' /proc/self/cgroup"});

    // A call's cgroup, empty once the call is over, is kept and serves the next call.
    let first = cgroup_of(kit.call("bash__exec", whoami.clone()).await.assert_ok());
    assert_empty_cgroup(&first);
    let second = cgroup_of(kit.call("bash__exec", whoami.clone()).await.assert_ok());
    assert_eq!(second, first, "the kept cgroup serves the next call");
    assert_empty_cgroup(&second);

    // A call whose leftover ignores SIGTERM ends with `cgroup.kill`: that cgroup is removed,
    // never handed to another call.
    let stubborn = unique_sleep();
    let command = format!(
        "setsid sh -c 'trap \"\" TERM; touch ready; exec sleep {stubborn}' >/dev/null 2>&1 & \
         until [ -e ready ]; do sleep 0.01; done; grep '^0::' /proc/self/cgroup"
    );
    let killed = cgroup_of(
        kit.call("bash__exec", json!({"command": command}))
            .await
            .assert_ok(),
    );
    assert_eq!(killed, first, "taken from the pool");
    assert_none_survive(&[&stubborn], Duration::ZERO).await;
    wait_removed(&killed, Duration::from_secs(5)).await;
    let next = cgroup_of(kit.call("bash__exec", whoami.clone()).await.assert_ok());
    assert_ne!(next, killed, "a killed cgroup is never used again");
    assert_empty_cgroup(&next);

    // Calls at once take a cgroup each; at most eight are kept afterwards, the rest removed.
    let together = (0..12).map(|_| {
        kit.call(
            "bash__exec",
            json!({"command": "grep '^0::' /proc/self/cgroup; sleep 1"}),
        )
    });
    let dirs: std::collections::BTreeSet<PathBuf> = futures_util::future::join_all(together)
        .await
        .iter()
        .map(|r| cgroup_of(r.assert_ok()))
        .collect();
    assert_eq!(dirs.len(), 12, "one cgroup per running call");
    let kept: Vec<&PathBuf> = dirs.iter().filter(|dir| dir.exists()).collect();
    assert_eq!(kept.len(), 8, "kept: {kept:?}");
    kept.iter().for_each(|dir| assert_empty_cgroup(dir));

    // The kept cgroups go with the tool.
    drop(kit);
    for dir in kept {
        assert!(!dir.exists(), "{} outlived its tool", dir.display());
    }
}

#[tokio::test]
async fn base_1_without_a_cgroup_the_marker_still_finds_detached_descendants() {
    let policy = BashPolicy {
        use_cgroup: false,
        ..quick_kill_policy()
    };
    let kit = TestKit::with_tools([Bash::new(policy).into_tool()]).unwrap();
    let [detached, double] = [(); 2].map(|()| unique_sleep());
    let command = format!(
        "setsid sh -c 'touch r1; exec sleep {detached}' & \\
         ( (setsid sh -c 'touch r2; exec sleep {double}' &) & ); \\
         until [ -e r1 ] && [ -e r2 ]; do sleep 0.01; done; echo bye"
    );
    let started = Instant::now();
    let r = kit.call("bash__exec", json!({"command": command})).await;
    assert_eq!(r.assert_ok()["stdout"], "bye\n", "the output is kept");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert_none_survive(&[&detached, &double], Duration::ZERO).await;

    let [detached, double] = [(); 2].map(|()| unique_sleep());
    let command = format!(
        "setsid sleep {detached} & ( (setsid sleep {double} &) & ); echo started; sleep 30"
    );
    let r = kit
        .call("bash__exec", json!({"command": command, "timeoutMs": 500}))
        .await;
    let out = r.assert_ok();
    assert_eq!(out["timedOut"], true);
    assert_eq!(out["stdout"], "started\n");
    assert_none_survive(&[&detached, &double], Duration::ZERO).await;
}

#[tokio::test]
async fn base_1_a_missing_shell_is_a_spawn_error() {
    let policy = BashPolicy {
        shell: "/nonexistent/goondan-shell".into(),
        ..BashPolicy::default()
    };
    let kit = TestKit::with_tools([Bash::new(policy).into_tool()]).unwrap();
    kit.call("bash__exec", json!({"command": "echo hi"}))
        .await
        .assert_error("E_BASH_SPAWN");
}

/// Upstream's `script {shell}`: the script runs under the named interpreter.
#[tokio::test]
async fn base_5_script_runs_under_the_shell_it_names() {
    let kit = kit();
    let dir = kit.workdir();
    std::fs::write(dir.join("s.sh"), "echo \"$0 $1\"\n").unwrap();
    let r = kit
        .call(
            "bash__script",
            json!({"path": "s.sh", "args": ["x"], "shell": "/bin/bash"}),
        )
        .await;
    let out = r.assert_ok();
    let stdout = out["stdout"].as_str().unwrap();
    assert!(stdout.ends_with("s.sh x\n"), "{stdout}");
    kit.call(
        "bash__script",
        json!({"path": "s.sh", "shell": "/no/such/shell"}),
    )
    .await
    .assert_error("E_BASH_SPAWN");
}

/// In a cgroup the wrapper shell runs `sh -c COMMAND`'s command in place (no second shell):
/// what the command sees is what `sh -c` gives it, with or without the cgroup.
#[tokio::test]
async fn base_1_a_command_sees_what_sh_c_gives_it_in_either_containment() {
    let script = r#"echo "$0|$#|$1|${cmd:-unset}"; trap 'echo bye' EXIT; exit 7"#;
    let direct = tokio::process::Command::new("/bin/sh")
        .args(["-c", script])
        .output()
        .await
        .unwrap();
    assert_eq!(direct.status.code(), Some(7));
    for (use_cgroup, sandbox) in [
        (true, SandboxPolicy::default()),
        (false, SandboxPolicy::default()),
        (true, SandboxPolicy::off()),
        (false, SandboxPolicy::off()),
    ] {
        let bash = Bash::new(BashPolicy {
            use_cgroup,
            sandbox,
            ..BashPolicy::default()
        });
        let kit = TestKit::with_tools([bash.into_tool()]).unwrap();
        let out = kit
            .call("bash__exec", json!({"command": script}))
            .await
            .assert_ok()
            .clone();
        assert_eq!(out["exitCode"], 7, "cgroup {use_cgroup}: {out}");
        assert_eq!(
            out["stdout"].as_str(),
            Some(String::from_utf8_lossy(&direct.stdout).as_ref()),
            "cgroup {use_cgroup}: {out}"
        );
    }
}

/// `target` (absolute) as the shortest path relative to this process's current directory.
fn relative_to_cwd(target: &Path) -> PathBuf {
    let cwd = std::env::current_dir().unwrap();
    let common = cwd
        .components()
        .zip(target.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut rel = PathBuf::new();
    for _ in common..cwd.components().count() {
        rel.push("..");
    }
    rel.extend(target.components().skip(common));
    rel
}

#[tokio::test]
async fn base_1_script_runs_with_a_relative_workdir() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::write(dir.path().join("plain.sh"), "echo \"plain $1\"\n").unwrap();
    std::fs::write(dir.path().join("exe"), "#!/bin/sh\necho exe\n").unwrap();
    let mut perms = std::fs::metadata(dir.path().join("exe"))
        .unwrap()
        .permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(dir.path().join("exe"), perms).unwrap();
    let relative = relative_to_cwd(dir.path());
    assert!(relative.is_relative());
    // From inside the workdir, the relative path names nothing: it is taken against this
    // process's directory or not at all.
    assert!(
        !dir.path().join(&relative).exists(),
        "{}",
        relative.display()
    );
    let ctx = ToolContext::builder(&relative).build();
    let bash = Bash::default();
    for (path, expected) in [("plain.sh", "plain a\n"), ("exe", "exe\n")] {
        let input = serde_json::from_value(json!({"path": path, "args": ["a"]})).unwrap();
        let out = bash.script(&ctx, input).await.unwrap();
        assert_eq!(out.exit_code, Some(0), "{path}: {out:?}");
        assert_eq!(out.stdout, expected, "{path}");
    }
    let input = serde_json::from_value(json!({"command": "cat plain.sh"})).unwrap();
    let out = bash.exec(&ctx, input).await.unwrap();
    assert_eq!(out.stdout, "echo \"plain $1\"\n");
}

/// On timeout, a process left behind that handles SIGTERM gets the grace period to finish
/// its cleanup, as the command itself does; it is not killed as soon as the command ends.
#[tokio::test]
async fn base_1_on_timeout_a_leftover_gets_the_grace_to_clean_up() {
    let kit = TestKit::with_tools([Bash::new(BashPolicy {
        kill_grace: Duration::from_secs(20),
        ..BashPolicy::default()
    })
    .into_tool()])
    .unwrap();
    let command = "sh -c 'trap \"sleep 0.3; echo done > cleaned; exit 0\" TERM; \
                   touch ready; while :; do sleep 0.05; done' & \
                   while [ ! -e ready ]; do sleep 0.01; done; sleep 30";
    let r = kit
        .call("bash__exec", json!({"command": command, "timeoutMs": 1000}))
        .await;
    let out = r.assert_ok();
    assert_eq!(out["timedOut"], true);
    assert_eq!(out["signal"], "SIGTERM", "the command ends on SIGTERM");
    let cleaned = std::fs::read_to_string(kit.workdir().join("cleaned"));
    assert_eq!(
        cleaned.ok().as_deref(),
        Some("done\n"),
        "the leftover finished its cleanup before the call returned"
    );
}
