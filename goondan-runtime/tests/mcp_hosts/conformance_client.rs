//! The client of `tests/it/mcp_conformance_client.rs`: the MCP conformance suite's client
//! scenarios run it as `conformance client --command <this>`, with the scenario's server URL
//! as the last argument and `MCP_CONFORMANCE_SCENARIO`, `MCP_CONFORMANCE_PROTOCOL_VERSION` and
//! `MCP_CONFORMANCE_CONTEXT` in its environment.
//!
//! It is what a user of the bridge writes: an [`McpExtension`] with one HTTP server (its
//! protocol version, and `auth` for the `auth/*` scenarios), an agent holding the bridged
//! tools, and calls through the agent's executor. The one thing a person would do, opening the
//! authorization URL, is done by `Headless`: the suite's authorization server approves at
//! once and redirects. Built only for the tests.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

#[path = "../support/headless.rs"]
mod headless;

use headless::Headless;

use goondan_runtime::mcp::client::{
    ClientCredentials, E_MCP_SKILL_MISMATCH, EnterpriseGrant, IdentityProvider, JwtAlgorithm,
    McpAuth, McpExtension, McpExtensionConfig, McpServerConfig, OAuthClient, Secret, TokenStore,
    WorkloadIdentity,
};
use goondan_runtime::step::{AgentInstance, ScriptedModel};
use goondan_runtime::tools::context::{AnswerFuture, AskError, Caller, LogLevel, Question};
use goondan_runtime::{ToolCall, ToolContext, ToolExecutor, ToolRegistry};
use serde_json::{Map, Value};

/// The client ID metadata document the suite's `auth/basic-cimd` scenario expects a client to
/// name (any HTTPS URL; the suite's authorization server does not fetch it).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// `MCP_CONFORMANCE_CONTEXT`: what some scenarios give the client.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Context {
    #[serde(default)]
    tool_calls: Vec<PlannedCall>,
    #[serde(default, alias = "client_id")]
    client_id: Option<String>,
    #[serde(default, alias = "client_secret")]
    client_secret: Option<String>,
    #[serde(default, alias = "private_key_pem")]
    private_key_pem: Option<String>,
    #[serde(default, alias = "signing_algorithm")]
    signing_algorithm: Option<String>,
    /// `auth/wif-jwt-bearer`: the workload's JWT.
    #[serde(default, alias = "valid_jwt")]
    valid_jwt: Option<String>,
    /// `auth/enterprise-managed-authorization`: the identity provider and its ID token.
    #[serde(default, alias = "idp_issuer")]
    idp_issuer: Option<String>,
    #[serde(default, alias = "idp_token_endpoint")]
    idp_token_endpoint: Option<String>,
    #[serde(default, alias = "idp_client_id")]
    idp_client_id: Option<String>,
    #[serde(default, alias = "idp_id_token")]
    idp_id_token: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
struct PlannedCall {
    name: String,
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
}

/// Who called: a person who accepts every form as it is pre-filled (the schema's defaults),
/// and a model that answers every sampling request with one sentence.
struct Person;

impl Caller for Person {
    fn can_answer(&self, _question: &Question) -> bool {
        true
    }

    fn ask(&self, _key: Option<&str>, question: Question) -> AnswerFuture {
        Box::pin(async move {
            match question {
                Question::Elicit { schema, .. } => {
                    let mut content = Map::new();
                    if let Some(properties) = schema["properties"].as_object() {
                        for (name, property) in properties {
                            if let Some(default) = property.get("default") {
                                content.insert(name.clone(), default.clone());
                            }
                        }
                    }
                    Ok(serde_json::json!({"action": "accept", "content": content}))
                }
                Question::Sample(_) => Ok(serde_json::json!({
                    "role": "assistant",
                    "content": {"type": "text", "text": "An answer from the conformance client."},
                    "model": "conformance-client",
                    "stopReason": "endTurn",
                })),
                Question::Roots => Ok(serde_json::json!({"roots": []})),
                _ => Err(AskError::Unsupported {
                    capability: "unknown",
                }),
            }
        })
    }

    fn log(&self, _level: LogLevel, _data: Value) {}
}

/// The `auth` a user would configure for the server of `scenario`. A secret the scenario
/// gives (a workload's JWT, an ID token) is written to a file in `dir` and named, as a bundle
/// names it.
fn auth_for(scenario: &str, context: &Context, dir: &Path) -> Result<McpAuth, String> {
    let Some(auth) = scenario.strip_prefix("auth/") else {
        return Ok(McpAuth::None);
    };
    let client_id = || {
        context
            .client_id
            .clone()
            .ok_or_else(|| format!("the scenario `{scenario}` gave no client_id"))
    };
    let given = |field: &Option<String>, name: &str| {
        field
            .clone()
            .ok_or_else(|| format!("the scenario `{scenario}` gave no {name}"))
    };
    let secret_file = |name: &str, value: String| {
        let path = dir.join(name);
        std::fs::write(&path, value).map_err(|e| e.to_string())?;
        Ok::<_, String>(Secret::from_file(path))
    };
    if auth == "wif-jwt-bearer" {
        let jwt = secret_file("workload.jwt", given(&context.valid_jwt, "valid_jwt")?)?;
        return Ok(McpAuth::WorkloadIdentity(WorkloadIdentity::new(
            client_id()?,
            jwt,
        )));
    }
    if auth == "enterprise-managed-authorization" {
        let idp = IdentityProvider::new(
            given(&context.idp_issuer, "idp_issuer")?,
            given(&context.idp_token_endpoint, "idp_token_endpoint")?,
            given(&context.idp_client_id, "idp_client_id")?,
        );
        let id_token = secret_file("id.jwt", given(&context.idp_id_token, "idp_id_token")?)?;
        let secret = secret_file(
            "client.secret",
            given(&context.client_secret, "client_secret")?,
        )?;
        return Ok(McpAuth::Enterprise(
            EnterpriseGrant::new(idp, id_token, client_id()?).client_secret(secret),
        ));
    }
    if auth.starts_with("client-credentials") {
        let id = client_id()?;
        return Ok(McpAuth::ClientCredentials(
            match (&context.private_key_pem, &context.client_secret) {
                (Some(pem), _) => {
                    let name = context.signing_algorithm.as_deref().unwrap_or("ES256");
                    let algorithm = JwtAlgorithm::from_name(name)
                        .ok_or_else(|| format!("unknown signing algorithm `{name}`"))?;
                    ClientCredentials::private_key_jwt(id, Secret::new(pem.clone()), algorithm)
                }
                (None, Some(secret)) => ClientCredentials::secret(id, Secret::new(secret.clone())),
                (None, None) => return Err("the scenario gave no client credentials".into()),
            },
        ));
    }
    let mut client = OAuthClient::new()
        .client_metadata_url(CLIENT_METADATA_URL)
        .dpop(auth.starts_with("dpop"));
    if let Some(id) = &context.client_id {
        client = client.client_id(id.clone());
        if let Some(secret) = &context.client_secret {
            client = client.client_secret(Secret::new(secret.clone()));
        }
    }
    Ok(McpAuth::OAuth(client))
}

/// Arguments for a tool the scenario did not plan: a plain value of each required property.
fn arguments_for(schema: &Value) -> Value {
    let mut args = Map::new();
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        let value = match schema["properties"][name]["type"].as_str() {
            Some("number") => Value::from(1.0),
            Some("integer") => Value::from(1),
            Some("boolean") => Value::Bool(true),
            Some("array") => Value::Array(Vec::new()),
            Some("object") => Value::Object(Map::new()),
            _ => Value::from("test"),
        };
        args.insert(name.to_owned(), value);
    }
    Value::Object(args)
}

async fn run(scenario: &str, url: &str, context: &Context) -> Result<(), String> {
    let state = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut server = McpServerConfig::http("suite", url)
        .startup_timeout(Duration::from_secs(20))
        .call_timeout(Duration::from_secs(20))
        .auth(auth_for(scenario, context, state.path())?);
    if let Ok(version) = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION") {
        server = server.protocol_version(version);
    }
    let config = McpExtensionConfig::new("conformance")
        .server(server)
        .token_store(TokenStore::at(state.path().join("tokens")))
        .authorizer(Arc::new(Headless::new()));
    let mcp = McpExtension::connect(config)
        .await
        .map_err(|e| e.to_string())?;
    if scenario.starts_with("sep-2640-client-") {
        let outcome = skills(scenario, &mcp).await;
        mcp.shutdown();
        return outcome;
    }
    let registry = Arc::new(ToolRegistry::new());
    let agent = AgentInstance::builder(
        "client",
        Arc::clone(&registry),
        Arc::new(ScriptedModel::new([])),
    )
    .state_dir(state.path())
    .extension(mcp.clone())
    .build()
    .map_err(|e| e.to_string())?;
    let catalog = agent.base_catalog().map_err(|e| e.to_string())?;
    let executor = ToolExecutor::new(registry);
    let ctx = ToolContext::builder(agent.workdir())
        .caller(Arc::new(Person))
        .build();
    let schema_of = |name: &str| {
        catalog
            .get(name)
            .and_then(|item| item.parameters().cloned())
            .unwrap_or_default()
    };
    let local = |remote: &str| goondan_runtime::mcp::client::local_name("suite", remote).full;
    let planned: Vec<(String, Value)> = if scenario == "json-schema-2020-12-preservation" {
        // The scenario asks for the focal tool's schema, as this client holds it, back
        // through its echo tool.
        let schema = schema_of(&local("json_schema_2020_12_tool"));
        vec![(
            local("json_schema_echo"),
            serde_json::json!({ "schema": schema }),
        )]
    } else if context.tool_calls.is_empty() {
        mcp.tool_names("suite")
            .into_iter()
            .map(|name| {
                let args = arguments_for(&schema_of(&name));
                (name, args)
            })
            .collect()
    } else {
        context
            .tool_calls
            .iter()
            .map(|c| {
                // The executor holds arguments to the tool's schema, where `null` is not a
                // boolean: a parameter the plan leaves null is left out, as a model does once
                // it reads that refusal.
                let mut args = c.arguments.clone().unwrap_or_default();
                args.retain(|_, v| !v.is_null());
                (local(&c.name), Value::Object(args))
            })
            .collect()
    };
    let mut failures = Vec::new();
    for (i, (name, args)) in planned.into_iter().enumerate() {
        let result = executor
            .execute(ToolCall::new(format!("c{i}"), &name, args), &ctx, &catalog)
            .await;
        eprintln!(
            "{name}: {}",
            serde_json::to_string(&result).unwrap_or_default()
        );
        if let Some(code) = result.error_code()
            && code.starts_with("E_MCP_AUTH")
        {
            failures.push(format!("{name}: {code}"));
        }
    }
    mcp.shutdown();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

/// The Skills scenarios: what a host does with a server's skills. It lists them (no file
/// read); in the `verify` scenarios it loads the first one, whose `SKILL.md` the server has
/// tampered with, and must refuse it, reading nothing more.
async fn skills(scenario: &str, mcp: &McpExtension) -> Result<(), String> {
    let listed = mcp.skills().await;
    eprintln!("skills: {listed:?}");
    let Some(skill) = listed.first() else {
        return Err("the server listed no skill".into());
    };
    if scenario == "sep-2640-client-no-prefetch" {
        return Ok(());
    }
    match mcp.load_skill(&skill.server, &skill.uri).await {
        Err(e) if e.code() == E_MCP_SKILL_MISMATCH => {
            eprintln!("refused: {}", e.message());
            Ok(())
        }
        Err(e) => Err(format!("loading {} failed otherwise: {e:?}", skill.uri)),
        Ok(_) => Err(format!(
            "{} was loaded although it was tampered with",
            skill.uri
        )),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: goondan-test-mcp-conformance-client SERVER_URL");
        return ExitCode::from(2);
    };
    let context: Context = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(text) => match serde_json::from_str(&text) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("MCP_CONFORMANCE_CONTEXT: {e}");
                return ExitCode::from(2);
            }
        },
        Err(_) => Context::default(),
    };
    // The suite gives a client 30 s; a client that waits longer is a hang, not an answer.
    match tokio::time::timeout(Duration::from_secs(25), run(&scenario, &url, &context)).await {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("{scenario}: {e}");
            ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!("{scenario}: timed out");
            ExitCode::FAILURE
        }
    }
}
