//! The bridge's OAuth, good and bad input, against real protected
//! servers (the conformance suite's client-scenario servers with their authorization servers,
//! in the suite's interactive mode), and a bundle's `auth`.
#![cfg(feature = "mcp")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use goondan_runtime::bundle::Bundle;
use goondan_runtime::mcp::client::{
    AuthState, ClientCredentials, EnterpriseGrant, IdentityProvider, JwtAlgorithm, McpAuth,
    McpClientError, McpExtension, McpExtensionConfig, McpServerConfig, OAuthClient, Secret,
    TokenStore, WorkloadIdentity,
};
use goondan_test_peers::mcp_peers::ProtectedServer;
use serde_json::json;

use crate::headless::Headless;
use crate::mcp_bridge::{Bridged, test_server};
use crate::oauth_server::{AuthServer, NonceDemand};

/// An OAuth server the extension cannot start without: the tests here read the start's
/// refusals from `connect`.
fn oauth(name: &str, url: &str) -> McpServerConfig {
    McpServerConfig::http(name, url)
        .required(true)
        .auth(McpAuth::OAuth(OAuthClient::new()))
        .startup_timeout(Duration::from_secs(15))
        .call_timeout(Duration::from_secs(15))
}

/// The reason of a start refused as `McpClientError::Unauthorized` for the server `tracker`.
fn refused_tracker(err: &McpClientError) -> &str {
    let McpClientError::Unauthorized { server, reason, .. } = err else {
        panic!("{err}");
    };
    assert_eq!(server, "tracker");
    reason
}

/// The line and message of each of `bundle`'s diagnostics.
fn problems(bundle: &Bundle) -> Vec<(usize, String)> {
    bundle
        .diagnostics()
        .iter()
        .map(|d| (d.line, d.message.clone()))
        .collect()
}

/// Nothing was written to the token store in `dir`.
fn assert_nothing_kept(dir: &std::path::Path) {
    assert_eq!(
        std::fs::read_dir(dir).map(Iterator::count).unwrap_or(0),
        0,
        "nothing is written to the token store"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_auth_a_call_that_needs_more_scope_steps_up_or_without_a_browser_is_e_mcp_auth_while_the_other_server_works()
 {
    // This server lists its tools with the first grant's scope and wants more for a call
    // (403 `insufficient_scope`).
    let protected = ProtectedServer::start("auth/scope-step-up");
    let tokens = tempfile::tempdir().unwrap();
    let store = || TokenStore::at(tokens.path());
    let login = McpExtensionConfig::new("t")
        .server(oauth("tracker", protected.url()))
        .token_store(store())
        .authorizer(Arc::new(Headless::new()));
    McpExtension::connect(login).await.unwrap().shutdown();
    let AuthState::LoggedIn { scopes: first, .. } = store().state("tracker", protected.url())
    else {
        panic!("the first grant is kept");
    };

    // A run without a browser: the kept grant lists the tools; the call that needs more is
    // E_MCP_AUTH with the way back, and the other server of the extension is not affected.
    let run = McpExtensionConfig::new("t")
        .server(oauth("tracker", protected.url()))
        .server(test_server("local"))
        .token_store(store());
    let mcp = McpExtension::connect(run).await.unwrap();
    let tool = mcp.tool_names("tracker").into_iter().next().unwrap();
    let bridged = Bridged::new(&mcp);
    let started = Instant::now();
    let refused = bridged.call(&tool, json!({})).await;
    assert_eq!(refused.error_code(), Some("E_MCP_AUTH"), "{refused:?}");
    let error = refused.error.as_ref().unwrap();
    assert!(error.message().contains("`tracker`"), "{error:?}");
    assert!(
        error
            .suggestion()
            .is_some_and(|s| s.contains("goondan mcp login tracker")),
        "{error:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let local = bridged.call("local__where", json!({})).await;
    assert!(local.is_ok(), "{local:?}");
    mcp.shutdown();

    // With a browser, the same call steps up: the new grant holds the old scope and the
    // challenged one, and the call runs.
    let with_browser = McpExtensionConfig::new("t")
        .server(oauth("tracker", protected.url()))
        .token_store(store())
        .authorizer(Arc::new(Headless::new()));
    let mcp = McpExtension::connect(with_browser).await.unwrap();
    let done = Bridged::new(&mcp).call(&tool, json!({})).await;
    assert!(done.is_ok(), "{done:?}");
    let AuthState::LoggedIn { scopes: now, .. } = store().state("tracker", protected.url()) else {
        panic!("the stepped-up grant is kept");
    };
    assert!(
        first.iter().all(|s| now.contains(s)) && now.len() > first.len(),
        "{first:?} -> {now:?}"
    );
    mcp.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_auth_metadata_with_a_wrong_issuer_is_refused_naming_the_server_and_nothing_is_kept() {
    let protected = ProtectedServer::start("auth/metadata-issuer-mismatch");
    let tokens = tempfile::tempdir().unwrap();
    let config = McpExtensionConfig::new("t")
        .server(oauth("tracker", protected.url()))
        .token_store(TokenStore::at(tokens.path()))
        .authorizer(Arc::new(Headless::new()));
    let err = McpExtension::connect(config).await.unwrap_err();
    let reason = refused_tracker(&err);
    assert!(reason.to_lowercase().contains("issuer"), "{reason}");
    assert_nothing_kept(tokens.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_auth_a_redirect_to_another_address_during_login_is_refused_and_nothing_is_kept() {
    let protected = ProtectedServer::start("auth/metadata-default");
    let tokens = tempfile::tempdir().unwrap();
    // The authorization server (or whatever stands between) sends the browser elsewhere
    // than this client's loopback redirect URI.
    let elsewhere = Headless {
        rewrite: |u| u.replace("127.0.0.1:3000", "203.0.113.9:3000"),
    };
    let config = McpExtensionConfig::new("t")
        .server(oauth("tracker", protected.url()))
        .token_store(TokenStore::at(tokens.path()))
        .authorizer(Arc::new(elsewhere));
    let err = McpExtension::connect(config).await.unwrap_err();
    let reason = refused_tracker(&err);
    assert!(reason.contains("203.0.113.9"), "{reason}");
    assert!(
        !tokens.path().join("tracker.json").exists(),
        "nothing is written to the token store"
    );
}

/// A refresh token the authorization server has revoked. The kept access
/// token has expired, so the start refreshes; the server refuses (`invalid_grant`): the start
/// ends at once with the login command, naming the server, the dead tokens are forgotten,
/// and the other server of the extension is not affected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_auth_a_revoked_refresh_token_is_refused_with_the_login_command_not_a_hang_and_forgotten()
 {
    let server = AuthServer::start("127.0.0.1").await;
    let tokens = tempfile::tempdir().unwrap();
    // What a login an hour ago left: an access token that lived 60 s, and a refresh token.
    let received = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 3600;
    std::fs::write(
        tokens.path().join("tracker.json"),
        json!({"url": server.url(), "credentials": {
            "client_id": "registered-client",
            "token_response": {"access_token": "at-0", "token_type": "bearer",
                "expires_in": 60, "refresh_token": "rt-revoked"},
            "granted_scopes": [], "token_received_at": received, "issuer": server.issuer()}})
        .to_string(),
    )
    .unwrap();
    let store = TokenStore::at(tokens.path());
    assert!(matches!(
        store.state("tracker", &server.url()),
        AuthState::LoggedIn {
            refreshable: true,
            ..
        }
    ));
    let started = Instant::now();
    let run = McpExtensionConfig::new("t")
        .server(oauth("tracker", &server.url()))
        .server(test_server("local"))
        .token_store(store.clone());
    let err = McpExtension::connect(run).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let reason = refused_tracker(&err);
    assert!(
        err.to_string().contains("goondan mcp login tracker"),
        "{err}"
    );
    assert!(
        !reason.contains("rt-revoked") && !err.to_string().contains("at-0"),
        "{err}"
    );
    let refreshed = server
        .seen()
        .into_iter()
        .filter(|s| s.path == "/token")
        .collect::<Vec<_>>();
    assert_eq!(refreshed.len(), 1, "{refreshed:?}");
    assert!(
        refreshed[0].body.contains("refresh_token=rt-revoked"),
        "{refreshed:?}"
    );
    assert_eq!(
        store.state("tracker", &server.url()),
        AuthState::LoggedOut,
        "the refused tokens are forgotten"
    );
    // The extension without the server that needs a login works.
    let mcp = McpExtension::connect(
        McpExtensionConfig::new("t")
            .server(test_server("local"))
            .token_store(store),
    )
    .await
    .unwrap();
    let local = Bridged::new(&mcp).call("local__where", json!({})).await;
    assert!(local.is_ok(), "{local:?}");
    mcp.shutdown();
}

/// The access token a run started with expires, and the
/// authorization server refuses its refresh token. The next call is `E_MCP_AUTH` at once,
/// naming the server, with the login command as its suggestion; the refused tokens are
/// forgotten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_auth_a_refresh_token_refused_during_a_run_makes_the_call_e_mcp_auth_with_the_login_command()
 {
    // Access tokens live 10 s: rmcp refreshes when less than half is left.
    let server = AuthServer::start_with("127.0.0.1", 10).await;
    let tokens = tempfile::tempdir().unwrap();
    let store = TokenStore::at(tokens.path());
    let login = McpExtensionConfig::new("t")
        .server(oauth("tracker", &server.url()))
        .token_store(store.clone())
        .authorizer(Arc::new(Headless::new()));
    McpExtension::connect(login).await.unwrap().shutdown();
    let logged_in = Instant::now();
    // A run without a browser, while the token is fresh.
    let run = McpExtensionConfig::new("t")
        .server(oauth("tracker", &server.url()))
        .token_store(store.clone());
    let mcp = McpExtension::connect(run).await.unwrap();
    assert!(
        logged_in.elapsed() < Duration::from_secs(5),
        "the run started after the token was due for refresh: {:?}",
        logged_in.elapsed()
    );
    let bridged = Bridged::new(&mcp);
    let pong = bridged.call("tracker__ping", json!({})).await;
    assert!(pong.is_ok(), "{pong:?}");
    tokio::time::sleep(Duration::from_secs(6).saturating_sub(logged_in.elapsed())).await;
    let started = Instant::now();
    let refused = bridged.call("tracker__ping", json!({})).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(refused.error_code(), Some("E_MCP_AUTH"), "{refused:?}");
    let error = refused.error.as_ref().unwrap();
    assert!(error.message().contains("`tracker`"), "{error:?}");
    assert!(
        error
            .suggestion()
            .is_some_and(|s| s.contains("goondan mcp login tracker")),
        "{error:?}"
    );
    assert!(
        server
            .seen()
            .iter()
            .any(|s| s.path == "/token" && s.body.contains("grant_type=refresh_token")),
        "the call tried the refresh token first"
    );
    assert_eq!(store.state("tracker", &server.url()), AuthState::LoggedOut);
    mcp.shutdown();
}

/// Authorization-server metadata that names a token endpoint on another
/// origin than the server it describes. Nothing is sent there: no code is asked for (the
/// person is never sent to authorize), kept tokens are not refreshed there, and nothing is
/// written to the token store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_auth_a_token_endpoint_on_another_origin_is_refused_naming_the_server_and_nothing_is_kept()
 {
    let server = AuthServer::start("localhost").await;
    let tokens = tempfile::tempdir().unwrap();
    let config = McpExtensionConfig::new("t")
        .server(oauth("tracker", &server.url()))
        .token_store(TokenStore::at(tokens.path()))
        .authorizer(Arc::new(Headless::new()));
    let err = McpExtension::connect(config).await.unwrap_err();
    let reason = refused_tracker(&err);
    assert!(reason.contains("another origin"), "{reason}");
    let seen = server.seen();
    assert!(
        !seen
            .iter()
            .any(|s| s.path.starts_with("/authorize") || s.path.starts_with("/token")),
        "{seen:?}"
    );
    assert_nothing_kept(tokens.path());

    // The same server with its own origin goes as far as the token exchange.
    let honest = AuthServer::start("127.0.0.1").await;
    let config = McpExtensionConfig::new("t")
        .server(oauth("tracker", &honest.url()))
        .token_store(TokenStore::at(tokens.path()))
        .authorizer(Arc::new(Headless::new()));
    let _ = McpExtension::connect(config).await;
    assert!(
        honest.seen().iter().any(|s| s.path == "/token"),
        "{:?}",
        honest.seen()
    );
}

#[test]
fn mcp_auth_a_bundle_says_oauth_or_client_credentials_and_protocol_version_and_holds_no_secret() {
    let yaml = r#"
apiVersion: goondan.ai/v1
kind: Extension
metadata: {name: mcp}
spec:
  mcp:
    servers:
      - name: tracker
        url: https://mcp.tracker.example/mcp
        protocolVersion: "2026-07-28"
        auth: oauth
      - name: docs
        url: https://mcp.docs.example/mcp
        auth: {oauth: {clientId: goondan, clientSecretEnv: DOCS_SECRET, scopes: [read]}}
      - name: builds
        url: https://mcp.ci.example/mcp
        auth:
          clientCredentials: {clientId: ci, privateKeyFile: keys/ci.pem, algorithm: RS256}
"#;
    let bundle = Bundle::from_yaml(yaml, "/b/goondan.yaml");
    assert!(
        bundle.diagnostics().is_empty(),
        "{:?}",
        bundle.diagnostics()
    );
    let config = bundle.mcp_extension("mcp").unwrap();
    let servers = config.servers();
    assert_eq!(
        servers[0],
        McpServerConfig::http("tracker", "https://mcp.tracker.example/mcp")
            .protocol_version("2026-07-28")
            .auth(McpAuth::OAuth(OAuthClient::new()))
    );
    assert_eq!(
        servers[1].authorization(),
        &McpAuth::OAuth(
            OAuthClient::new()
                .client_id("goondan")
                .client_secret(Secret::from_env("DOCS_SECRET"))
                .scopes(["read"])
        )
    );
    assert_eq!(
        servers[2].authorization(),
        &McpAuth::ClientCredentials(ClientCredentials::private_key_jwt(
            "ci",
            Secret::from_file("/b/keys/ci.pem"),
            JwtAlgorithm::Rs256
        ))
    );

    let bad = r#"
apiVersion: goondan.ai/v1
kind: Extension
metadata: {name: mcp}
spec:
  mcp:
    servers:
      - name: a
        url: https://a.example/mcp
        auth: {clientCredentials: {clientId: x, clientSecret: hunter2}}
      - name: b
        url: https://b.example/mcp
        protocolVersion: "1999-01-01"
      - name: c
        command: server
        auth: oauth
      - name: d
        url: https://d.example/mcp
        auth: password
"#;
    let bundle = Bundle::from_yaml(bad, "goondan.yaml");
    let problems = problems(&bundle);
    let has =
        |line: usize, text: &str| problems.iter().any(|(l, m)| *l == line && m.contains(text));
    assert!(has(10, "does not hold secrets"), "{problems:?}");
    assert!(has(16, "`auth` is for `url` servers"), "{problems:?}");
    assert!(has(19, "`auth` is `oauth`"), "{problems:?}");
    assert!(
        problems
            .iter()
            .any(|(_, m)| m.contains("1999-01-01") && m.contains("2026-07-28")),
        "{problems:?}"
    );
    assert!(bundle.mcp_extension("mcp").is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_auth_dpop_nonces_that_never_settle_or_are_garbage_fail_the_start_after_a_bounded_number_of_requests()
 {
    // (how the server asks, the endpoint that asks, how many requests reach it)
    for (demand, path, expected) in [
        // The first proof, then one retry for each of two new nonces.
        (NonceDemand::TokenEveryTime, "/token", 3),
        // A nonce that is not one is not retried.
        (NonceDemand::TokenGarbage, "/token", 1),
        // The request without a token; then three proofs, and a `ping` for each nonce read.
        (NonceDemand::ServerEveryTime, "/mcp", 6),
    ] {
        let server = AuthServer::start_demanding(demand).await;
        let tokens = tempfile::tempdir().unwrap();
        let config = McpExtensionConfig::new("t")
            .server(
                oauth("tracker", &server.url()).auth(McpAuth::OAuth(OAuthClient::new().dpop(true))),
            )
            .token_store(TokenStore::at(tokens.path()))
            .authorizer(Arc::new(Headless::new()));
        let started = Instant::now();
        let err = McpExtension::connect(config).await.unwrap_err();
        let why = if path == "/token" {
            "use_dpop_nonce"
        } else {
            "DPoP nonce"
        };
        assert!(err.to_string().contains(why), "{demand:?}: {err}");
        assert!(started.elapsed() < Duration::from_secs(10), "{demand:?}");
        let seen = server.seen();
        let hits = seen.iter().filter(|s| s.path == path).count();
        assert_eq!(hits, expected, "{demand:?}: {seen:?}");
    }
}

#[test]
fn mcp_auth_a_bundle_names_where_a_workload_jwt_or_an_id_token_is_read_and_binds_tokens_with_dpop()
{
    let yaml = r#"
apiVersion: goondan.ai/v1
kind: Extension
metadata: {name: mcp}
spec:
  mcp:
    servers:
      - name: deploys
        url: https://mcp.deploy.example/mcp
        auth: {oauth: {dpop: true}}
      - name: cluster
        url: https://mcp.cluster.example/mcp
        auth: {workloadIdentity: {clientId: agent-7, assertionFile: tokens/mcp, scopes: [read]}}
      - name: wiki
        url: https://mcp.wiki.example/mcp
        auth:
          enterprise:
            clientId: goondan
            clientSecretEnv: WIKI_SECRET
            idpIssuer: https://login.corp.example
            idpTokenEndpoint: https://login.corp.example/token
            idpClientId: goondan-idp
            idTokenEnv: CORP_ID_TOKEN
"#;
    let bundle = Bundle::from_yaml(yaml, "/b/goondan.yaml");
    assert!(
        bundle.diagnostics().is_empty(),
        "{:?}",
        bundle.diagnostics()
    );
    let config = bundle.mcp_extension("mcp").unwrap();
    let servers = config.servers();
    assert_eq!(
        servers[0].authorization(),
        &McpAuth::OAuth(OAuthClient::new().dpop(true))
    );
    assert_eq!(
        servers[1].authorization(),
        &McpAuth::WorkloadIdentity(
            WorkloadIdentity::new("agent-7", Secret::from_file("/b/tokens/mcp")).scopes(["read"])
        )
    );
    let idp = IdentityProvider::new(
        "https://login.corp.example",
        "https://login.corp.example/token",
        "goondan-idp",
    );
    assert_eq!(
        servers[2].authorization(),
        &McpAuth::Enterprise(
            EnterpriseGrant::new(idp, Secret::from_env("CORP_ID_TOKEN"), "goondan")
                .client_secret(Secret::from_env("WIKI_SECRET"))
        )
    );

    let bad = r#"
apiVersion: goondan.ai/v1
kind: Extension
metadata: {name: mcp}
spec:
  mcp:
    servers:
      - name: a
        url: https://a.example/mcp
        auth: {workloadIdentity: {clientId: w, assertion: eyJhbGciOiJFUzI1NiJ9.e30.c2ln}}
      - name: b
        url: https://b.example/mcp
        auth: {enterprise: {clientId: g, idpIssuer: https://i, idpTokenEndpoint: https://i/t, idpClientId: c, idToken: eyJ}}
      - name: c
        url: https://c.example/mcp
        auth: {workloadIdentity: {clientId: w, assertionEnv: A, assertionFile: a.jwt}}
      - name: d
        url: https://d.example/mcp
        auth: {enterprise: {clientId: g, idTokenEnv: T}}
      - name: e
        url: https://e.example/mcp
        auth: {oauth: {dpop: yes please}}
"#;
    let bundle = Bundle::from_yaml(bad, "goondan.yaml");
    let problems = problems(&bundle);
    let has =
        |line: usize, text: &str| problems.iter().any(|(l, m)| *l == line && m.contains(text));
    assert!(has(10, "does not hold secrets"), "{problems:?}");
    assert!(has(10, "assertionEnv"), "{problems:?}");
    assert!(has(13, "does not hold secrets"), "{problems:?}");
    assert!(has(13, "idTokenFile"), "{problems:?}");
    assert!(
        has(16, "one of `assertionEnv` and `assertionFile`"),
        "{problems:?}"
    );
    assert!(has(19, "needs `idpIssuer`"), "{problems:?}");
    assert!(has(22, "`dpop` is `true` or `false`"), "{problems:?}");
    // No secret's value is repeated in a diagnostic.
    assert!(
        !problems
            .iter()
            .any(|(_, m)| m.contains("c2ln") || m.contains("eyJ")),
        "{problems:?}"
    );
    assert!(bundle.mcp_extension("mcp").is_err());
}
