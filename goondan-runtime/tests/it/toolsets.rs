//! Toolsets: tools filtered, prefixed, renamed and combined, in Rust and in a
//! bundle's `spec.tools`; the final names are what the model, the executor, approvals and the
//! MCP server see.

use std::sync::Arc;

use goondan_runtime::ToolExecutor;
use goondan_runtime::bundle::{Bundle, Severity, ToolLibrary};
use goondan_runtime::calls::approval::{Approvals, Decision, Policy, approver_fn};
use goondan_runtime::mcp::server::McpServer;
use goondan_runtime::prelude::*;
use goondan_runtime::step::{AgentInstance, ModelResponse, ScriptedModel, StepError};
use goondan_runtime::tools::tool::SourceKind;
use goondan_runtime::tools::toolset::{self, Hint, Toolset, ToolsetError};
use serde_json::json;

/// Issues.
#[tool(name = "github")]
pub mod github {
    /// List the issues of a repository.
    #[export(read_only)]
    pub fn list_issues(repo: String) -> String {
        format!("issues of {repo}")
    }
    /// Read one issue.
    #[export(read_only)]
    pub fn get_issue(number: u32) -> String {
        format!("issue #{number}")
    }
    /// Close an issue.
    #[export(destructive)]
    pub fn close_issue(number: u32) -> String {
        format!("closed #{number}")
    }
}

/// Tickets.
#[tool(name = "jira")]
pub mod jira {
    /// List the issues of a project.
    #[export(read_only)]
    pub fn list_issues(project: String) -> String {
        format!("tickets of {project}")
    }
}

fn registry() -> Arc<ToolRegistry> {
    Arc::new(
        ToolRegistry::builder()
            .tool(github::TOOL)
            .tool(jira::TOOL)
            .build()
            .unwrap(),
    )
}

fn names(sets: &[Toolset]) -> Result<Vec<String>, ToolsetError> {
    Ok(toolset::catalog(&registry(), sets)?
        .names()
        .map(str::to_owned)
        .collect())
}

#[test]
fn a_toolset_filters_prefixes_renames_and_combines() {
    assert_eq!(
        names(&[Toolset::of("github").when(Hint::ReadOnly, true)]).unwrap(),
        ["github__list_issues", "github__get_issue"]
    );
    assert_eq!(
        names(&[Toolset::of("github")
            .include(["*_issue"])
            .exclude(["close_*"])])
        .unwrap(),
        ["github__get_issue"]
    );
    assert_eq!(
        names(&[
            Toolset::of("github")
                .prefix("gh")
                .rename("github__get_issue", "issue"),
            Toolset::of("jira").rename("list_issues", "tickets__list"),
        ])
        .unwrap(),
        [
            "gh__list_issues",
            "gh__issue",
            "gh__close_issue",
            "tickets__list"
        ]
    );
    // Combined under one prefix, renamed apart.
    assert_eq!(
        names(&[Toolset::of("github")
            .and("jira")
            .prefix("work")
            .include(["list_issues"])
            .rename("jira__list_issues", "list_tickets")])
        .unwrap(),
        ["work__list_issues", "work__list_tickets"]
    );
}

#[test]
fn wrong_toolsets_are_clear_errors() {
    let clash = names(&[Toolset::of("github")
        .and("jira")
        .prefix("work")
        .include(["list_issues"])]);
    assert_eq!(
        clash,
        Err(ToolsetError::Clash {
            name: "work__list_issues".into(),
            first: "github__list_issues".into(),
            second: "jira__list_issues".into()
        })
    );
    let across = names(&[
        Toolset::of("github").include(["list_issues"]),
        Toolset::of("jira").prefix("github"),
    ]);
    assert!(
        matches!(across, Err(ToolsetError::Clash { .. })),
        "{across:?}"
    );
    assert!(matches!(
        names(&[Toolset::of("github").include(["nothing_*"])]),
        Err(ToolsetError::Empty { .. })
    ));
    assert!(matches!(
        names(&[Toolset::of("github").prefix("Not Valid")]),
        Err(ToolsetError::InvalidName { .. })
    ));
    assert!(matches!(
        names(&[Toolset::of("github").rename("list_issues", "a__b__c")]),
        Err(ToolsetError::InvalidName { .. })
    ));
    assert!(matches!(
        names(&[Toolset::of("github").rename("delete_repo", "x")]),
        Err(ToolsetError::RenameUnknown { .. })
    ));
    let cycle = names(&[Toolset::of("github")
        .rename("list_issues", "get_issue")
        .rename("get_issue", "list_issues")]);
    assert!(
        matches!(cycle, Err(ToolsetError::RenameChain { .. })),
        "{cycle:?}"
    );
    assert!(matches!(
        names(&[Toolset::of("gitlab")]),
        Err(ToolsetError::UnknownResource { .. })
    ));
}

#[tokio::test]
async fn the_final_names_are_what_the_executor_and_approvals_see_and_the_source_is_kept() {
    let registry = registry();
    let catalog = toolset::catalog(&registry, &[Toolset::of("github").prefix("gh")]).unwrap();
    let item = catalog.get("gh__close_issue").unwrap();
    assert_eq!(item.source().map(|s| s.kind), Some(SourceKind::Config));
    assert_eq!(item.source().map(|s| s.name.as_str()), Some("github"));
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let approvals = Approvals::new(approver_fn(move |request| {
        seen.lock().unwrap().push(request.tool_name().to_owned());
        async { Decision::Approve }
    }))
    .policy("gh__close_*", Policy::Ask)
    .default_policy(Policy::Allow);
    let executor = ToolExecutor::builder(Arc::clone(&registry))
        .middleware(approvals)
        .build();
    let ctx = ToolContext::builder(std::env::temp_dir()).build();
    let closed = executor
        .execute(
            ToolCall::new("c1", "gh__close_issue", json!({"number": 7})),
            &ctx,
            &catalog,
        )
        .await;
    assert_eq!(closed.output, Some(json!("closed #7")));
    assert_eq!(&*closed.tool_name, "gh__close_issue");
    assert_eq!(*asked.lock().unwrap(), ["gh__close_issue"]);
    // The registry's own name is not in the catalog.
    let original = executor
        .execute(
            ToolCall::new("c2", "github__close_issue", json!({"number": 7})),
            &ctx,
            &catalog,
        )
        .await;
    assert_eq!(original.error_code(), Some("E_TOOL_NOT_IN_CATALOG"));
}

const BUNDLE: &str = "apiVersion: goondan.ai/v1\nkind: Tool\nmetadata: {name: github}\nspec:\n  exports:\n    - name: list_issues\n    - name: get_issue\n    - name: close_issue\n---\napiVersion: goondan.ai/v1\nkind: Tool\nmetadata: {name: jira}\nspec:\n  exports:\n    - name: list_issues\n---\napiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: triage}\nspec:\n  tools:\n    - ref: Tool/github\n      prefix: gh\n      annotations: {readOnly: true}\n      rename: {get_issue: issue}\n    - ref: Tool/jira\n      exclude: [\"nothing\"]\n";

fn library() -> ToolLibrary {
    ToolLibrary::new([github::TOOL, jira::TOOL])
}

#[tokio::test]
async fn a_bundles_spec_tools_shape_the_agents_catalog_and_its_mcp_server() {
    let bundle = Bundle::from_yaml(BUNDLE, "g.yaml").checked().unwrap();
    let registry = Arc::new(bundle.registry(&library()).unwrap());
    let model = Arc::new(ScriptedModel::new([
        ModelResponse::calls([ToolCall::new("c1", "gh__issue", json!({"number": 3}))]),
        ModelResponse::text("done"),
    ]));
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::from_bundle(&bundle, "triage", registry, model.clone())
        .unwrap()
        .state_dir(state.path())
        .build()
        .unwrap();
    let turn = agent.run_turn("issue 3?").await.unwrap();
    assert_eq!(
        model.seen_catalogs()[0],
        ["gh__list_issues", "gh__issue", "jira__list_issues"]
    );
    assert_eq!(turn.steps[0].results[0].output, Some(json!("issue #3")));

    let server = McpServer::for_agent(&bundle, &library(), "triage")
        .unwrap()
        .build()
        .unwrap();
    let served: Vec<_> = server.catalog().names().map(str::to_owned).collect();
    assert_eq!(
        served,
        ["gh__list_issues", "gh__issue", "jira__list_issues"]
    );
    let ctx = ToolContext::builder(std::env::temp_dir()).build();
    let listed = server
        .executor()
        .execute(
            ToolCall::new("m1", "gh__list_issues", json!({"repo": "goondan"})),
            &ctx,
            &server.catalog(),
        )
        .await;
    assert_eq!(listed.output, Some(json!("issues of goondan")));
}

#[test]
fn wrong_shapings_and_clashes_are_errors_on_their_lines() {
    // Line 24 is `annotations:` of the first entry.
    let wrong = BUNDLE.replace(
        "annotations: {readOnly: true}",
        "annotations: {readonly: true}",
    );
    let err = Bundle::from_yaml(&wrong, "g.yaml").checked().unwrap_err();
    let d = err.diagnostics();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].severity, d[0].line), (Severity::Error, 24));
    assert!(
        d[0].message.contains("`readonly` is not an effect hint"),
        "{}",
        d[0].message
    );

    // Both entries make `gh__list_issues`: the second one's line (26) says so.
    let clash = BUNDLE.replace("exclude: [\"nothing\"]", "prefix: gh");
    let bundle = Bundle::from_yaml(&clash, "g.yaml").checked().unwrap();
    let err = bundle.registry(&library()).unwrap_err();
    let d = err.diagnostics();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].severity, d[0].line), (Severity::Error, 26));
    assert!(
        d[0].message.contains("`gh__list_issues` is given to both"),
        "{}",
        d[0].message
    );

    // From Rust, the instance refuses to build.
    let built = AgentInstance::builder("a", registry(), Arc::new(ScriptedModel::new([])))
        .toolset(Toolset::of("github").include(["nothing"]))
        .build();
    assert!(matches!(
        built,
        Err(StepError::Toolset(ToolsetError::Empty { .. }))
    ));
}
