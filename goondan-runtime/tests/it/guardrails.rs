//! Guardrails: input checks before approvals, output checks before the
//! model, and guardrails that fail or hang.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use goondan_runtime::calls::approval::{Approvals, Decision, Policy, approver_fn};
use goondan_runtime::calls::guardrail::{
    CheckFuture, GUARDRAIL, Guardrail, Guardrails, PRIORITY, SecretScanner, Verdict,
};
use goondan_runtime::prelude::*;
use goondan_runtime::testing::TestKit;
use goondan_runtime::{CallContext, ToolCallResult};
use serde_json::json;

/// Notes.
#[tool(name = "notes")]
pub mod notes {
    use super::*;
    /// Delete a note.
    #[export(destructive)]
    pub async fn delete(title: String) -> Result<String, ToolError> {
        Ok(format!("deleted {title}"))
    }
    /// Fail.
    #[export]
    pub async fn fail() -> Result<String, ToolError> {
        Err(ToolError::new(
            "the secret was sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
        ))
    }
}

struct Named(&'static str, Behaviour);

enum Behaviour {
    TripWhen(&'static str),
    Panic,
    Hang,
    Count(Arc<AtomicUsize>),
}

impl Guardrail for Named {
    fn name(&self) -> &str {
        self.0
    }
    fn check_input<'a>(&'a self, call: &'a CallContext) -> CheckFuture<'a> {
        Box::pin(async move {
            match &self.1 {
                Behaviour::TripWhen(word) => {
                    if call.args.get("title").and_then(|t| t.as_str()) == Some(word) {
                        Verdict::Trip(format!("`{word}` may not be touched"))
                    } else {
                        Verdict::Pass
                    }
                }
                Behaviour::Panic => panic!("the rule file is corrupt"),
                Behaviour::Hang => std::future::pending().await,
                Behaviour::Count(n) => {
                    n.fetch_add(1, Ordering::SeqCst);
                    Verdict::Pass
                }
            }
        })
    }
    fn checks_output(&self) -> bool {
        false
    }
    fn timeout(&self) -> Duration {
        Duration::from_millis(50)
    }
}

fn kit(guardrails: Guardrails, asked: Arc<AtomicUsize>) -> TestKit {
    let approvals = Approvals::new(approver_fn(move |_| {
        asked.fetch_add(1, Ordering::SeqCst);
        async { Decision::Approve }
    }))
    .default_policy(Policy::Ask);
    TestKit::builder()
        .tool(notes::TOOL)
        .middleware(i32::MIN + 1, approvals)
        .middleware(PRIORITY, guardrails)
        .build()
        .unwrap()
}

#[tokio::test]
async fn an_input_guardrail_trips_before_any_approval_is_asked() {
    let asked = Arc::new(AtomicUsize::new(0));
    let later = Arc::new(AtomicUsize::new(0));
    let kit = kit(
        Guardrails::new()
            .with(Named("keep-readme", Behaviour::TripWhen("README")))
            .with(Named("counter", Behaviour::Count(Arc::clone(&later)))),
        Arc::clone(&asked),
    );
    let r = kit.call("notes__delete", json!({"title": "README"})).await;
    assert_eq!(r.error_code(), Some(GUARDRAIL));
    let err = r.error.as_ref().unwrap();
    assert!(err.message().contains("`keep-readme`"), "{}", err.message());
    assert!(err.message().contains("`README` may not be touched"));
    assert_eq!(asked.load(Ordering::SeqCst), 0, "no approval was asked");
    assert_eq!(
        later.load(Ordering::SeqCst),
        0,
        "the first trip ends the checks"
    );

    let r = kit.call("notes__delete", json!({"title": "todo"})).await;
    assert_eq!(r.output, Some(json!("deleted todo")));
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert_eq!(later.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_guardrail_that_panics_or_hangs_trips_and_blocks_nothing_else() {
    for (behaviour, says) in [
        (
            Behaviour::Panic,
            "the guardrail failed: the rule file is corrupt",
        ),
        (Behaviour::Hang, "did not decide within 50 ms"),
    ] {
        let asked = Arc::new(AtomicUsize::new(0));
        let kit = kit(Guardrails::new().with(Named("broken", behaviour)), asked);
        let r = kit.call("notes__delete", json!({"title": "x"})).await;
        assert_eq!(r.error_code(), Some(GUARDRAIL));
        let message = r.error.as_ref().unwrap().message();
        assert!(message.contains(says), "{message}");
    }
}

#[tokio::test]
async fn output_guardrails_see_failed_results_too() {
    let kit = kit(
        Guardrails::new().with(SecretScanner::new()),
        Arc::new(AtomicUsize::new(0)),
    );
    let r = kit.call("notes__fail", json!({})).await;
    assert_eq!(r.error_code(), Some("E_TOOL"));
    assert_eq!(
        r.error.as_ref().unwrap().message(),
        "the secret was [REDACTED anthropic-key]"
    );
}

/// An output guardrail that trips on any result.
struct Withhold;
impl Guardrail for Withhold {
    fn name(&self) -> &str {
        "withhold"
    }
    fn checks_input(&self) -> bool {
        false
    }
    fn check_output<'a>(
        &'a self,
        _: &'a mut ToolCallResult,
        _: &'a ToolContext,
    ) -> CheckFuture<'a> {
        Box::pin(async { Verdict::Trip("nothing leaves today".into()) })
    }
}

#[tokio::test]
async fn a_tripped_output_guardrail_withholds_the_result_of_a_call_that_ran() {
    let kit = kit(
        Guardrails::new().with(Withhold),
        Arc::new(AtomicUsize::new(0)),
    );
    let r = kit.call("notes__delete", json!({"title": "todo"})).await;
    assert_eq!(r.error_code(), Some(GUARDRAIL));
    assert_eq!(&*r.tool_name, "notes__delete");
    let err = r.error.as_ref().unwrap();
    assert!(
        err.message().contains("withheld the result"),
        "{}",
        err.message()
    );
    assert!(err.suggestion().unwrap().contains("the call ran"));
    assert_eq!(r.output, None);
}

/// Files.
#[tool(name = "files")]
pub mod files {
    use super::*;
    /// Read a file.
    #[export(read_only)]
    pub async fn read(path: String) -> Result<String, ToolError> {
        Ok(format!("{path}: AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE"))
    }
}

const GUARDED: &str = "apiVersion: goondan.ai/v1\nkind: Tool\nmetadata: {name: files}\nspec:\n  exports:\n    - name: read\n---\napiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: reader}\nspec:\n  tools: [\"Tool/files\"]\n  policy:\n    guardrails:\n      secrets: true\n      allow:\n        paths: [\".\"]\n";

/// One Turn of the bundle `yaml`'s agent `reader`, whose model reads each of `paths` with
/// `files__read`, then answers: the instance and the Turn.
async fn reader_reads(
    yaml: &str,
    paths: &[&str],
) -> (
    goondan_runtime::step::AgentInstance,
    goondan_runtime::step::TurnOutcome,
) {
    use goondan_runtime::bundle::{Bundle, ToolLibrary};
    use goondan_runtime::step::{AgentInstance, ModelResponse, ScriptedModel};

    let bundle = Bundle::from_yaml(yaml, "g.yaml").checked().unwrap();
    let registry = Arc::new(bundle.registry(&ToolLibrary::new([files::TOOL])).unwrap());
    let reads = paths.iter().enumerate().map(|(i, path)| {
        let call = ToolCall::new(format!("c{i}"), "files__read", json!({ "path": path }));
        ModelResponse::calls([call])
    });
    let script: Vec<_> = reads.chain([ModelResponse::text("done")]).collect();
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::from_bundle(
        &bundle,
        "reader",
        registry,
        Arc::new(ScriptedModel::new(script)),
    )
    .unwrap()
    .state_dir(state.path())
    .build()
    .unwrap();
    let turn = agent.run_turn("read").await.unwrap();
    (agent, turn)
}

#[tokio::test]
async fn a_bundles_guardrails_check_what_its_agent_calls_and_what_its_model_reads() {
    let (agent, turn) = reader_reads(GUARDED, &["/etc/passwd", "notes/today.txt"]).await;
    let refused = &turn.steps[0].results[0];
    assert_eq!(refused.error_code(), Some(GUARDRAIL));
    let message = refused.error.as_ref().unwrap().message();
    assert!(
        message.contains("`allow-list`") && message.contains("/etc/passwd"),
        "{message}"
    );
    assert_eq!(
        turn.steps[1].results[0].output,
        Some(json!(
            "notes/today.txt: AWS_ACCESS_KEY_ID=[REDACTED aws-access-key]"
        ))
    );
    let conversation = serde_json::to_string(&agent.conversation()).unwrap();
    assert!(
        !conversation.contains("AKIAIOSFODNN7EXAMPLE"),
        "{conversation}"
    );
    assert!(conversation.contains("[REDACTED aws-access-key]"));
}

#[test]
fn a_wrong_guardrail_setting_is_an_error_on_its_line() {
    use goondan_runtime::bundle::{Bundle, Severity};

    let wrong = GUARDED.replace(
        "paths: [\".\"]",
        "paths: [\".\"]\n        urls: [\"not a host\"]",
    );
    let err = Bundle::from_yaml(&wrong, "g.yaml").checked().unwrap_err();
    let d = err.diagnostics();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].severity, d[0].line), (Severity::Error, 18));
    assert!(
        d[0].message
            .contains("`not a host` cannot be an allowed URL"),
        "{}",
        d[0].message
    );
}

/// The README's `policy.guardrails: {...}`, as it is written there.
fn readme_policy() -> String {
    let readme =
        std::fs::read_to_string(goondan_test_peers::workspace_root().join("README.md")).unwrap();
    let start = readme
        .find("`policy.guardrails: ")
        .expect("the README shows a policy")
        + 1;
    let end = start + readme[start..].find('`').unwrap();
    readme[start..end].replace('\n', " ")
}

#[tokio::test]
async fn the_readmes_guardrails_redact_secrets_and_refuse_other_paths_and_urls() {
    let policy = readme_policy();
    let yaml = format!(
        "apiVersion: goondan.ai/v1\nkind: Tool\nmetadata: {{name: files}}\nspec:\n  exports:\n    - name: read\n---\napiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {{name: reader}}\nspec:\n  tools: [\"Tool/files\"]\n  policy: {{{}}}\n",
        policy.trim_start_matches("policy.").trim()
    );
    let paths = [
        "../outside.txt",
        "https://example.com/x",
        "https://docs.rs/tokio",
    ];
    let (_, turn) = reader_reads(&yaml, &paths).await;
    let results: Vec<_> = turn
        .steps
        .iter()
        .filter_map(|s| s.results.first())
        .collect();
    assert_eq!(results[0].error_code(), Some(GUARDRAIL), "{policy}");
    assert_eq!(results[1].error_code(), Some(GUARDRAIL), "{policy}");
    assert_eq!(
        results[2].output,
        Some(json!(
            "https://docs.rs/tokio: AWS_ACCESS_KEY_ID=[REDACTED aws-access-key]"
        )),
        "{policy}"
    );
}

/// A job that answers later (RES-2) with a secret in its output.
fn leaky_job() -> goondan_runtime::Tool {
    use goondan_runtime::{Export, Pending, Tool, handler_fn};
    Tool::builder("jobs")
        .export(Export::new(
            "env",
            json!({"type": "object"}),
            handler_fn(|_ctx, _args| async {
                Ok::<_, ToolError>(Pending::new(async {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Ok::<_, ToolError>(json!({"AWS": "AKIAIOSFODNN7EXAMPLE"}))
                }))
            }),
        ))
        .build()
        .unwrap()
}

/// An output guardrail that trips on a result whose output names AWS (a pending result has
/// no output: it passes).
struct NoAws;
impl Guardrail for NoAws {
    fn name(&self) -> &str {
        "no-aws"
    }
    fn checks_input(&self) -> bool {
        false
    }
    fn check_output<'a>(
        &'a self,
        result: &'a mut ToolCallResult,
        _: &'a ToolContext,
    ) -> CheckFuture<'a> {
        let aws = result
            .output
            .as_ref()
            .is_some_and(|o| o.to_string().contains("AWS"));
        Box::pin(async move {
            if aws {
                Verdict::Trip("AWS keys stay here".into())
            } else {
                Verdict::Pass
            }
        })
    }
}

#[tokio::test]
async fn the_completion_of_a_submitted_call_goes_through_the_output_guardrails_too() {
    use goondan_runtime::{ToolCatalog, ToolExecutor, ToolStatus};

    let registry = Arc::new(ToolRegistry::builder().tool(leaky_job()).build().unwrap());
    let catalog = ToolCatalog::build(&registry, ["jobs"]).unwrap();
    let ctx = ToolContext::builder(std::env::temp_dir()).build();
    for (guardrails, redacted) in [
        (Guardrails::new().with(SecretScanner::new()), true),
        (Guardrails::new().with(NoAws), false),
    ] {
        let executor = ToolExecutor::builder(Arc::clone(&registry))
            .guardrails(guardrails)
            .build();
        let submitted = executor
            .execute(ToolCall::new("c1", "jobs__env", json!({})), &ctx, &catalog)
            .await;
        assert_eq!(submitted.status, ToolStatus::Pending, "{submitted:?}");
        let handle = submitted.handle.clone().unwrap();
        let completed = executor.pending().wait(&handle).await.unwrap();
        if redacted {
            assert_eq!(
                completed.output,
                Some(json!({"AWS": "[REDACTED aws-access-key]"}))
            );
        } else {
            assert_eq!(completed.error_code(), Some(GUARDRAIL));
            assert_eq!(completed.output, None);
        }
    }
}
