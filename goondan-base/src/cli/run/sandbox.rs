//! The sandbox of the base tools of a `goondan` process: its bundle's `policy.sandbox`.

use std::path::Path;

use goondan_runtime::bundle::Bundle;
use goondan_runtime::mcp::client::{
    Launched, Launcher, McpExtensionConfig, McpTransport, StdioCommand,
};

use crate::sandbox::{PolicyError, SandboxMode, SandboxPolicy, ServerSandbox};

/// A bundle's sandbox for `agent` with the bundle and its state directory denied (the default
/// policy when there is no bundle, or it cannot be read: the command reports that itself).
pub(crate) fn bundle_sandbox(
    bundle: Option<&Path>,
    agent: Option<&str>,
    state: Option<&Path>,
) -> Result<SandboxPolicy, PolicyError> {
    let Some(path) = bundle else {
        return Ok(SandboxPolicy::default());
    };
    let file = super::bundle_file(path);
    let policy = match Bundle::read(&file) {
        Ok(bundle) => {
            let agent = agent.map(str::to_owned).or_else(|| bundle.entry_agent());
            match agent.and_then(|a| bundle.policy(&a, "sandbox").cloned()) {
                Some(value) => SandboxPolicy::from_bundle(&value)?,
                None => SandboxPolicy::default(),
            }
        }
        Err(_) => SandboxPolicy::default(),
    };
    deny_bundle_and_state(policy, path, state)
}

/// `policy` with the bundle file and its state directory kept out of reach.
fn deny_bundle_and_state(
    policy: SandboxPolicy,
    bundle: &Path,
    state: Option<&Path>,
) -> Result<SandboxPolicy, PolicyError> {
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    policy
        .deny(absolute(&super::bundle_file(bundle)))?
        .deny(absolute(&super::state_dir_of(bundle, state)))
}

/// An MCP extension's stdio servers set to start in the sandbox, each under its bundle
/// `sandbox` setting (by default [`ServerSandbox::default_policy`]: its own workdir under the
/// state directory, any public host through the proxy), the mode replaced by `--sandbox`
/// (`flag`), the bundle and the state directory denied. A server whose setting cannot be used
/// does not start, and says why; a server whose sandbox is `off` starts as the host runs it.
pub(crate) fn sandboxed_servers(
    config: McpExtensionConfig,
    bundle: Option<&Path>,
    state: Option<&Path>,
    flag: Option<SandboxMode>,
) -> McpExtensionConfig {
    let extension = config.name().to_owned();
    config.map_servers(|server| {
        if !matches!(server.transport(), McpTransport::Stdio { .. }) {
            return server;
        }
        let policy = server_policy(server.sandbox_setting(), bundle, state, flag);
        match policy {
            Ok(policy) if !policy.is_on() => server,
            Ok(policy) => {
                let root = state.map_or_else(std::env::temp_dir, Path::to_path_buf);
                let workdir = crate::sandbox::server_workdir(&root, &extension, server.name());
                server.launcher(ServerSandbox::new(policy, workdir))
            }
            Err(e) => server.launcher(Refused(format!("its `sandbox` setting: {e}"))),
        }
    })
}

/// The policy of one bridged server: its setting, else the default; a setting that names no
/// `network` keeps the default's (any public host).
fn server_policy(
    setting: Option<&serde_json::Value>,
    bundle: Option<&Path>,
    state: Option<&Path>,
    flag: Option<SandboxMode>,
) -> Result<SandboxPolicy, PolicyError> {
    let mut policy = match setting {
        None => ServerSandbox::default_policy(),
        Some(value) => {
            let mut policy = SandboxPolicy::from_bundle(value)?;
            if value.get("network").is_none() {
                policy = policy.allow_host("*")?;
            }
            policy
        }
    };
    if let Some(mode) = flag {
        policy.mode = mode;
    }
    match bundle {
        Some(bundle) => deny_bundle_and_state(policy, bundle, state),
        None => Ok(policy),
    }
}

/// The launcher of a server whose sandbox cannot be set up: it never starts.
struct Refused(String);

impl Launcher for Refused {
    fn launch(&self, _server: &str, _command: StdioCommand) -> Result<Launched, String> {
        Err(self.0.clone())
    }
}

/// The bundle's sandbox settings, checked with the bundle (`goondan validate`, and every
/// program that loads it): an Agent's or a Swarm's `policy.sandbox`, and each MCP server's
/// `sandbox`, each problem on its line.
mod checks {
    use goondan_runtime::bundle::{Diagnostic, Resource, SpecCheck};
    use serde_json::Value;

    use crate::sandbox::SandboxPolicy;

    fn policy_sandbox(r: &Resource, out: &mut Vec<Diagnostic>) {
        let setting = r
            .spec()
            .and_then(|s| s.get("policy"))
            .and_then(|p| p.get("sandbox"));
        if let Some(setting) = setting
            && let Err(e) = SandboxPolicy::from_bundle(setting)
        {
            out.push(r.error_at("/spec/policy/sandbox", e.to_string()));
        }
    }

    fn server_sandboxes(r: &Resource, out: &mut Vec<Diagnostic>) {
        let servers = r
            .spec()
            .and_then(|s| s.get("mcp"))
            .and_then(|m| m.get("servers"))
            .and_then(Value::as_array);
        for (i, server) in servers.into_iter().flatten().enumerate() {
            if let Some(setting) = server.get("sandbox")
                && let Err(e) = SandboxPolicy::from_bundle(setting)
            {
                let at = format!("/spec/mcp/servers/{i}/sandbox");
                out.push(r.error_at(&at, format!("sandbox: {e}")));
            }
        }
    }

    inventory::submit! {
        SpecCheck { kind: "Agent", check: policy_sandbox }
    }
    inventory::submit! {
        SpecCheck { kind: "Swarm", check: policy_sandbox }
    }
    inventory::submit! {
        SpecCheck { kind: "Extension", check: server_sandboxes }
    }
}
