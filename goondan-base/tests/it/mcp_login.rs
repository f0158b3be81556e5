//! `goondan mcp login`, `servers` and `logout` against a real
//! OAuth-protected MCP server (the conformance suite's `auth/metadata-default` server and its
//! authorization server, from `scripts/mcp-peers`). The test is the person's browser: it opens
//! the URL `login` prints, and the authorization server redirects it to `login`'s listener on
//! 127.0.0.1. The tokens are kept in files under the state directory, or (on Linux) in a real
//! Secret Service, GNOME Keyring on the test's own session bus (`scripts/keyring-peer`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use goondan_runtime::bundle::Bundle;
use goondan_runtime::mcp::client::{
    McpClientError, McpExtension, McpExtensionConfig, ServerStatus, TokenStore,
};
use goondan_test_peers::mcp_peers::ProtectedServer;

fn bundle(dir: &Path, url: &str) -> std::path::PathBuf {
    let file = dir.join("goondan.yaml");
    std::fs::write(
        &file,
        format!(
            r#"apiVersion: goondan.ai/v1
kind: Extension
metadata: {{name: mcp}}
spec:
  mcp:
    servers:
      - name: tracker
        url: "{url}"
        auth: oauth
        startupTimeoutMs: 15000
"#
        ),
    )
    .unwrap();
    file
}

/// Where a `goondan` of the tests keeps tokens: files under `state` (also where a keyring
/// would answer), or the Secret Service on the test's own bus (at `address`).
#[derive(Clone, Copy)]
enum Store<'a> {
    Files,
    Keyring { address: &'a str },
}

fn command(state: &Path, store: Store<'_>) -> Command {
    let mut goondan = Command::new(env!("CARGO_BIN_EXE_goondan"));
    goondan.env("XDG_STATE_HOME", state);
    match store {
        Store::Files => {
            goondan.env("GOONDAN_MCP_TOKEN_STORE", "file");
        }
        Store::Keyring { address } => {
            goondan
                .env_remove("GOONDAN_MCP_TOKEN_STORE")
                .env("DBUS_SESSION_BUS_ADDRESS", address);
        }
    }
    goondan
}

fn goondan(state: &Path, args: &[&str]) -> std::process::Output {
    goondan_with(state, Store::Files, args)
}

fn goondan_with(state: &Path, store: Store<'_>, args: &[&str]) -> std::process::Output {
    command(state, store).args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `goondan mcp login tracker`, with the test as the person's browser: it opens the URL
/// `login` prints, and the authorization server redirects it to `login`'s listener. What
/// `login` printed on stderr, and its end.
fn log_in(state: &Path, store: Store<'_>, b: &str) -> (String, std::process::Output) {
    // `login` prints the URL and waits for the browser's redirect.
    let mut login = command(state, store)
        .args([
            "mcp",
            "login",
            "tracker",
            "--bundle",
            b,
            "--wait-secs",
            "60",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(login.stderr.take().unwrap());
    let mut printed = String::new();
    let url = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "login printed no URL:\n{printed}"
        );
        printed.push_str(&line);
        if let Some(url) = line.trim().strip_prefix("http") {
            break format!("http{url}");
        }
    };
    assert!(printed.contains("open this URL"), "{printed}");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let page = runtime.block_on(async {
        goondan_runtime::tls::install_crypto_provider();
        let answer = reqwest::get(&url).await.unwrap();
        let landed = answer.url().clone();
        (answer.status(), landed, answer.text().await.unwrap())
    });
    assert_eq!(page.0, 200, "{page:?}");
    assert_eq!(
        page.1.host_str(),
        Some("127.0.0.1"),
        "the redirect came back to login"
    );
    assert!(page.2.contains("Authorized"), "{page:?}");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    printed.push_str(&rest);
    let done = login.wait_with_output().unwrap();
    assert!(done.status.success(), "{printed}");
    assert!(
        text(&done.stdout).starts_with("logged in to `tracker`"),
        "{}",
        text(&done.stdout)
    );
    (printed, done)
}

#[test]
fn mcp_login_keeps_the_tokens_in_the_user_s_store_a_run_uses_them_and_logout_forgets_them() {
    let server = ProtectedServer::start("auth/metadata-default");
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let file = bundle(dir.path(), server.url());
    let b = file.to_str().unwrap();

    let listed = goondan(&state, &["mcp", "servers", "--bundle", b]);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    assert_eq!(
        text(&listed.stdout),
        format!(
            "tracker\tmcp\t{}\toauth\tlogged out: goondan mcp login tracker\n\
             tokens are kept in {}\n",
            server.url(),
            state.join("goondan/mcp-tokens").display()
        )
    );

    let (printed, done) = log_in(&state, Store::Files, b);
    let runtime = tokio::runtime::Runtime::new().unwrap();

    // The tokens are the user's alone, and never printed.
    let kept = state.join("goondan/mcp-tokens/tracker.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let tokens: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&kept).unwrap()).unwrap();
    let access = tokens["credentials"]["token_response"]["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(access.len() > 8);
    for output in [
        &printed,
        &text(&done.stdout),
        &std::fs::read_to_string(&file).unwrap(),
    ] {
        assert!(!output.contains(&access), "the token was shown: {output}");
    }
    let listed = goondan(&state, &["mcp", "servers", "--bundle", b, "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    // The suite's authorization server gives no refresh token; the state says so.
    assert_eq!(
        listed[0]["state"], "logged in (no refresh token)",
        "{listed}"
    );
    assert_eq!(
        listed[0]["tokens"],
        state.join("goondan/mcp-tokens").display().to_string()
    );

    // A run uses the kept tokens: no browser.
    let loaded = Bundle::load(&file).unwrap();
    let store = TokenStore::at(state.join("goondan/mcp-tokens"));
    let config = loaded
        .mcp_extension("mcp")
        .unwrap()
        .token_store(store.clone());
    let mcp = runtime
        .block_on(McpExtension::connect(config.clone()))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!mcp.tool_names("tracker").is_empty());
    mcp.shutdown();

    // After logout, the same start leaves `tracker` out, unauthorized, with the way back in its
    // status, at once; a required `tracker` fails the start with the same reason.
    let out = goondan(&state, &["mcp", "logout", "tracker"]);
    assert_eq!(text(&out.stdout), "logged out of `tracker`\n");
    assert!(!kept.exists());
    let started = Instant::now();
    let mcp = runtime
        .block_on(McpExtension::connect(config.clone()))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    match mcp.status("tracker") {
        Some(ServerStatus::Unauthorized { reason }) => {
            assert!(reason.contains("goondan mcp login tracker"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(mcp.tool_names("tracker").is_empty());
    mcp.shutdown();
    let required = McpExtensionConfig::new("mcp")
        .server(
            loaded.mcp_extension("mcp").unwrap().servers()[0]
                .clone()
                .required(true),
        )
        .token_store(store.clone());
    match runtime.block_on(McpExtension::connect(required)) {
        Err(McpClientError::Unauthorized { server, reason, .. }) => {
            assert_eq!(server, "tracker");
            assert!(reason.contains("goondan mcp login tracker"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let out = goondan(&state, &["mcp", "logout", "tracker"]);
    assert_eq!(text(&out.stdout), "no tokens were kept for `tracker`\n");
}

#[test]
fn mcp_login_refuses_a_server_that_does_not_use_oauth_and_names_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let file = bundle(dir.path(), "http://127.0.0.1:9/mcp");
    std::fs::write(
        &file,
        std::fs::read_to_string(&file)
            .unwrap()
            .replace("auth: oauth", "auth: none"),
    )
    .unwrap();
    let b = file.to_str().unwrap();
    let state = dir.path().join("state");
    let out = goondan(&state, &["mcp", "login", "tracker", "--bundle", b]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("does not use OAuth"),
        "{}",
        text(&out.stderr)
    );
    let out = goondan(&state, &["mcp", "login", "nope", "--bundle", b]);
    assert!(
        text(&out.stderr).contains("no MCP server `nope`; its servers: tracker"),
        "{}",
        text(&out.stderr)
    );
}

/// `goondan run` of an agent with the bundle's MCP extension, its model a replay server that
/// answers once: the run finishes only when the extension connected (a server it cannot
/// connect fails the agent's load), and the model was offered the server's tools.
#[cfg(target_os = "linux")]
fn run_with_the_server(dir: &Path, state: &Path, store: Store<'_>, server_url: &str) {
    use crate::run_support as support;
    use goondan_test_peers::replay::ReplayServer;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime.block_on(ReplayServer::start([support::text(&["Done."])]));
    let run_dir = dir.join("run");
    std::fs::create_dir_all(&run_dir).unwrap();
    let mut yaml = support::replayed_model(&model);
    yaml.push_str(
        r#"apiVersion: goondan.ai/v1
kind: Agent
metadata: {name: assistant}
spec:
  modelConfig: {modelRef: "Model/replayed"}
  extensions: ["Extension/mcp"]
---
"#,
    );
    yaml.push_str(&std::fs::read_to_string(bundle(&run_dir, server_url)).unwrap());
    let file = run_dir.join("goondan.yaml");
    std::fs::write(&file, yaml).unwrap();
    let out = command(state, store)
        .args([
            "run",
            file.to_str().unwrap(),
            "--input",
            "hi",
            "--approve",
            "never",
        ])
        .env("GOONDAN_TEST_KEY", support::KEY)
        .current_dir(&run_dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let seen = model.requests();
    assert_eq!(seen.len(), 1);
    let offered = seen[0].body["tools"].to_string();
    assert!(offered.contains("tracker__"), "{offered}");
}

#[cfg(target_os = "linux")]
#[test]
fn mcp_login_keeps_tokens_in_the_os_keyring_when_there_is_one() {
    use goondan_test_peers::keyring::Keyring;
    let keyring = Keyring::start();
    let store = Store::Keyring {
        address: keyring.address(),
    };
    let server = ProtectedServer::start("auth/metadata-default");
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let file = bundle(dir.path(), server.url());
    let b = file.to_str().unwrap();

    let listed = goondan_with(&state, store, &["mcp", "servers", "--bundle", b]);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    assert_eq!(
        text(&listed.stdout),
        format!(
            "tracker\tmcp\t{}\toauth\tlogged out: goondan mcp login tracker\n\
             tokens are kept in the OS keyring (Secret Service)\n",
            server.url()
        )
    );

    let (printed, done) = log_in(&state, store, b);
    assert!(
        text(&done.stdout).ends_with("its tokens are kept in the OS keyring (Secret Service)\n"),
        "{}",
        text(&done.stdout)
    );

    // The tokens are in the keyring, bound to the server's URL, and nowhere else: no file
    // under the state directory, never printed.
    let kept = keyring
        .secret("goondan-mcp", "tracker")
        .expect("no tokens in the keyring");
    let kept: serde_json::Value = serde_json::from_str(&kept).unwrap();
    assert_eq!(kept["url"], server.url());
    let access = kept["credentials"]["token_response"]["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(access.len() > 8);
    assert!(
        !state.exists(),
        "something was written under the state directory"
    );
    for output in [
        &printed,
        &text(&done.stdout),
        &std::fs::read_to_string(&file).unwrap(),
    ] {
        assert!(!output.contains(&access), "the token was shown: {output}");
    }
    let listed = goondan_with(&state, store, &["mcp", "servers", "--bundle", b, "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(
        listed[0]["state"], "logged in (no refresh token)",
        "{listed}"
    );
    assert_eq!(listed[0]["tokens"], "the OS keyring (Secret Service)");

    // A run uses the kept tokens: no browser, the server's tools offered to the model.
    run_with_the_server(dir.path(), &state, store, server.url());
    assert_eq!(
        keyring
            .secret("goondan-mcp", "tracker")
            .as_deref()
            .map(|k| k.contains(&access)),
        Some(true)
    );

    // Logout removes them from the keyring.
    let out = goondan_with(&state, store, &["mcp", "logout", "tracker"]);
    assert_eq!(
        text(&out.stdout),
        "logged out of `tracker`\n",
        "{}",
        text(&out.stderr)
    );
    assert_eq!(keyring.secret("goondan-mcp", "tracker"), None);
    let out = goondan_with(&state, store, &["mcp", "logout", "tracker"]);
    assert_eq!(text(&out.stdout), "no tokens were kept for `tracker`\n");
    assert!(!state.exists());
}

/// `goondan mcp servers --check` starts each server as `goondan run` does and says where it
/// stands: the one that answers is up with its tools counted; the one nothing listens for is
/// unavailable, with why; a server that is not authorized says so and how to log in.
#[test]
fn mcp_servers_check_starts_each_server_and_says_whether_it_is_up_or_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let protected = ProtectedServer::start("auth/metadata-default");
    let file = dir.path().join("goondan.yaml");
    std::fs::write(
        &file,
        format!(
            r#"apiVersion: goondan.ai/v1
kind: Extension
metadata: {{name: mcp}}
spec:
  mcp:
    servers:
{everything}      - name: gone
        url: http://127.0.0.1:9/mcp
        startupTimeoutMs: 3000
      - name: tracker
        url: "{tracker}"
        auth: oauth
        startupTimeoutMs: 15000
"#,
            everything = crate::run_support::everything_server("echo, get-sum", ""),
            tracker = protected.url(),
        ),
    )
    .unwrap();
    let b = file.to_str().unwrap();
    let out = goondan(
        &state,
        &["mcp", "servers", "--bundle", b, "--check", "--json"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let status = |name: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["name"] == name)
            .and_then(|row| row["status"].as_str())
            .unwrap_or_else(|| panic!("no status of {name}: {listed}"))
            .to_owned()
    };
    assert_eq!(status("everything"), "up (2 tools)", "{listed}");
    assert!(status("gone").starts_with("unavailable: "), "{listed}");
    let tracker = status("tracker");
    assert!(
        tracker.starts_with("not authorized: ") && tracker.contains("goondan mcp login tracker"),
        "{listed}"
    );
    // Without --check nothing is started, and no status is given.
    let out = goondan(&state, &["mcp", "servers", "--bundle", b, "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(listed[0].get("status").is_none(), "{listed}");
}

/// `goondan mcp servers --check` says which tools of a server that is up are left out, and
/// why: a schema nested 5,000 levels leaves out that tool, not its server.
#[test]
fn mcp_servers_check_names_the_tools_a_server_that_is_up_leaves_out_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let file = dir.path().join("goondan.yaml");
    std::fs::write(
        &file,
        format!(
            r#"apiVersion: goondan.ai/v1
kind: Extension
metadata: {{name: mcp}}
spec:
  mcp:
    servers:
{deep}"#,
            deep = crate::run_support::deep_schema_server(),
        ),
    )
    .unwrap();
    let b = file.to_str().unwrap();
    let out = goondan(
        &state,
        &["mcp", "servers", "--bundle", b, "--check", "--json"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        listed[0]["status"],
        "up (1 tools); 1 tool left out: `deep`: its definition nests 5003 levels deep; the bridge reads at most 97",
        "{listed}"
    );
}
