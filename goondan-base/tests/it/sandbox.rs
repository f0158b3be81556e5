//! The sandbox of `bash`: a suite of real processes trying to get out and failing,
//! and the other half, what a user needs still working.

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use goondan_base::sandbox::{DEFAULT_MEMORY, Limits, SandboxMode, SandboxPolicy};
use goondan_base::{Bash, BashPolicy};
use goondan_runtime::testing::{ResultAssertions, TestKit};
use goondan_runtime::{IntoTool, ToolCallResult, ToolContext};
use serde_json::{Value, json};

fn kit_with(sandbox: SandboxPolicy) -> TestKit {
    let policy = BashPolicy {
        sandbox,
        kill_grace: Duration::from_millis(300),
        ..BashPolicy::default()
    };
    TestKit::with_tools([Bash::new(policy).into_tool()]).unwrap()
}

fn kit() -> TestKit {
    kit_with(SandboxPolicy::default())
}

/// Runs `command` with bash__exec and gives its output (the call itself must succeed).
async fn exec(kit: &TestKit, command: &str) -> Value {
    kit.call(
        "bash__exec",
        json!({"command": command, "timeoutMs": 20000}),
    )
    .await
    .assert_ok()
    .clone()
}

fn stdout(out: &Value) -> &str {
    out["stdout"].as_str().unwrap_or_default()
}

/// A file outside the workdir, with content the command must never see.
struct Outside {
    dir: tempfile::TempDir,
}

impl Outside {
    const SECRET: &'static str = "the-outside-secret-4711";

    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("secret"), Self::SECRET).unwrap();
        Self { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn secret(&self) -> String {
        self.path("secret").display().to_string()
    }
}

#[tokio::test]
async fn sbx_the_sandbox_is_on_by_default_and_the_command_still_runs() {
    let kit = TestKit::with_tools([Bash::default().into_tool()]).unwrap();
    let out = exec(
        &kit,
        "echo hi; readlink /proc/self/ns/net; cat /proc/1/comm",
    )
    .await;
    assert_eq!(out["exitCode"], 0, "{out}");
    let text = stdout(&out);
    assert!(text.starts_with("hi\n"), "{out}");
    let host_net = std::fs::read_link("/proc/self/ns/net").unwrap();
    assert!(
        !text.contains(host_net.to_str().unwrap()),
        "a network namespace of its own: {out}"
    );
    assert!(
        text.contains("goondan-sandbox") || !text.ends_with("systemd\n"),
        "PID 1 inside is the helper, not the host's init: {out}"
    );
}

#[tokio::test]
async fn sbx_secrets_in_the_home_directory_are_out_of_reach() {
    let home = PathBuf::from(std::env::var_os("HOME").unwrap());
    let secret = home.join(format!(".goondan-sbx-secret-{}", std::process::id()));
    std::fs::write(&secret, "home-secret-0815").unwrap();
    let kit = kit();
    let out = exec(
        &kit,
        &format!("cat {s}; ls -a \"$HOME\"; cat \"$HOME\"/.ssh/* \"$HOME\"/.cargo/credentials*; echo done", s = secret.display()),
    )
    .await;
    std::fs::remove_file(&secret).unwrap();
    assert!(!stdout(&out).contains("home-secret-0815"), "{out}");
    assert!(
        !stdout(&out).contains(".goondan-sbx-secret"),
        "the home directory cannot even be listed: {out}"
    );
    assert!(stdout(&out).ends_with("done\n"), "{out}");
}

#[tokio::test]
async fn sbx_the_state_directory_and_the_bundle_are_out_of_reach_even_inside_the_workdir() {
    // As in `goondan run`: the state directory holds the workspace; here a bundle and a
    // journal lie inside the workdir itself too.
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().canonicalize().unwrap();
    std::fs::write(state_dir.join("tokens.json"), "token-secret").unwrap();
    let wd = state_dir.join("workspace");
    std::fs::create_dir(&wd).unwrap();
    std::fs::write(wd.join("goondan.yaml"), "policy: {sandbox: workspace}").unwrap();
    std::fs::create_dir(wd.join(".state")).unwrap();
    std::fs::write(wd.join(".state/journal.sqlite"), "journal-secret").unwrap();
    let sandbox = SandboxPolicy::default()
        .deny(&state_dir)
        .unwrap()
        .deny(wd.join("goondan.yaml"))
        .unwrap()
        .deny(wd.join(".state"))
        .unwrap();
    let bash = Bash::new(BashPolicy {
        sandbox,
        ..BashPolicy::default()
    });
    let ctx = ToolContext::builder(&wd).build();
    let input = serde_json::from_value(json!({
        "command": "cat goondan.yaml; echo 'policy: {sandbox: off}' > goondan.yaml; \
                    cat .state/journal.sqlite; rm -f .state/journal.sqlite; echo x > .state/new; \
                    cat ../tokens.json; ls ..; echo done"
    }))
    .unwrap();
    let out = serde_json::to_value(bash.exec(&ctx, input).await.unwrap()).unwrap();
    assert!(stdout(&out).ends_with("done\n"), "{out}");
    for secret in [
        "journal-secret",
        "token-secret",
        "sandbox: workspace",
        "tokens.json",
    ] {
        assert!(!stdout(&out).contains(secret), "{secret}: {out}");
    }
    assert_eq!(
        std::fs::read_to_string(wd.join("goondan.yaml")).unwrap(),
        "policy: {sandbox: workspace}"
    );
    assert_eq!(
        std::fs::read_to_string(wd.join(".state/journal.sqlite")).unwrap(),
        "journal-secret"
    );
    assert!(!wd.join(".state/new").exists());
}

#[tokio::test]
async fn sbx_writes_outside_the_workdir_fail_by_dot_dot_absolute_paths_and_links() {
    let outside = Outside::new();
    let kit = kit();
    let target = outside.path("written");
    let dir = outside.dir.path().display().to_string();
    let unique = format!(
        "goondan-sbx-escape-{}",
        kit.workdir().file_name().unwrap().to_string_lossy()
    );
    let script = format!(
        "echo x > ../{unique}; echo x > {t}; echo x > /tmp/{unique}; \
         ln -s {dir} link; echo x > link/written; \
         ln {s} hard; echo x >> hard; \
         ln -s {s} soft; echo x >> soft; \
         touch /etc/goondan-sbx-write-probe; echo done",
        t = target.display(),
        s = outside.secret(),
    );
    let out = exec(&kit, &script).await;
    let leaked = Path::new("/etc/goondan-sbx-write-probe");
    let wrote = leaked.exists();
    let _ = std::fs::remove_file(leaked);
    assert!(!wrote, "{out}");
    assert!(stdout(&out).ends_with("done\n"), "{out}");
    assert!(!target.exists(), "{out}");
    assert_eq!(
        std::fs::read_to_string(outside.path("secret")).unwrap(),
        Outside::SECRET,
        "{out}"
    );
    let parent = kit.workdir().parent().unwrap().join(&unique);
    let escaped = parent.exists() || Path::new("/tmp").join(&unique).exists();
    let _ = std::fs::remove_file(&parent);
    let _ = std::fs::remove_file(Path::new("/tmp").join(&unique));
    assert!(!escaped, "{out}");
}

#[tokio::test]
async fn sbx_links_made_inside_the_workdir_read_nothing_outside() {
    let outside = Outside::new();
    let kit = kit();
    let out = exec(
        &kit,
        &format!(
            "ln -s {s} soft; cat soft; ln {s} hard; cat hard; ln -s / root; cat root{s}; echo done",
            s = outside.secret()
        ),
    )
    .await;
    assert!(stdout(&out).ends_with("done\n"), "{out}");
    assert!(!stdout(&out).contains(Outside::SECRET), "{out}");
}

#[tokio::test]
async fn sbx_loopback_tcp_and_the_hosts_unix_sockets_are_unreachable() {
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let port = tcp.local_addr().unwrap().port();
    let outside = tempfile::tempdir().unwrap();
    let sock = outside.path().join("host.sock");
    let unix = UnixListener::bind(&sock).unwrap();
    unix.set_nonblocking(true).unwrap();
    let kit = kit();
    let script = format!(
        "bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' && echo TCP-REACHED; \
         python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"{sock}\"); print(\"UNIX-REACHED\")'; \
         python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"\\0goondan-sbx-abstract\"); print(\"ABSTRACT-REACHED\")'; \
         echo done",
        sock = sock.display()
    );
    let abstract_listener = abstract_socket("goondan-sbx-abstract");
    let out = exec(&kit, &script).await;
    assert!(stdout(&out).ends_with("done\n"), "{out}");
    assert!(!stdout(&out).contains("REACHED"), "{out}");
    assert!(tcp.accept().is_err(), "no connection reached the listener");
    assert!(unix.accept().is_err(), "no connection reached the socket");
    if let Some(listener) = abstract_listener {
        assert!(listener.accept().is_err());
    }
}

/// A listener on an abstract Unix socket of the host's network namespace (Linux only).
fn abstract_socket(name: &str) -> Option<UnixListener> {
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name).ok()?;
    let listener = UnixListener::bind_addr(&addr).ok()?;
    listener.set_nonblocking(true).ok()?;
    Some(listener)
}

#[tokio::test]
async fn sbx_other_processes_cannot_be_signalled_traced_or_read() {
    let mut victim = Command::new("sleep")
        .arg("600")
        .env("VICTIM_SECRET", "victim-secret-99")
        .spawn()
        .unwrap();
    let pid = victim.id();
    let kit = kit();
    let script = format!(
        "kill -TERM {pid} && echo KILLED; cat /proc/{pid}/environ; \
         cat /proc/{pid}/cmdline; ls /proc | grep -c '^[0-9]'; echo done"
    );
    let out = exec(&kit, &script).await;
    let still_running = victim.try_wait().unwrap().is_none();
    let _ = victim.kill();
    let _ = victim.wait();
    assert!(still_running, "the host's process survived: {out}");
    let text = stdout(&out);
    assert!(!text.contains("KILLED"), "{out}");
    assert!(!text.contains("victim-secret-99"), "{out}");
    assert!(!text.contains("600"), "{out}");
}

#[tokio::test]
async fn sbx_mounts_namespaces_and_kernel_keys_are_refused() {
    let kit = kit();
    std::fs::create_dir(kit.workdir().join("m")).unwrap();
    let out = exec(
        &kit,
        "mount -t tmpfs none m && echo MOUNTED; unshare -U true && echo UNSHARED; \
         unshare -n true && echo UNSHARED; nsenter -t 1 -m true && echo ENTERED; \
         python3 -c 'import ctypes, os; libc = ctypes.CDLL(None); print(\"KEYCTL\", libc.syscall(250, 0, 0, 0, 0, 0))'; \
         echo done",
    )
    .await;
    let text = stdout(&out);
    if text.contains("MOUNTED") {
        let _ = Command::new("umount").arg(kit.workdir().join("m")).status();
    }
    assert!(text.ends_with("done\n"), "{out}");
    assert!(!text.contains("MOUNTED"), "{out}");
    assert!(!text.contains("UNSHARED"), "{out}");
    assert!(!text.contains("ENTERED"), "{out}");
    assert!(text.contains("KEYCTL -1"), "keyctl is refused: {out}");
}

#[tokio::test]
async fn sbx_root_gains_nothing_over_the_host() {
    let kit = kit();
    let out = exec(
        &kit,
        "cat /etc/shadow | grep -c : ; touch /etc/goondan-sbx-root-probe && echo WROTE; \
         ip link add goondansbx type dummy 2>/dev/null && echo LINKED; \
         cat /proc/sys/kernel/sysrq > /dev/null && echo $(cat /proc/sys/kernel/sysrq) > /proc/sys/kernel/sysrq 2>/dev/null && echo SYSCTL; echo done",
    )
    .await;
    let leaked = Path::new("/etc/goondan-sbx-root-probe");
    let wrote = leaked.exists();
    let _ = std::fs::remove_file(leaked);
    assert!(!wrote, "{out}");
    let text = stdout(&out);
    assert!(text.ends_with("done\n"), "{out}");
    assert!(text.starts_with("0\n"), "/etc/shadow is hidden: {out}");
    assert!(!text.contains("WROTE"), "{out}");
    assert!(!text.contains("SYSCTL"), "{out}");
    let host_links = Command::new("ip")
        .args(["link", "show", "goondansbx"])
        .output();
    assert!(
        host_links.map_or(true, |o| !o.status.success()),
        "no link was made on the host"
    );
}

#[test]
fn sbx_the_hosts_environment_secrets_do_not_reach_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_goondan"))
        .args([
            "tools",
            "call",
            "bash__exec",
            r#"{"command": "env"}"#,
            "--json",
        ])
        .arg("--workdir")
        .arg(dir.path())
        .env("GITHUB_TOKEN", "gh-secret-1")
        .env("ACME_UNGUESSABLE_NAME", "acme-secret-2")
        .env("LANG", "C.UTF-8")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}");
    assert!(!text.contains("gh-secret-1"), "{text}");
    assert!(!text.contains("acme-secret-2"), "{text}");
    assert!(text.contains("LANG=C.UTF-8"), "{text}");
    assert!(text.contains("TMPDIR="), "{text}");
}

#[tokio::test]
async fn sbx_the_calls_own_env_reaches_the_command_and_tmpdir_is_private() {
    let kit = kit();
    let out = kit
        .call(
            "bash__exec",
            json!({"command": "echo $GOONDAN_EXTRA; echo $TMPDIR", "env": {"GOONDAN_EXTRA": "yes"}}),
        )
        .await
        .assert_ok()
        .clone();
    let lines: Vec<&str> = stdout(&out).lines().collect();
    assert_eq!(lines[0], "yes", "{out}");
    let tmpdir = PathBuf::from(lines[1]);
    assert!(
        tmpdir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("call-")),
        "{out}"
    );
    assert!(
        !tmpdir.exists(),
        "the private TMPDIR is removed after the call: {out}"
    );
}

/// The host pid of the parent of the process whose command line holds `marker`.
fn parent_of(marker: &str) -> Option<i32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            if !String::from_utf8_lossy(&cmdline).contains(marker) {
                return None;
            }
            let status = std::fs::read_to_string(entry.path().join("status")).ok()?;
            status
                .lines()
                .find_map(|line| line.strip_prefix("PPid:"))?
                .trim()
                .parse()
                .ok()
        })
}

/// A warm sandbox that does not start a command (here: its first process stopped) fails the
/// call at the call's timeout with a structured error, and the tool works again once it does.
#[tokio::test]
async fn sbx_a_stuck_warm_sandbox_fails_the_call_at_its_timeout() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let kit = kit();
    // A command of a call running in the sandbox, whose parent is the sandbox's first process.
    let marker = format!("3.{}1", std::process::id());
    let held = kit.call(
        "bash__exec",
        json!({"command": format!("sleep {marker}"), "timeoutMs": 20000}),
    );
    let stuck = async {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let first = loop {
            if let Some(parent) = parent_of(&marker) {
                break Pid::from_raw(parent);
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the command never ran"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        kill(first, Signal::SIGSTOP).unwrap();
        let started = std::time::Instant::now();
        let result = kit
            .call(
                "bash__exec",
                json!({"command": "echo late", "timeoutMs": 1000}),
            )
            .await;
        let waited = started.elapsed();
        kill(first, Signal::SIGCONT).unwrap();
        (result, waited)
    };
    let (held, (result, waited)) = tokio::join!(held, stuck);
    held.assert_ok();
    let err = result.assert_error("E_SANDBOX_UNAVAILABLE");
    assert!(
        err.message()
            .contains("did not start the command within the call's timeout"),
        "{err:?}"
    );
    assert!(waited < Duration::from_secs(15), "{waited:?}");
    assert_eq!(stdout(&exec(&kit, "echo again").await), "again\n");
}

#[tokio::test]
async fn sbx_a_tools_calls_share_a_warm_sandbox_but_not_their_tmpdirs_nor_signals() {
    let kit = kit();
    let first = exec(
        &kit,
        "readlink /proc/self/ns/pid /proc/self/ns/mnt; echo \"$TMPDIR\"",
    )
    .await;
    // A command still running beside the second call, with a file in its TMPDIR.
    let held = kit.call(
        "bash__exec",
        json!({"command": "echo held > \"$TMPDIR/held\"; sleep 3", "timeoutMs": 20000}),
    );
    let second = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        exec(
            &kit,
            "readlink /proc/self/ns/pid /proc/self/ns/mnt; echo \"$TMPDIR\"; \
             ls \"$(dirname \"$TMPDIR\")\" && echo LISTED; \
             cat \"$(dirname \"$TMPDIR\")\"/*/held && echo READ; \
             touch \"$(dirname \"$TMPDIR\")/x\" && echo WROTE; \
             kill -KILL -1; \
             cat /proc/1/environ && echo ENVIRON; cat /proc/1/maps && echo MAPS; echo done",
        )
        .await
    };
    let (held, second) = tokio::join!(held, second);
    // Another call's signal never reached it.
    let held = held.assert_ok();
    assert_eq!(held["exitCode"], 0, "{held}");
    let (a, b): (Vec<&str>, Vec<&str>) = (
        stdout(&first).lines().collect(),
        stdout(&second).lines().collect(),
    );
    assert_eq!(a[..2], b[..2], "the same namespaces: {first} {second}");
    assert_ne!(a[2], b[2], "a TMPDIR of each call's own");
    let text = stdout(&second);
    for leak in ["LISTED", "READ", "WROTE", "held\n", "ENVIRON", "MAPS"] {
        assert!(!text.contains(leak), "{leak}: {second}");
    }
    assert!(text.ends_with("done\n"), "{second}");
    // Another tool has a sandbox of its own.
    let other = exec(&self::kit(), "readlink /proc/self/ns/pid").await;
    assert_ne!(stdout(&other).trim(), a[0], "{other}");
}

#[tokio::test]
async fn sbx_what_a_user_needs_still_works() {
    let kit = kit();
    std::fs::write(
        kit.workdir().join("s.sh"),
        "echo script-ran > out.txt; cat out.txt",
    )
    .unwrap();
    let script = kit
        .call("bash__script", json!({"path": "s.sh"}))
        .await
        .assert_ok()
        .clone();
    assert_eq!(stdout(&script), "script-ran\n", "{script}");
    let out = exec(
        &kit,
        "set -e; echo tmp > \"$TMPDIR/t\"; cat \"$TMPDIR/t\"; \
         python3 -c 'print(6 * 7)'; \
         git init -q repo && cd repo && git status --short && echo git-ok; \
         ls /usr/bin/env >/dev/null && echo done",
    )
    .await;
    assert_eq!(out["exitCode"], 0, "{out}");
    assert_eq!(stdout(&out), "tmp\n42\ngit-ok\ndone\n", "{out}");
}

#[tokio::test]
async fn sbx_read_only_mode_writes_only_the_private_tmpdir() {
    let kit = kit_with(SandboxPolicy::new(SandboxMode::ReadOnly));
    std::fs::write(kit.workdir().join("in.txt"), "readable").unwrap();
    let out = exec(
        &kit,
        "cat in.txt; echo; echo x > out.txt && echo WROTE; echo t > \"$TMPDIR/t\" && echo tmp-ok",
    )
    .await;
    assert_eq!(stdout(&out), "readable\ntmp-ok\n", "{out}");
    assert!(!kit.workdir().join("out.txt").exists());
}

#[tokio::test]
async fn sbx_paths_a_policy_names_are_opened() {
    let outside = Outside::new();
    let sandbox = SandboxPolicy::default()
        .read(outside.dir.path().to_str().unwrap())
        .unwrap();
    let kit = kit_with(sandbox);
    let out = exec(
        &kit,
        &format!(
            "cat {}; echo x > {}/w",
            outside.secret(),
            outside.dir.path().display()
        ),
    )
    .await;
    assert_eq!(stdout(&out), Outside::SECRET, "read, not written: {out}");
    assert!(!outside.path("w").exists());
}

#[tokio::test]
async fn sbx_fails_closed_without_its_helper() {
    let kit = kit_with(SandboxPolicy::default().helper("/nonexistent/goondan-sandbox"));
    let r = kit
        .call("bash__exec", json!({"command": "touch ran"}))
        .await;
    r.assert_error("E_SANDBOX_UNAVAILABLE");
    assert!(!kit.workdir().join("ran").exists());
}

#[test]
fn sbx_fails_closed_where_the_kernel_refuses_namespaces() {
    // A user namespace of the test's own where no further user namespace may be made: the
    // helper cannot set the sandbox up, so the call is refused and nothing runs.
    let dir = tempfile::tempdir().unwrap();
    let goondan = env!("CARGO_BIN_EXE_goondan");
    let script = format!(
        "echo 0 > /proc/sys/user/max_user_namespaces || exit 99; \
         exec {goondan} tools call bash__exec '{{\"command\": \"touch ran\"}}' --json --workdir {wd}",
        wd = dir.path().display()
    );
    let output = Command::new("unshare")
        .args(["--user", "--map-root-user", "sh", "-c", &script])
        .output()
        .unwrap();
    assert_ne!(output.status.code(), Some(99), "{output:?}");
    let mut text = String::new();
    output.stdout.as_slice().read_to_string(&mut text).unwrap();
    assert!(text.contains("E_SANDBOX_UNAVAILABLE"), "{text} {output:?}");
    assert!(!dir.path().join("ran").exists());
}

fn goondan(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_goondan"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn sbx_goondan_sandbox_check_says_what_this_machine_enforces() {
    let dir = tempfile::tempdir().unwrap();
    let wd = dir.path().to_str().unwrap();
    let o = goondan(&["sandbox", "check", "--workdir", wd]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("landlock         ABI "), "{text}");
    assert!(
        text.contains("ready: `true` ran in the workspace sandbox"),
        "{text}"
    );
    // This machine (and CI) enforces the memory and process limits, through cgroup v1 or v2.
    assert!(text.contains("limits of each call:"), "{text}");
    for limit in [
        "memory         4 GiB (default)",
        "processes      4096 (default)",
    ] {
        let line = text.lines().find(|l| l.trim_start().starts_with(limit));
        assert!(
            line.is_some_and(|l| l.contains("cgroup v")),
            "{limit}: {text}"
        );
    }
    let o = goondan(&["sandbox", "check", "--json", "--workdir", wd]);
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["ready"], true, "{report}");
    assert_eq!(report["probe"], Value::Null, "{report}");
    let limits = report["limits"].as_array().unwrap();
    assert_eq!(limits.len(), 3, "{report}");
    for limit in &limits[..2] {
        assert!(
            ["v1", "v2"].contains(&limit["cgroup"].as_str().unwrap_or_default()),
            "{report}"
        );
        assert_eq!(limit["set"], false, "{report}");
    }

    // Where no user namespace may be made, check says so and exits 1.
    let script = format!(
        "echo 0 > /proc/sys/user/max_user_namespaces || exit 99; exec {} sandbox check --workdir {wd}",
        env!("CARGO_BIN_EXE_goondan")
    );
    let o = Command::new("unshare")
        .args(["--user", "--map-root-user", "sh", "-c", &script])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("user namespaces  off"), "{text}");
    assert!(text.contains("not ready: "), "{text}");
}

const BASH_AGENT: &str = "apiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: a}\nspec:\n  tools:\n    - ref: {kind: Tool, name: bash, package: \"@goondan/base\"}\n";

#[test]
fn sbx_a_bundles_policy_sandbox_and_the_command_line_choose_the_mode() {
    let dir = tempfile::tempdir().unwrap();
    let wd = dir.path().join("wd");
    std::fs::create_dir(&wd).unwrap();
    let bundle = dir.path().join("goondan.yaml");
    std::fs::write(
        &bundle,
        format!("{BASH_AGENT}  policy:\n    sandbox: read-only\n"),
    )
    .unwrap();
    let call = |extra: &[&str], file: &str| {
        let mut args = vec![
            "tools",
            "call",
            "bash__exec",
            "--bundle",
            bundle.to_str().unwrap(),
            "--workdir",
            wd.to_str().unwrap(),
            "--json",
        ];
        args.extend_from_slice(extra);
        let command = format!(r#"{{"command": "echo x > {file}; cat ../goondan.yaml"}}"#);
        args.insert(3, &*Box::leak(command.into_boxed_str()));
        goondan(&args)
    };
    // read-only: the workdir is not written; the bundle is out of reach.
    let o = call(&[], "ro");
    let result: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(result["status"], "ok", "{result}");
    assert!(!wd.join("ro").exists(), "{result}");
    assert!(
        !result["output"]["stdout"]
            .as_str()
            .unwrap()
            .contains("policy"),
        "{result}"
    );
    // The command line wins over the bundle.
    let o = call(&["--sandbox", "workspace"], "ws");
    assert!(o.status.success());
    assert!(wd.join("ws").exists());
    // A bundle's sandbox that cannot be used stops the command with a clear error.
    std::fs::write(
        &bundle,
        format!("{BASH_AGENT}  policy:\n    sandbox: {{mode: workspace, read: [relative/path]}}\n"),
    )
    .unwrap();
    let o = call(&[], "bad");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("relative/path") && err.contains("absolute"),
        "{err}"
    );
    assert!(!wd.join("bad").exists());
}

/// Whether a process whose command line holds `marker` is still running (zombies aside).
fn running(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        let dir = entry.path();
        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'));
        !zombie && String::from_utf8_lossy(&cmdline).contains(marker)
    })
}

#[test]
fn sbx_a_call_s_processes_end_when_the_process_that_started_it_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!(
        "77{}.{}",
        std::process::id(),
        dir.path().to_string_lossy().len()
    );
    let command = format!(r#"{{"command": "touch started; sleep {marker}", "timeoutMs": 600000}}"#);
    let mut goondan = Command::new(env!("CARGO_BIN_EXE_goondan"))
        .args(["tools", "call", "bash__exec", &command, "--workdir"])
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !dir.path().join("started").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(running(&marker), "the command runs");
    // SIGKILL: no handler, no destructor runs in the agent.
    goondan.kill().unwrap();
    goondan.wait().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while running(&marker) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !running(&marker),
        "the command outlived the process that started it"
    );
}

/// `goondan run FILE --input go --approve never`, with `--sandbox MODE` when `flag` names one,
/// in the bundle's directory, within a minute.
async fn run_once(file: &std::path::Path, flag: Option<&str>) -> std::process::Output {
    use crate::run_support::{KEY, goondan};
    let mut args = vec![
        "run",
        file.to_str().unwrap(),
        "--input",
        "go",
        "--approve",
        "never",
    ];
    if let Some(mode) = flag {
        args.extend(["--sandbox", mode]);
    }
    let out = tokio::process::Command::new(goondan())
        .args(&args)
        .env("GOONDAN_TEST_KEY", KEY)
        .current_dir(file.parent().unwrap())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .unwrap()
        .unwrap()
}

/// `goondan run`'s agent processes take their Agent's `policy.sandbox`, `--sandbox` replaces
/// its mode, and the state directory around the workspace stays out of reach.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sbx_goondan_run_s_agents_take_the_bundle_s_sandbox_and_the_flag() {
    use crate::run_support::{bundle_with, call, text};
    use goondan_test_peers::replay::ReplayServer;
    let command = "echo x > made.txt; echo x > ../evil.txt; ls .. > listing.txt; echo done";
    for (flag, written) in [(None, false), (Some("workspace"), true)] {
        let server = ReplayServer::start([
            call("call_b", "bash__exec", &json!({"command": command})),
            text(&["ran it"]),
        ])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let file = bundle_with(dir.path(), &server, &["bash"], None);
        let mut yaml = std::fs::read_to_string(&file).unwrap();
        yaml.push_str("  policy:\n    sandbox: read-only\n");
        std::fs::write(&file, yaml).unwrap();
        let out = run_once(&file, flag).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(stderr.contains("✓ bash__exec"), "the command ran: {stderr}");
        let workspace = dir.path().join(".goondan/workspace");
        assert_eq!(
            workspace.join("made.txt").exists(),
            written,
            "{flag:?}: {stderr}"
        );
        assert!(
            !dir.path().join(".goondan/evil.txt").exists(),
            "{flag:?}: {stderr}"
        );
        if written {
            // The workspace's parent, the state directory, is not there for the command.
            let listing = std::fs::read_to_string(workspace.join("listing.txt")).unwrap();
            assert!(
                !listing.contains("conversations") && !listing.contains("journal"),
                "{listing}"
            );
        }
    }
}

#[tokio::test]
async fn sbx_a_command_cannot_leave_its_calls_cgroup() {
    let kit = kit();
    let marker = format!(
        "78{}.{}",
        std::process::id(),
        kit.workdir().to_string_lossy().len()
    );
    // The ways out of a cgroup: the host's cgroup file systems, at their usual places, and any
    // cgroup2 mount it could make.
    let script = format!(
        "for procs in /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/unified/cgroup.procs \
                      /sys/fs/cgroup/pids/cgroup.procs; do \
           (sleep {marker} & echo $! > \"$procs\" && echo MOVED; wait) & done; \
         mkdir -p cg && mount -t cgroup2 none cg && echo MOUNTED; sleep 0.2; echo done"
    );
    let out = exec(&kit, &script).await;
    let text = stdout(&out);
    if text.contains("MOUNTED") {
        let _ = Command::new("umount")
            .arg(kit.workdir().join("cg"))
            .status();
    }
    assert!(text.ends_with("done\n"), "{out}");
    assert!(
        !text.contains("MOVED") && !text.contains("MOUNTED"),
        "{out}"
    );
    // Nothing it started outlives the call.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while running(&marker) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!running(&marker), "{out}");
}

/// A plain HTTP server on the host's loopback answering every request with `body`, and the
/// number of requests it served.
struct TestServer {
    port: u16,
    served: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl TestServer {
    fn start(body: &'static str) -> Self {
        use std::io::Write;
        use std::sync::atomic::Ordering;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = std::sync::Arc::clone(&served);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                count.fetch_add(1, Ordering::SeqCst);
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Self { port, served }
    }

    fn served(&self) -> usize {
        self.served.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// A sandbox whose network allow-list holds `allowed.test` and `*.allowed.test`, names that
/// resolve (by a fixed table) to the host's loopback, where the test server is, and
/// `private.test`, which resolves to a private address.
fn networked(allow_loopback: bool) -> TestKit {
    use goondan_base::http_fetch::{HttpPolicy, StaticResolver};
    let loopback = ["127.0.0.1".parse().unwrap()];
    let resolver = StaticResolver::new()
        .with("allowed.test", loopback)
        .with("api.allowed.test", loopback)
        .with("other.test", loopback)
        .with("private.test", ["10.1.2.3".parse().unwrap()]);
    let mut rules = HttpPolicy::default().resolver(resolver);
    if allow_loopback {
        rules = rules.allow_loopback();
    }
    let policy = SandboxPolicy::default()
        .allow_host("allowed.test")
        .unwrap()
        .allow_host("*.allowed.test")
        .unwrap()
        .allow_host("private.test")
        .unwrap()
        .address_rules(rules);
    kit_with(policy)
}

fn refused(out: &Value) -> String {
    out["networkRefused"].to_string()
}

#[tokio::test]
async fn sbx_a_download_through_the_proxy_from_an_allowed_host_works() {
    let server = TestServer::start("through-the-proxy");
    let kit = networked(true);
    let port = server.port;
    let out = exec(
        &kit,
        &format!(
            "set -e; echo \"$https_proxy\"; \
             curl -sS --max-time 10 http://allowed.test:{port}/plain; echo; \
             curl -sS --max-time 10 --proxytunnel http://api.allowed.test:{port}/tunnel; echo; \
             python3 -c 'import urllib.request; print(urllib.request.urlopen(\"http://allowed.test:{port}/py\", timeout=10).read().decode())'"
        ),
    )
    .await;
    assert_eq!(out["exitCode"], 0, "{out}");
    // The call's own proxy, on a port of the sandbox's loopback.
    let text = stdout(&out);
    let (proxy, rest) = text.split_once('\n').unwrap();
    let proxy_port: u16 = proxy
        .strip_prefix("http://127.0.0.1:")
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(proxy_port > 0, "{out}");
    assert_eq!(
        rest, "through-the-proxy\nthrough-the-proxy\nthrough-the-proxy\n",
        "{out}"
    );
    assert_eq!(server.served(), 3, "{out}");
    assert!(out.get("networkRefused").is_none(), "{out}");
}

#[tokio::test]
async fn sbx_the_proxy_refuses_names_off_the_list_private_addresses_and_bare_ips() {
    let server = TestServer::start("must-not-arrive");
    let port = server.port;
    let kit = networked(true);
    let out = exec(
        &kit,
        &format!(
            "curl -sS --max-time 10 http://other.test:{port}/a; echo \" code=$?\"; \
             curl -sS --max-time 10 --proxytunnel http://private.test:{port}/b; echo \" code=$?\"; \
             curl -sS --max-time 10 --proxytunnel http://127.0.0.1:{port}/c; echo \" code=$?\"; \
             curl -sS --max-time 10 http://127.0.0.1:{port}/d; echo \" code=$?\"; \
             curl -sS --max-time 10 --proxytunnel http://allowed.test.other.test:{port}/e; echo \" code=$?\""
        ),
    )
    .await;
    assert!(!stdout(&out).contains("must-not-arrive"), "{out}");
    assert_eq!(server.served(), 0, "{out}");
    let why = refused(&out);
    assert!(
        why.contains("`other.test` is not in the sandbox's network allow-list"),
        "{out}"
    );
    assert!(why.contains("10.1.2.3 is a private address"), "{out}");
    assert!(why.contains("names an address (127.0.0.1)"), "{out}");
    assert!(
        why.contains("`allowed.test.other.test` is not in the sandbox's network allow-list"),
        "{out}"
    );
    // The refusal reaches the client too, as the proxy's answer.
    assert!(stdout(&out).contains("goondan sandbox:"), "{out}");

    // Loopback is refused like any private address unless the address rules allow it.
    let strict = networked(false);
    let out = exec(
        &strict,
        &format!("curl -sS --max-time 10 http://allowed.test:{port}/f; echo \" code=$?\""),
    )
    .await;
    assert!(!stdout(&out).contains("must-not-arrive"), "{out}");
    assert!(
        refused(&out).contains("127.0.0.1 is a loopback address"),
        "{out}"
    );
    assert_eq!(server.served(), 0, "{out}");
}

#[tokio::test]
async fn sbx_two_calls_at_once_each_see_only_their_own_refusals() {
    let server = TestServer::start("must-not-arrive");
    let port = server.port;
    let kit = networked(true);
    // Each call is refused a name of its own, while the other runs.
    let command = |name: &str| {
        format!("sleep 0.5; curl -sS --max-time 10 http://{name}:{port}/x; sleep 1; echo done")
    };
    let (first, second) = (command("first.test"), command("second.test"));
    let (first, second) = tokio::join!(exec(&kit, &first), exec(&kit, &second));
    assert_eq!(server.served(), 0);
    for (out, own, other) in [
        (&first, "first.test", "second.test"),
        (&second, "second.test", "first.test"),
    ] {
        assert!(stdout(out).ends_with("done\n"), "{out}");
        let why = refused(out);
        assert!(why.contains(&format!("`{own}` is not")), "{out}");
        assert!(!why.contains(other), "another call's refusal: {out}");
    }
}

#[tokio::test]
async fn sbx_nothing_leaves_but_through_the_proxy_no_dns_no_direct_connection() {
    let server = TestServer::start("must-not-arrive");
    let port = server.port;
    let kit = networked(true);
    let out = exec(
        &kit,
        &format!(
            "curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:{port}/direct && echo DIRECT-REACHED; \
             getent hosts allowed.test && echo DNS-ANSWERED; \
             python3 -c 'import socket; socket.getaddrinfo(\"example.com\", 80); print(\"RESOLVED\")'; \
             python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b\"x\", (\"8.8.8.8\", 53)); print(\"UDP-SENT\")'; \
             python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 443), timeout=5); print(\"TCP-OUT\")'; \
             echo done"
        ),
    )
    .await;
    let text = stdout(&out);
    assert!(text.ends_with("done\n"), "{out}");
    for escaped in [
        "DIRECT-REACHED",
        "DNS-ANSWERED",
        "RESOLVED",
        "UDP-SENT",
        "TCP-OUT",
    ] {
        assert!(!text.contains(escaped), "{escaped}: {out}");
    }
    assert_eq!(server.served(), 0, "{out}");
}

#[tokio::test]
async fn sbx_without_an_allow_list_there_is_no_proxy_and_no_way_out() {
    let server = TestServer::start("must-not-arrive");
    let out = exec(
        &kit(),
        &format!(
            "echo \"proxy=[$https_proxy]\"; curl -sS --max-time 5 -x http://127.0.0.1:3128 http://allowed.test:{}/ && echo REACHED; echo done",
            server.port
        ),
    )
    .await;
    assert!(stdout(&out).starts_with("proxy=[]\n"), "{out}");
    assert!(!stdout(&out).contains("REACHED"), "{out}");
    assert_eq!(server.served(), 0, "{out}");
}

/// A stdio MCP server in Python, speaking JSON-RPC lines: `read(path)` reads a file, `fetch(url)`
/// downloads through the proxies of its environment, `spawn(marker)` leaves a process running.
const PROBE_SERVER: &str = r#"
import json, subprocess, sys, urllib.error, urllib.request

def tool(name, arg):
    return {"name": name, "inputSchema": {"type": "object", "properties": {arg: {"type": "string"}}, "required": [arg]}}

def call(name, args):
    if name == "read":
        return open(args["path"]).read()
    if name == "fetch":
        try:
            return urllib.request.urlopen(args["url"], timeout=10).read().decode()
        except urllib.error.HTTPError as e:
            raise ValueError(e.read().decode())
    if name == "spawn":
        subprocess.Popen(["sh", "-c", "sleep 300; :", args["marker"]], start_new_session=True)
        return "spawned"
    raise ValueError(name)

for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion"), "capabilities": {"tools": {}}, "serverInfo": {"name": "probe", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [tool("read", "path"), tool("fetch", "url"), tool("spawn", "marker")]}
    elif method == "tools/call":
        try:
            result = {"content": [{"type": "text", "text": call(params["name"], params.get("arguments") or {})}]}
        except Exception as e:
            result = {"content": [{"type": "text", "text": repr(e)}], "isError": True}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"#;

/// An agent bridging the probe server, started through `launcher` when there is one.
struct BridgedProbe {
    agent: goondan_runtime::AgentInstance,
    executor: goondan_runtime::ToolExecutor,
    _dirs: Vec<tempfile::TempDir>,
}

impl BridgedProbe {
    async fn start(sandbox: Option<goondan_base::sandbox::ServerSandbox>) -> Self {
        use goondan_runtime::mcp::client::{McpExtension, McpExtensionConfig, McpServerConfig};
        use goondan_runtime::step::ScriptedModel;
        use goondan_runtime::tools::registry::ToolRegistry;
        use goondan_runtime::{AgentInstance, ToolExecutor};
        use std::sync::Arc;
        let scripts = tempfile::tempdir().unwrap();
        let script = scripts.path().join("probe.py");
        std::fs::write(&script, PROBE_SERVER).unwrap();
        // Run in the script's directory, which the sandbox opens for reading.
        let mut server = McpServerConfig::stdio("probe", "python3")
            .arg("probe.py")
            .cwd(scripts.path());
        if let Some(sandbox) = sandbox {
            server = server.launcher(sandbox);
        }
        let mcp = McpExtension::connect(McpExtensionConfig::new("mcp").server(server))
            .await
            .unwrap();
        let state = tempfile::tempdir().unwrap();
        let registry = Arc::new(ToolRegistry::new());
        let agent = AgentInstance::builder(
            "helper",
            Arc::clone(&registry),
            Arc::new(ScriptedModel::new([])),
        )
        .state_dir(state.path())
        .extension(mcp)
        .build()
        .unwrap();
        Self {
            agent,
            executor: ToolExecutor::new(registry),
            _dirs: vec![scripts, state],
        }
    }

    /// The text the tool answered, and whether it was an error.
    async fn call(&self, tool: &str, args: Value) -> (String, bool) {
        use goondan_runtime::ToolCall;
        let catalog = self.agent.base_catalog().unwrap();
        let ctx = ToolContext::builder(self.agent.workdir()).build();
        let result = self
            .executor
            .execute(ToolCall::new("c1", tool, args), &ctx, &catalog)
            .await;
        let value = serde_json::to_value(&result).unwrap();
        (value.to_string(), result.is_error())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sbx_a_bridged_stdio_mcp_server_runs_in_the_sandbox_of_its_own() {
    use goondan_base::http_fetch::{HttpPolicy, StaticResolver};
    use goondan_base::sandbox::ServerSandbox;
    let home = PathBuf::from(std::env::var_os("HOME").unwrap());
    let secret = home.join(format!(".goondan-sbx-mcp-secret-{}", std::process::id()));
    std::fs::write(&secret, "mcp-home-secret-4242").unwrap();
    let server = TestServer::start("served-to-the-server");
    let workdir = tempfile::tempdir().unwrap();
    std::fs::write(workdir.path().join("own.txt"), "its-own-file").unwrap();
    // Any public host by name, as a bridged server gets by default; here names resolve to the
    // host's loopback, where the test server is, and loopback is allowed for `allowed.test`.
    let rules = HttpPolicy::default()
        .resolver(StaticResolver::new().with("allowed.test", ["127.0.0.1".parse().unwrap()]))
        .allow_loopback();
    let policy = ServerSandbox::default_policy().address_rules(rules);
    let probe = BridgedProbe::start(Some(ServerSandbox::new(policy, workdir.path()))).await;

    let (text, failed) = probe
        .call("probe__read", json!({"path": secret.to_str().unwrap()}))
        .await;
    let own_file = workdir.path().join("own.txt");
    let (own, own_failed) = probe
        .call("probe__read", json!({"path": own_file.to_str().unwrap()}))
        .await;
    let (fetched, _) = probe
        .call(
            "probe__fetch",
            json!({"url": format!("http://allowed.test:{}/", server.port)}),
        )
        .await;
    let (direct, direct_failed) = probe
        .call(
            "probe__fetch",
            json!({"url": format!("http://127.0.0.1:{}/", server.port)}),
        )
        .await;
    let _ = std::fs::remove_file(&secret);
    assert!(failed && !text.contains("mcp-home-secret-4242"), "{text}");
    assert!(!own_failed && own.contains("its-own-file"), "{own}");
    assert!(fetched.contains("served-to-the-server"), "{fetched}");
    assert!(
        direct_failed && direct.contains("names an address"),
        "{direct}"
    );
    assert_eq!(server.served(), 1);

    // The other half: the same server with no sandbox reads the secret.
    std::fs::write(&secret, "mcp-home-secret-4242").unwrap();
    let open = BridgedProbe::start(None).await;
    let (text, _) = open
        .call("probe__read", json!({"path": secret.to_str().unwrap()}))
        .await;
    let _ = std::fs::remove_file(&secret);
    assert!(text.contains("mcp-home-secret-4242"), "{text}");
    drop(open);
}

/// `goondan run --sandbox` replaces the mode of every bridged stdio server's sandbox too: the
/// same bundle's server reads a secret of the home directory only with `--sandbox off`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sbx_goondan_run_s_flag_sets_the_bridged_servers_sandbox() {
    use crate::run_support::{call, replayed_model, text};
    use goondan_test_peers::replay::ReplayServer;
    let home = PathBuf::from(std::env::var_os("HOME").unwrap());
    let secret = home.join(format!(".goondan-sbx-flag-secret-{}", std::process::id()));
    std::fs::write(&secret, "flag-home-secret-5151").unwrap();
    let scripts = tempfile::tempdir().unwrap();
    std::fs::write(scripts.path().join("probe.py"), PROBE_SERVER).unwrap();
    let mut seen = Vec::new();
    for flag in [None, Some("off")] {
        let server = ReplayServer::start([
            call(
                "call_r",
                "probe__read",
                &json!({"path": secret.to_str().unwrap()}),
            ),
            text(&["read it"]),
        ])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let mut yaml = replayed_model(&server);
        yaml.push_str(&format!(
            r#"apiVersion: goondan.ai/v1
kind: Extension
metadata: {{name: mcp}}
spec:
  mcp:
    servers:
      - name: probe
        command: python3
        args: [probe.py]
        cwd: "{scripts}"
        sandbox: {{read: ["{scripts}"]}}
---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {{name: assistant}}
spec:
  modelConfig: {{modelRef: "Model/replayed"}}
  tools: []
  extensions: ["Extension/mcp"]
"#,
            scripts = scripts.path().display(),
        ));
        let file = dir.path().join("goondan.yaml");
        std::fs::write(&file, yaml).unwrap();
        let out = run_once(&file, flag).await;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        // What the server answered reaches the model in its second request.
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{stderr}");
        seen.push((requests[1].body.to_string(), stderr));
    }
    let _ = std::fs::remove_file(&secret);
    let (sandboxed, stderr) = &seen[0];
    assert!(!sandboxed.contains("flag-home-secret-5151"), "{sandboxed}");
    assert!(sandboxed.contains("probe__read"), "{sandboxed} {stderr}");
    let (open, stderr) = &seen[1];
    assert!(open.contains("flag-home-secret-5151"), "{open} {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sbx_a_bridged_server_s_processes_end_with_it() {
    use goondan_base::sandbox::ServerSandbox;
    let workdir = tempfile::tempdir().unwrap();
    let marker = format!("goondan-sbx-mcp-left-{}", std::process::id());
    let probe = BridgedProbe::start(Some(ServerSandbox::new(
        ServerSandbox::default_policy(),
        workdir.path(),
    )))
    .await;
    let (text, failed) = probe.call("probe__spawn", json!({"marker": marker})).await;
    assert!(!failed, "{text}");
    assert!(
        running(&marker),
        "the server's child runs while the server does: {text}"
    );
    drop(probe);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while running(&marker) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let left = running(&marker);
    if left {
        let _ = Command::new("pkill").arg("-f").arg(&marker).status();
    }
    assert!(!left, "a process the server started outlived the bridge");
}

#[test]
fn sbx_bad_sandbox_settings_are_errors_on_the_bundle_s_lines() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("goondan.yaml");
    let yaml = r#"apiVersion: goondan.ai/v1
kind: Extension
metadata: {name: mcp}
spec:
  mcp:
    servers:
      - name: good
        command: python3
        sandbox: {network: {allow: ["*", "crates.io"]}, read: ["/opt/data"]}
      - name: bad
        command: python3
        sandbox: {network: {allow: ["10.0.0.1"]}}
      - name: remote
        url: http://127.0.0.1:9/mcp
        sandbox: off
---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {name: assistant}
spec:
  tools: []
  extensions: ["Extension/mcp"]
  policy:
    sandbox: {mode: workspace, write: ["relative/path"]}
"#;
    std::fs::write(&bundle, yaml).unwrap();
    let out = goondan(&["validate", bundle.to_str().unwrap()]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    let line_of = |needle: &str| {
        yaml.lines()
            .position(|l| l.contains(needle))
            .map(|i| i + 1)
            .unwrap()
    };
    let has = |line: usize, what: &str| {
        text.lines()
            .any(|l| l.contains(&format!(":{line}")) && l.contains(what))
    };
    assert!(
        has(
            line_of("10.0.0.1"),
            "`10.0.0.1` cannot be in the sandbox's network allow-list"
        ),
        "{text}"
    );
    assert!(has(line_of("relative/path"), "must be absolute"), "{text}");
    assert!(
        has(
            line_of("sandbox: off"),
            "`sandbox` is for `command` servers"
        ),
        "{text}"
    );
    let good = line_of("\"*\", \"crates.io\"");
    assert!(
        !text.contains(&format!(":{good}:")),
        "the good server passes: {text}"
    );
    assert!(text.contains("has 3 error(s)"), "{text}");
}

/// What an approver was asked: why, and the arguments.
type Asked = std::sync::Arc<std::sync::Mutex<Vec<(String, Value)>>>;

/// A kit whose calls go through approvals that never ask by policy (`never`), with an approver
/// that answers `decision` and keeps what it was asked.
fn kit_with_approver(
    sandbox: SandboxPolicy,
    decision: goondan_runtime::calls::approval::Decision,
) -> (TestKit, Asked) {
    use goondan_runtime::calls::approval::{Approvals, Policy, approver_fn};
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = std::sync::Arc::clone(&asked);
    let approver = approver_fn(move |request| {
        let kept = std::sync::Arc::clone(&kept);
        let decision = decision.clone();
        async move {
            kept.lock().unwrap().push((
                request.why().to_owned(),
                Value::Object(request.args().clone()),
            ));
            decision
        }
    });
    let approvals = Approvals::new(approver).default_policy(Policy::Allow);
    let policy = BashPolicy {
        sandbox,
        kill_grace: Duration::from_millis(300),
        ..BashPolicy::default()
    };
    let kit = TestKit::builder()
        .tool(Bash::new(policy).into_tool())
        .middleware(0, approvals)
        .build()
        .unwrap();
    (kit, asked)
}

#[tokio::test]
async fn sbx_a_call_may_run_outside_the_sandbox_only_when_a_person_approves_it() {
    use goondan_runtime::calls::approval::Decision;
    let host_net = std::fs::read_link("/proc/self/ns/net").unwrap();
    let host_net = host_net.to_str().unwrap().to_owned();
    let args = json!({
        "command": "readlink /proc/self/ns/net",
        "escalate": {"reason": "compare the network namespace with the host's"}
    });

    // Approved by a person, though the approval policy asks about nothing: it runs outside.
    let (kit, asked) = kit_with_approver(SandboxPolicy::default(), Decision::Approve);
    let out = kit
        .call("bash__exec", args.clone())
        .await
        .assert_ok()
        .clone();
    assert_eq!(stdout(&out).trim(), host_net, "{out}");
    assert_eq!(out["outsideSandbox"], true, "{out}");
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].0.contains("sandbox"), "{asked:?}");
    assert_eq!(
        asked[0].1["escalate"]["reason"],
        "compare the network namespace with the host's"
    );
    assert_eq!(asked[0].1["command"], "readlink /proc/self/ns/net");
    // A call that asks for nothing more is not asked about, and stays inside.
    let inside = exec(&kit, "readlink /proc/self/ns/net").await;
    assert_ne!(stdout(&inside).trim(), host_net, "{inside}");
    assert!(inside.get("outsideSandbox").is_none(), "{inside}");

    // Denied: it does not run.
    let (denying, _) = kit_with_approver(
        SandboxPolicy::default(),
        Decision::Deny {
            reason: "not today".into(),
        },
    );
    let denied = denying.call("bash__exec", args.clone()).await;
    assert_eq!(denied.error_code(), Some("E_TOOL_DENIED"));

    // Nobody to ask (no approvals at all): refused.
    let refused = self::kit().call("bash__exec", args.clone()).await;
    assert_eq!(
        refused.error_code(),
        Some("E_SANDBOX_ESCALATION_NOT_APPROVED")
    );

    // The bundle forbids it: refused even when a person approves.
    let (strict, _) = kit_with_approver(
        SandboxPolicy::default().forbid_escalation(),
        Decision::Approve,
    );
    let forbidden = strict.call("bash__exec", args.clone()).await;
    assert_eq!(
        forbidden.error_code(),
        Some("E_SANDBOX_ESCALATION_FORBIDDEN")
    );

    // A reason of a megabyte, or none, is refused before anyone is asked.
    let (careful, asked) = kit_with_approver(SandboxPolicy::default(), Decision::Approve);
    for escalate in [
        json!({"reason": "x".repeat(1_000_000)}),
        json!({"reason": " "}),
        json!({}),
    ] {
        let bad = careful
            .call(
                "bash__exec",
                json!({"command": "true", "escalate": escalate}),
            )
            .await;
        assert_eq!(bad.error_code(), Some("E_TOOL_INVALID_ARGS"));
        let message = bad.error.as_ref().unwrap().message().len();
        assert!(message < 2000, "a bounded message");
    }
    assert!(asked.lock().unwrap().is_empty());
}

#[test]
fn sbx_goondan_tools_call_has_nobody_to_approve_running_outside_the_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let args = json!({
        "command": format!("touch {}", marker.display()),
        "escalate": {"reason": "write outside the workdir"}
    })
    .to_string();
    let out = goondan(&[
        "tools",
        "call",
        "bash__exec",
        &args,
        "--workdir",
        dir.path().to_str().unwrap(),
        "--json",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("E_SANDBOX_ESCALATION_NOT_APPROVED"), "{text}");
    assert!(!marker.exists());
}

/// Calls `bash__exec` with `limits` and the test's timeout.
async fn exec_limited(kit: &TestKit, command: &str, limits: Value) -> ToolCallResult {
    kit.call(
        "bash__exec",
        json!({"command": command, "timeoutMs": 20000, "limits": limits}),
    )
    .await
}

#[tokio::test]
async fn sbx_a_memory_bomb_ends_the_call_at_its_memory_limit() {
    // 600 MiB at most if the limit failed open: harmless.
    let command = "echo before; python3 -c 'b = bytearray(600 * 1024 * 1024)'; echo after";
    for sandbox in [SandboxPolicy::default(), SandboxPolicy::off()] {
        let on = sandbox.is_on();
        let kit = kit_with(sandbox);
        let r = exec_limited(&kit, command, json!({"memory": "64MiB"})).await;
        let err = r.assert_error("E_SANDBOX_LIMIT");
        assert_eq!(err.name(), "MemoryLimitError", "sandbox {on}: {err:?}");
        assert!(
            err.message().contains("memory limit (64 MiB)")
                && err.message().contains("(limit: memory)"),
            "sandbox {on}: {err:?}"
        );
        // What the command wrote before is kept.
        assert!(err.message().contains("before"), "sandbox {on}: {err:?}");
    }
}

#[tokio::test]
async fn sbx_a_fork_bomb_ends_the_call_at_once_at_its_process_limit() {
    let kit = kit();
    let marker = format!(
        "79{}.{}",
        std::process::id(),
        kit.workdir().to_string_lossy().len()
    );
    // 3000 `sleep`s at most if the limit failed open, ended with the call. Each refused fork
    // waits 10 ms, so the loop lasts about 30 s past the limit: a call not ended at once
    // lives to write `survived`.
    std::fs::write(
        kit.workdir().join("bomb.py"),
        "import os, sys, time\n\
         for i in range(3000):\n    \
             try:\n        \
                 if os.fork() == 0:\n            \
                     os.execvp('sleep', ['sleep', sys.argv[1]])\n    \
             except OSError:\n        \
                 time.sleep(0.01)\n\
         open('survived', 'w').close()\n",
    )
    .unwrap();
    let r = kit
        .call(
            "bash__exec",
            json!({
                "command": format!("python3 bomb.py {marker}"),
                "timeoutMs": 120000,
                "limits": {"processes": 64},
            }),
        )
        .await;
    let err = r.assert_error("E_SANDBOX_LIMIT");
    assert_eq!(err.name(), "ProcessLimitError", "{err:?}");
    assert!(
        err.message().contains("process limit (64 at once)")
            && err.message().contains("(limit: processes)"),
        "{err:?}"
    );
    assert!(
        !kit.workdir().join("survived").exists(),
        "the bomb ran on past its limit"
    );
    // Nothing it started is left.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while running(&marker) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!running(&marker));
}

#[tokio::test]
async fn sbx_a_call_may_lower_its_limits_but_never_raise_them() {
    let kit = kit();
    let ten = "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.2 & done; wait; echo done";
    // Under the tool's limits, ten processes are fine; under eight, they are not.
    let out = exec(&kit, ten).await;
    assert_eq!(stdout(&out), "done\n", "{out}");
    let r = exec_limited(&kit, ten, json!({"processes": 8})).await;
    let err = r.assert_error("E_SANDBOX_LIMIT");
    assert!(err.message().contains("(8 at once)"), "{err:?}");
    // Above the tool's limits, zero or malformed: refused, and nothing runs.
    for (limits, says) in [
        (json!({"memory": "5GiB"}), "above this tool's, 4 GiB"),
        (json!({"processes": 5000}), "above this tool's, 4096"),
        (json!({"processes": 0}), "more than zero"),
        (json!({"cpu": 0}), "more than zero"),
        (json!({"memory": "512MB"}), "KiB, MiB, GiB or TiB"),
        (json!({"memory": "1e9"}), "cannot be read"),
        (
            json!({"memory": "99999999999999999999TiB"}),
            "above the largest",
        ),
    ] {
        let r = exec_limited(&kit, "touch ran", limits.clone()).await;
        let err = r.assert_error("E_BASH_LIMITS");
        assert!(err.message().contains(says), "{limits}: {err:?}");
        assert!(
            err.suggestion()
                .unwrap_or_default()
                .contains("memory 4 GiB"),
            "{err:?}"
        );
        assert!(!kit.workdir().join("ran").exists(), "{limits}");
    }
    // Not even a count: the arguments do not match the schema.
    let r = exec_limited(&kit, "touch ran", json!({"processes": -1})).await;
    r.assert_error("E_TOOL_INVALID_ARGS");
    assert!(!kit.workdir().join("ran").exists());
}

#[tokio::test]
async fn sbx_a_tools_limits_bound_its_calls_and_stay_within_the_policys() {
    let policy = BashPolicy {
        sandbox: SandboxPolicy::default()
            .with_limits(Limits::default().with_processes(64).unwrap()),
        limits: Some(
            Limits::default()
                .with_processes(8)
                .unwrap()
                .with_memory(8 << 30)
                .unwrap(),
        ),
        kill_grace: Duration::from_millis(300),
        ..BashPolicy::default()
    };
    let bash = Bash::new(policy);
    // The tool's 8 processes; its 8 GiB lowered to the policy's default bound.
    assert_eq!(bash.limits().processes(), 8);
    assert_eq!(bash.limits().memory(), DEFAULT_MEMORY);
    let kit = TestKit::with_tools([bash.into_tool()]).unwrap();
    let ten = "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.2 & done; wait";
    exec_limited(&kit, ten, json!({}))
        .await
        .assert_error("E_SANDBOX_LIMIT");
    let r = exec_limited(&kit, "true", json!({"processes": 16})).await;
    let err = r.assert_error("E_BASH_LIMITS");
    assert!(err.message().contains("above this tool's, 8"), "{err:?}");
}

#[tokio::test]
async fn sbx_a_limit_that_cannot_be_enforced_refuses_a_sandboxed_call() {
    // Without cgroups, no limit is enforced: a limit that is set refuses the sandboxed call;
    // the defaults let it run. With the sandbox off, it runs.
    for (sandbox, limits, runs) in [
        (SandboxPolicy::default(), json!({"memory": "64MiB"}), false),
        (SandboxPolicy::default(), json!({}), true),
        (SandboxPolicy::off(), json!({"memory": "64MiB"}), true),
    ] {
        let policy = BashPolicy {
            sandbox,
            use_cgroup: false,
            ..BashPolicy::default()
        };
        let kit = TestKit::with_tools([Bash::new(policy).into_tool()]).unwrap();
        let r = exec_limited(&kit, "touch ran", limits.clone()).await;
        if runs {
            r.assert_ok();
        } else {
            let err = r.assert_error("E_SANDBOX_UNAVAILABLE");
            assert!(
                err.message()
                    .contains("memory limit (64 MiB) cannot be enforced")
                    && err.message().contains("use_cgroup"),
                "{err:?}"
            );
        }
        assert_eq!(kit.workdir().join("ran").exists(), runs, "{limits}");
    }
}

#[test]
fn sbx_where_no_cgroup_can_be_made_a_set_limit_refuses_the_sandboxed_call() {
    // A mount namespace of the test's own whose /sys/fs/cgroup is an empty tmpfs: no
    // hierarchy is reachable.
    let dir = tempfile::tempdir().unwrap();
    let goondan = env!("CARGO_BIN_EXE_goondan");
    let call = |command: &str, extra: &str| {
        format!(
            "{goondan} tools call bash__exec '{command}' --json --workdir {wd} {extra}",
            wd = dir.path().display()
        )
    };
    let script = format!(
        "mount -t tmpfs none /sys/fs/cgroup || exit 99; {set}; echo; {unset}; echo; {off}",
        set = call(
            r#"{"command": "touch set", "limits": {"processes": 64}}"#,
            ""
        ),
        unset = call(r#"{"command": "touch unset"}"#, ""),
        off = call(
            r#"{"command": "touch off", "limits": {"processes": 64}}"#,
            "--sandbox off"
        ),
    );
    let output = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .output()
        .unwrap();
    assert_ne!(output.status.code(), Some(99), "{output:?}");
    let text = String::from_utf8_lossy(&output.stdout);
    let results: Vec<Value> = serde_json::Deserializer::from_str(&text)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(results.len(), 3, "{text}");
    assert_eq!(
        results[0]["error"]["code"], "E_SANDBOX_UNAVAILABLE",
        "{text}"
    );
    let message = results[0]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("processes limit (64) cannot be enforced"),
        "{message}"
    );
    assert!(!dir.path().join("set").exists());
    for (result, file) in [(&results[1], "unset"), (&results[2], "off")] {
        assert_eq!(result["status"], "ok", "{result}");
        assert!(dir.path().join(file).exists(), "{result}");
    }
}

#[test]
fn sbx_a_bundles_limits_bound_its_calls_and_bad_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let wd = dir.path().join("wd");
    std::fs::create_dir(&wd).unwrap();
    let bundle = dir.path().join("goondan.yaml");
    let call = |command: &str| {
        goondan(&[
            "tools",
            "call",
            "bash__exec",
            command,
            "--bundle",
            bundle.to_str().unwrap(),
            "--workdir",
            wd.to_str().unwrap(),
            "--json",
        ])
    };
    std::fs::write(
        &bundle,
        format!(
            "{BASH_AGENT}  policy:\n    sandbox: {{limits: {{memory: 512MiB, processes: 8, cpu: 1.5}}}}\n"
        ),
    )
    .unwrap();
    let o = call(r#"{"command": "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.2 & done; wait"}"#);
    let result: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(result["error"]["code"], "E_SANDBOX_LIMIT", "{result}");
    let o = call(r#"{"command": "touch ran", "limits": {"memory": "1GiB"}}"#);
    let result: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(result["error"]["code"], "E_BASH_LIMITS", "{result}");
    let message = result["error"]["message"].as_str().unwrap();
    assert!(message.contains("above this tool's, 512 MiB"), "{result}");
    assert!(!wd.join("ran").exists());
    let o = call(r#"{"command": "echo ok", "limits": {"processes": 4}}"#);
    let result: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(result["output"]["stdout"], "ok\n", "{result}");

    // Limits that cannot be used stop the command with a clear, bounded error.
    let huge = format!("{{memory: {}}}", "9".repeat(10_000));
    for (limits, says) in [
        ("{memory: 0}", "memory limit must be more than zero"),
        ("{memory: 512MB}", "KiB, MiB, GiB or TiB"),
        ("{processes: -4}", "processes limit must be more than zero"),
        ("{cpu: 0.001}", "cpu limit 0.001 is below the least"),
        (huge.as_str(), "above the largest"),
        ("{swap: 1GiB}", "unknown limit `swap`"),
        ("512MiB", "must be a map"),
    ] {
        std::fs::write(
            &bundle,
            format!("{BASH_AGENT}  policy:\n    sandbox: {{limits: {limits}}}\n"),
        )
        .unwrap();
        let o = call(r#"{"command": "touch ran"}"#);
        assert_eq!(o.status.code(), Some(2), "{limits}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("policy.sandbox.limits") && err.contains(says),
            "{limits}: {err}"
        );
        assert!(err.len() < 1000, "a bounded message: {err}");
        assert!(!wd.join("ran").exists());
    }
}
