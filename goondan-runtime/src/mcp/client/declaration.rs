//! MCP servers declared by an Extension resource: `spec.mcp.servers`, each a stdio command or
//! a Streamable HTTP URL, read into an [`McpExtensionConfig`] and checked with the bundle.
//!
//! Why this shape: the seeds make an MCP bridge an *Extension* (its tools carry
//! `source.mcp.extensionName`), and an Extension's `spec` holds what that extension needs
//! (`spec.entry` for code extensions). `spec.mcp` sits beside it, so one resource can be
//! referenced from an Agent's `spec.extensions` like any other. Each server's fields are the
//! ones MCP hosts already use (Claude Desktop's `mcpServers`: `command`, `args`, `env`; plus
//! `cwd`, and `url`/`headers` for Streamable HTTP), so an existing configuration carries over;
//! `name` is the resource part of the tools' names, `include`/`exclude` are remote tool names,
//! and the two timeouts are in milliseconds like the rest of the bundle's fields.
//!
//! ```yaml
//! apiVersion: goondan.ai/v1
//! kind: Extension
//! metadata: {name: mcp}
//! spec:
//!   mcp:
//!     servers:
//!       - name: everything                 # tools are `everything__{tool}`
//!         command: mcp-server-everything   # on PATH; `./x` is next to the bundle
//!         args: [stdio]
//!         env: {LOG_LEVEL: warn}
//!         cwd: .                           # relative to the bundle's directory
//!         exclude: [get-env]
//!       - name: search
//!         url: http://127.0.0.1:8080/mcp
//!         headers: {X-Team: docs}
//!         include: [search]
//!         startupTimeoutMs: 20000
//!         callTimeoutMs: 60000
//!       - name: tracker                     # OAuth: `goondan mcp login tracker` once
//!         url: https://mcp.tracker.example/mcp
//!         protocolVersion: "2026-07-28"     # default: 2025-11-25's handshake
//!         auth: oauth                       # or {oauth: {clientId, clientSecretEnv, scopes}}
//!         sampling: false                   # it may not ask the agent's model mid-call
//!         required: true                    # the agent does not start without it
//!       - name: builds                      # a service account: no person involved
//!         url: https://mcp.ci.example/mcp
//!         auth:
//!           clientCredentials: {clientId: goondan-ci, clientSecretEnv: CI_MCP_SECRET}
//!       - name: deploys                     # tokens bound to a key pair (DPoP)
//!         url: https://mcp.deploy.example/mcp
//!         auth: {oauth: {dpop: true}}
//!       - name: cluster                     # the workload's own identity, a JWT on disk
//!         url: https://mcp.cluster.example/mcp
//!         auth:
//!           workloadIdentity:
//!             clientId: agent-7
//!             assertionFile: /var/run/secrets/tokens/mcp   # or assertionEnv
//!       - name: wiki                        # the company's identity provider
//!         url: https://mcp.wiki.example/mcp
//!         auth:
//!           enterprise:
//!             clientId: goondan
//!             clientSecretEnv: WIKI_CLIENT_SECRET
//!             idpIssuer: https://login.corp.example
//!             idpTokenEndpoint: https://login.corp.example/oauth2/token
//!             idpClientId: goondan-idp
//!             idTokenEnv: CORP_ID_TOKEN                    # or idTokenFile
//!     skills: prompt                        # the servers' skills, in the system prompt (or `tool`)
//! ```
//!
//! A bundle never holds a secret: `clientSecretEnv`, `idpClientSecretEnv`, `assertionEnv`
//! and `idTokenEnv` name environment variables, `privateKeyFile`, `assertionFile` and
//! `idTokenFile` files (relative to the bundle), all read when the server is authorized (a
//! workload's JWT and an ID token anew at each grant, as their issuers replace them). Tokens are kept in the user's [`TokenStore`](super::TokenStore).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use super::auth::{
    ClientCredentials, EnterpriseGrant, IdentityProvider, JwtAlgorithm, McpAuth, OAuthClient,
    Secret, WorkloadIdentity,
};
use super::config::{McpExtensionConfig, McpServerConfig};
use super::skills::SkillsShown;
use crate::bundle::{Bundle, BundleError, Diagnostic, Kind, Resource, Severity, SpecCheck};

const SERVER_KEYS: &[&str] = &[
    "name",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "include",
    "exclude",
    "startupTimeoutMs",
    "callTimeoutMs",
    "protocolVersion",
    "auth",
    "sampling",
    "sandbox",
    "required",
];

const OAUTH_KEYS: &[&str] = &[
    "clientId",
    "clientSecretEnv",
    "clientMetadataUrl",
    "scopes",
    "dpop",
];
const WORKLOAD_IDENTITY_KEYS: &[&str] = &["clientId", "assertionEnv", "assertionFile", "scopes"];
const ENTERPRISE_KEYS: &[&str] = &[
    "clientId",
    "clientSecretEnv",
    "idpIssuer",
    "idpTokenEndpoint",
    "idpClientId",
    "idpClientSecretEnv",
    "idTokenEnv",
    "idTokenFile",
    "scopes",
];
/// Fields that would hold a secret, and the field that names where it is instead.
const SECRET_FIELDS: &[(&str, &str)] = &[
    ("clientSecret", "`clientSecretEnv`"),
    ("privateKey", "`privateKeyFile`"),
    ("assertion", "`assertionEnv` or `assertionFile`"),
    ("idToken", "`idTokenEnv` or `idTokenFile`"),
    ("idpClientSecret", "`idpClientSecretEnv`"),
];
const CLIENT_CREDENTIALS_KEYS: &[&str] = &[
    "clientId",
    "clientSecretEnv",
    "privateKeyFile",
    "algorithm",
    "scopes",
];

impl Bundle {
    /// The MCP servers the Extension `name` declares (`spec.mcp`), with relative commands
    /// (`./bin/server`) and working directories resolved against the bundle's directory.
    pub fn mcp_extension(&self, name: &str) -> Result<McpExtensionConfig, BundleError> {
        let unknown = || BundleError::UnknownMcpExtension {
            name: name.to_owned(),
            known: self.mcp_extension_names(),
        };
        let r = self
            .get(&Kind::Extension, name)
            .filter(|r| mcp_spec(r).is_some())
            .ok_or_else(unknown)?;
        let mut problems = Vec::new();
        let config = read(r, self.dir(), &mut problems);
        if problems.iter().any(|d| d.severity == Severity::Error) {
            return Err(BundleError::Invalid {
                diagnostics: problems,
            });
        }
        Ok(config)
    }

    /// The MCP Extensions an Agent lists in `spec.extensions`, in order.
    pub fn agent_mcp_extensions(
        &self,
        agent: &str,
    ) -> Result<Vec<McpExtensionConfig>, BundleError> {
        let is_mcp = |name: &str| {
            self.get(&Kind::Extension, name)
                .is_some_and(|e| mcp_spec(e).is_some())
        };
        let refs = self.agent(agent)?.raw_refs("extensions");
        refs.into_iter()
            .filter_map(|(r, _)| r.ok())
            .filter(|r| r.package.is_none() && is_mcp(&r.name))
            .map(|r| self.mcp_extension(&r.name))
            .collect()
    }

    /// Every Extension that declares MCP servers, in the bundle's order.
    pub fn mcp_extensions(&self) -> Result<Vec<McpExtensionConfig>, BundleError> {
        self.mcp_extension_names()
            .iter()
            .map(|name| self.mcp_extension(name))
            .collect()
    }

    /// The names of the Extensions that declare MCP servers.
    fn mcp_extension_names(&self) -> Vec<String> {
        self.of_kind(&Kind::Extension)
            .filter(|r| mcp_spec(r).is_some())
            .map(|r| r.name.clone())
            .collect()
    }

    fn dir(&self) -> &Path {
        self.file().parent().unwrap_or(Path::new(""))
    }
}

fn mcp_spec(r: &Resource) -> Option<&Value> {
    r.spec()?.get("mcp")
}

inventory::submit! {
    SpecCheck { kind: "Extension", check }
}

/// The problems of an Extension's `spec.mcp`, for the bundle's diagnostics.
fn check(r: &Resource, out: &mut Vec<Diagnostic>) {
    if mcp_spec(r).is_some() {
        read(r, Path::new(""), out);
    }
}

/// Reads `spec.mcp`, pushing every problem found.
fn read(r: &Resource, dir: &Path, out: &mut Vec<Diagnostic>) -> McpExtensionConfig {
    let mut config = McpExtensionConfig::new(r.name.clone());
    let Some(servers) = mcp_spec(r)
        .and_then(|m| m.get("servers"))
        .and_then(Value::as_array)
    else {
        out.push(r.locus_of("/spec/mcp").error(
            "`spec.mcp` needs `servers`: a list of `{name, command, args?, env?, cwd?}` or `{name, url, headers?}`",
        ));
        return config;
    };
    for (i, s) in servers.iter().enumerate() {
        let at = format!("/spec/mcp/servers/{i}");
        let Some(map) = s.as_object() else {
            out.push(
                r.locus_of(&at)
                    .error("an MCP server is a mapping with `name` and `command` or `url`"),
            );
            continue;
        };
        if let Some(server) = server(r, &at, map, dir, out) {
            config = config.server(server);
        }
    }
    if let Err(e) = config.check() {
        out.push(r.locus_of("/spec/mcp/servers").error(e.to_string()));
    }
    match mcp_spec(r).and_then(|m| m.get("skills")) {
        None => {}
        Some(Value::String(s)) if s == "tool" => config = config.show_skills(SkillsShown::Tool),
        Some(Value::String(s)) if s == "prompt" => {
            config = config.show_skills(SkillsShown::Prompt);
        }
        Some(_) => out.push(r.locus_of("/spec/mcp/skills").error(
            "`spec.mcp.skills` is `tool` (a tool lists the servers' skills) or `prompt` (the system prompt does)",
        )),
    }
    config
}

/// The fields of one mapping of `spec.mcp` at the pointer `at`, read with each problem pushed
/// to `out`.
struct Fields<'a> {
    r: &'a Resource,
    at: &'a str,
    map: &'a Map<String, Value>,
}

impl Fields<'_> {
    /// An error about the field `key`.
    fn error(&self, key: &str, message: impl Into<String>, out: &mut Vec<Diagnostic>) {
        out.push(self.r.error_at(&format!("{}/{key}", self.at), message));
    }

    /// A string; `nonempty`: one that is not empty.
    fn text(&self, key: &str, nonempty: bool, out: &mut Vec<Diagnostic>) -> Option<String> {
        match self.map.get(key)? {
            Value::String(s) if !(nonempty && s.is_empty()) => Some(s.clone()),
            _ if nonempty => {
                self.error(key, format!("`{key}` must be a non-empty string"), out);
                None
            }
            _ => {
                self.error(key, format!("`{key}` must be a string"), out);
                None
            }
        }
    }

    fn list(&self, key: &str, out: &mut Vec<Diagnostic>) -> Option<Vec<String>> {
        let items = self.map.get(key)?.as_array().and_then(|a| {
            a.iter()
                .map(|x| x.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
        });
        if items.is_none() {
            self.error(key, format!("`{key}` must be a list of strings"), out);
        }
        items
    }

    fn pairs(&self, key: &str, out: &mut Vec<Diagnostic>) -> Vec<(String, String)> {
        let Some(v) = self.map.get(key) else {
            return Vec::new();
        };
        let pairs = v.as_object().and_then(|m| {
            m.iter()
                .map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect::<Option<Vec<_>>>()
        });
        pairs.unwrap_or_else(|| {
            self.error(key, format!("`{key}` must map names to strings"), out);
            Vec::new()
        })
    }

    /// `true` or `false`.
    fn flag(&self, key: &str, out: &mut Vec<Diagnostic>) -> Option<bool> {
        let flag = self.map.get(key)?.as_bool();
        if flag.is_none() {
            self.error(key, format!("`{key}` is `true` or `false`"), out);
        }
        flag
    }

    fn millis(&self, key: &str, out: &mut Vec<Diagnostic>) -> Option<Duration> {
        let ms = self.map.get(key)?.as_u64().filter(|ms| *ms > 0);
        if ms.is_none() {
            let why = format!("`{key}` must be a positive number of milliseconds");
            self.error(key, why, out);
        }
        ms.map(Duration::from_millis)
    }

    /// An error for each of `keys` that is there: they belong to the other kind of server.
    fn misplaced(&self, keys: &[&str], why: &str, out: &mut Vec<Diagnostic>) {
        for key in keys.iter().filter(|k| self.map.contains_key(**k)) {
            self.error(key, format!("`{key}` is for {why}"), out);
        }
    }
}

fn server(
    r: &Resource,
    at: &str,
    map: &Map<String, Value>,
    dir: &Path,
    out: &mut Vec<Diagnostic>,
) -> Option<McpServerConfig> {
    let before = out.len();
    for key in map.keys().filter(|k| !SERVER_KEYS.contains(&k.as_str())) {
        out.push(r.locus_of(&format!("{at}/{key}")).warning(format!(
            "unknown field `{key}` of an MCP server: kept, not used"
        )));
    }
    let f = Fields { r, at, map };
    let name = f.text("name", false, out);
    if name.is_none() && !map.contains_key("name") {
        out.push(r.error_at(
            at,
            "an MCP server needs a `name` (its tools are `{name}__{tool}`)",
        ));
    }
    let command = f.text("command", false, out);
    let url = f.text("url", false, out);
    let mut server = match (command, url) {
        (Some(command), None) => {
            let mut s =
                McpServerConfig::stdio(name.clone().unwrap_or_default(), resolve(dir, &command));
            if let Some(args) = f.list("args", out) {
                s = s.args(args);
            }
            for (k, v) in f.pairs("env", out) {
                s = s.env(k, v);
            }
            if let Some(cwd) = f.text("cwd", false, out) {
                s = s.cwd(dir.join(cwd));
            }
            // Read by the program that starts the server (goondan-base's sandbox), which
            // checks it with the bundle too.
            if let Some(setting) = map.get("sandbox") {
                s = s.sandbox(setting.clone());
            }
            let why = "`url` servers; a `command` server takes `env`";
            f.misplaced(&["headers", "auth"], why, out);
            s
        }
        (None, Some(url)) => {
            let mut s = McpServerConfig::http(name.clone().unwrap_or_default(), url);
            for (k, v) in f.pairs("headers", out) {
                s = s.header(k, v);
            }
            if let Some(auth) = map.get("auth") {
                s = s.auth(auth_of(r, &format!("{at}/auth"), auth, dir, out));
            }
            let why = "`command` servers; a `url` server takes `headers`";
            f.misplaced(&["args", "env", "cwd", "sandbox"], why, out);
            s
        }
        (Some(_), Some(_)) => {
            out.push(r.error_at(
                at,
                "an MCP server has either `command` (stdio) or `url` (Streamable HTTP), not both",
            ));
            return None;
        }
        (None, None) => {
            out.push(r.error_at(
                at,
                "an MCP server needs `command` (stdio) or `url` (Streamable HTTP)",
            ));
            return None;
        }
    };
    if let Some(include) = f.list("include", out) {
        server = server.include(include);
    }
    if let Some(exclude) = f.list("exclude", out) {
        server = server.exclude(exclude);
    }
    if let Some(t) = f.millis("startupTimeoutMs", out) {
        server = server.startup_timeout(t);
    }
    if let Some(t) = f.millis("callTimeoutMs", out) {
        server = server.call_timeout(t);
    }
    if let Some(version) = f.text("protocolVersion", false, out) {
        server = server.protocol_version(version);
    }
    if let Some(allowed) = f.flag("sampling", out) {
        server = server.sampling(allowed);
    }
    if let Some(required) = f.flag("required", out) {
        server = server.required(required);
    }
    let failed = out[before..].iter().any(|d| d.severity == Severity::Error);
    (!failed && name.is_some()).then_some(server)
}

/// A server's `auth`: `oauth`, `none`, `{oauth: {...}}`, `{clientCredentials: {...}}`,
/// `{workloadIdentity: {...}}` or `{enterprise: {...}}`.
fn auth_of(r: &Resource, at: &str, v: &Value, dir: &Path, out: &mut Vec<Diagnostic>) -> McpAuth {
    let shapes = "`auth` is `oauth`, `none`, `{oauth: {clientId?, clientSecretEnv?, clientMetadataUrl?, scopes?, dpop?}}`, `{clientCredentials: {clientId, clientSecretEnv or privateKeyFile, algorithm?, scopes?}}`, `{workloadIdentity: {clientId, assertionEnv or assertionFile, scopes?}}` or `{enterprise: {clientId, clientSecretEnv?, idpIssuer, idpTokenEndpoint, idpClientId, idpClientSecretEnv?, idTokenEnv or idTokenFile, scopes?}}`";
    let one = match v {
        Value::String(s) if s == "oauth" => return McpAuth::OAuth(OAuthClient::new()),
        Value::String(s) if s == "none" => return McpAuth::None,
        Value::Object(m) if m.len() == 1 => m.iter().next(),
        _ => None,
    };
    let Some((kind, Value::Object(fields))) = one else {
        out.push(r.error_at(at, shapes));
        return McpAuth::None;
    };
    let kind = kind.as_str();
    let at = format!("{at}/{kind}");
    let known = match kind {
        "oauth" => OAUTH_KEYS,
        "clientCredentials" => CLIENT_CREDENTIALS_KEYS,
        "workloadIdentity" => WORKLOAD_IDENTITY_KEYS,
        "enterprise" => ENTERPRISE_KEYS,
        _ => {
            out.push(r.error_at(&at, shapes));
            return McpAuth::None;
        }
    };
    let f = Fields {
        r,
        at: &at,
        map: fields,
    };
    for key in fields.keys().filter(|k| !known.contains(&k.as_str())) {
        let why = if let Some((_, instead)) = SECRET_FIELDS.iter().find(|(k, _)| k == key) {
            format!("`{key}`: a bundle does not hold secrets; name where it is read with {instead}")
        } else {
            format!(
                "unknown field `{key}` of `{kind}`; known: {}",
                known.join(", ")
            )
        };
        f.error(key, why, out);
    }
    let scopes = f.list("scopes", out).unwrap_or_default();
    let secret_env = f.text("clientSecretEnv", true, out).map(Secret::from_env);
    if kind == "workloadIdentity" || kind == "enterprise" {
        return grant_of(kind, &f, secret_env, scopes, dir, out).unwrap_or(McpAuth::None);
    }
    if kind == "oauth" {
        let mut client = OAuthClient::new().scopes(scopes);
        if let Some(on) = f.flag("dpop", out) {
            client = client.dpop(on);
        }
        if let Some(id) = f.text("clientId", true, out) {
            client = client.client_id(id);
        }
        if let Some(secret) = secret_env {
            client = client.client_secret(secret);
        }
        if let Some(url) = f.text("clientMetadataUrl", true, out) {
            client = client.client_metadata_url(url);
        }
        return McpAuth::OAuth(client);
    }
    let Some(id) = f.text("clientId", true, out) else {
        out.push(r.error_at(&at, "`clientCredentials` needs a `clientId`"));
        return McpAuth::None;
    };
    let key_file = f.text("privateKeyFile", true, out);
    let credentials = match (secret_env, key_file) {
        (Some(secret), None) => ClientCredentials::secret(id, secret),
        (None, Some(file)) => {
            let name = f
                .text("algorithm", true, out)
                .unwrap_or_else(|| "ES256".to_owned());
            let Some(algorithm) = JwtAlgorithm::from_name(&name) else {
                f.error(
                    "algorithm",
                    format!(
                        "`algorithm` is one of RS256, RS384, RS512, ES256, ES384, not `{name}`"
                    ),
                    out,
                );
                return McpAuth::None;
            };
            ClientCredentials::private_key_jwt(id, Secret::from_file(dir.join(file)), algorithm)
        }
        _ => {
            out.push(r.error_at(
                &at,
                "`clientCredentials` needs one of `clientSecretEnv` and `privateKeyFile`",
            ));
            return McpAuth::None;
        }
    };
    McpAuth::ClientCredentials(credentials.scopes(scopes))
}

/// The secret named by `{prefix}Env` or `{prefix}File` (one of the two).
fn secret_of(
    f: &Fields<'_>,
    prefix: &str,
    dir: &Path,
    out: &mut Vec<Diagnostic>,
) -> Option<Secret> {
    let env = f.text(&format!("{prefix}Env"), true, out);
    let file = f.text(&format!("{prefix}File"), true, out);
    match (env, file) {
        (Some(name), None) => Some(Secret::from_env(name)),
        (None, Some(file)) => Some(Secret::from_file(dir.join(file))),
        _ => {
            out.push(f.r.error_at(
                f.at,
                format!("name the {prefix} with one of `{prefix}Env` and `{prefix}File`"),
            ));
            None
        }
    }
}

/// A `workloadIdentity` or `enterprise` grant.
fn grant_of(
    kind: &str,
    f: &Fields<'_>,
    client_secret: Option<Secret>,
    scopes: Vec<String>,
    dir: &Path,
    out: &mut Vec<Diagnostic>,
) -> Option<McpAuth> {
    let Some(id) = f.text("clientId", true, out) else {
        out.push(f.r.error_at(f.at, format!("`{kind}` needs a `clientId`")));
        return None;
    };
    if kind == "workloadIdentity" {
        let assertion = secret_of(f, "assertion", dir, out)?;
        return Some(McpAuth::WorkloadIdentity(
            WorkloadIdentity::new(id, assertion).scopes(scopes),
        ));
    }
    let mut needed = |key: &str| {
        let v = f.text(key, true, out);
        if v.is_none() && !f.map.contains_key(key) {
            out.push(f.r.error_at(f.at, format!("`enterprise` needs `{key}`")));
        }
        v
    };
    let (issuer, endpoint, idp_client) = (
        needed("idpIssuer"),
        needed("idpTokenEndpoint"),
        needed("idpClientId"),
    );
    let id_token = secret_of(f, "idToken", dir, out);
    let mut idp = IdentityProvider::new(issuer?, endpoint?, idp_client?);
    if let Some(name) = f.text("idpClientSecretEnv", true, out) {
        idp = idp.client_secret(Secret::from_env(name));
    }
    let mut grant = EnterpriseGrant::new(idp, id_token?, id).scopes(scopes);
    if let Some(secret) = client_secret {
        grant = grant.client_secret(secret);
    }
    Some(McpAuth::Enterprise(grant))
}

/// A command with a `/` in it is a path, relative to the bundle's directory; a bare name is
/// looked up on `PATH` when the server starts.
fn resolve(dir: &Path, command: &str) -> PathBuf {
    let path = Path::new(command);
    if command.contains('/') && path.is_relative() {
        dir.join(path)
    } else {
        path.to_path_buf()
    }
}
