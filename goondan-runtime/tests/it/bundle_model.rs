//! `kind: Model` resources: their checks (with file and line), the Model an Agent picks with
//! `modelRef`, the Agent's system prompt, and the models a bundle gives its agents.

use goondan_runtime::bundle::{Bundle, BundleError, Severity};
use goondan_runtime::tools::catalog::ToolChoice;

const AGENT: &str = "---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {name: helper}
spec:
  modelConfig: {modelRef: \"Model/m\"}
";

fn errors(yaml: &str) -> Vec<(usize, String)> {
    Bundle::from_yaml(yaml, "goondan.yaml")
        .diagnostics()
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| (d.line, d.message.clone()))
        .collect()
}

#[test]
fn a_model_with_an_unknown_provider_is_an_error_at_its_line() {
    let yaml = "apiVersion: goondan.ai/v1\nkind: Model\nmetadata: {name: m}\nspec:\n  model: x\n  provider: openia\n";
    let e = errors(yaml);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].0, 6);
    assert!(e[0].1.contains("unknown provider `openia`"), "{}", e[0].1);
}

#[test]
fn a_model_with_its_key_written_in_the_bundle_is_refused() {
    let yaml = "apiVersion: goondan.ai/v1\nkind: Model\nmetadata: {name: m}\nspec:\n  provider: openai\n  model: gpt\n  apiKey:\n    value: sk-123\n";
    let e = errors(yaml);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].0, 8, "the line of `value:`");
    assert!(e[0].1.contains("valueFrom: {env: NAME}"), "{}", e[0].1);
}

#[test]
fn model_options_of_the_wrong_type_or_range_are_errors_at_their_lines() {
    let yaml = "apiVersion: goondan.ai/v1\nkind: Model\nmetadata: {name: m}\nspec:\n  provider: gemini\n  model: g\n  endpoint: ftp://x\n  options:\n    temperature: 3\n    maxTokens: -1\n    stream: yes please\n    organization: kept\n";
    let e = errors(yaml);
    let lines: Vec<usize> = e.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, vec![7, 9, 10, 11], "{e:?}");
    assert!(
        e[1].1
            .contains("`options.temperature` must be a number from 0 to 2")
    );
}

#[test]
fn an_agent_whose_model_lacks_a_model_name_cannot_build_it_and_is_told_where() {
    let yaml = format!(
        "apiVersion: goondan.ai/v1\nkind: Model\nmetadata: {{name: m}}\nspec:\n  provider: anthropic\n{AGENT}"
    );
    let bundle = Bundle::from_yaml(&yaml, "goondan.yaml");
    assert!(!bundle.has_errors(), "{:?}", bundle.diagnostics());
    let err = bundle.agent_model("helper").unwrap_err();
    let d = err.diagnostics();
    assert_eq!(d.len(), 1, "{err}");
    assert_eq!(d[0].resource.as_deref(), Some("Model/m"));
    assert!(
        d[0].message.contains("needs `spec.model`"),
        "{}",
        d[0].message
    );
}

#[test]
fn an_agent_without_a_model_ref_is_told_to_add_one() {
    let yaml =
        "apiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: helper}\nspec: {tools: []}\n";
    let err = Bundle::from_yaml(yaml, "goondan.yaml")
        .agent_model("helper")
        .unwrap_err();
    assert!(err.to_string().contains("modelConfig.modelRef"), "{err}");
    assert!(matches!(
        Bundle::from_yaml(yaml, "goondan.yaml").agent_model("nobody"),
        Err(BundleError::UnknownAgent { .. })
    ));
}

#[test]
fn the_system_prompt_is_the_inline_prompt_then_the_system_ref_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.md"), "From the file.").unwrap();
    let yaml = "apiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: a}\nspec:\n  prompts:\n    systemPrompt: Inline.\n    systemRef: ./p.md\n---\napiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: b}\nspec: {}\n";
    std::fs::write(dir.path().join("goondan.yaml"), yaml).unwrap();
    let bundle = Bundle::load(dir.path()).unwrap();
    assert_eq!(
        bundle.system_prompt("a").unwrap().as_deref(),
        Some("Inline.\n\nFrom the file.")
    );
    assert_eq!(bundle.system_prompt("b").unwrap(), None);
}

#[cfg(feature = "providers")]
#[tokio::test]
async fn the_model_factory_gives_an_agent_whose_model_cannot_be_built_a_model_that_says_why() {
    use goondan_runtime::ToolCatalog;
    use goondan_runtime::step::{ModelError, ModelRequest};
    let yaml = format!(
        "apiVersion: goondan.ai/v1\nkind: Model\nmetadata: {{name: m}}\nspec:\n  provider: openai\n  model: gpt\n  apiKey: {{valueFrom: {{env: GOONDAN_TEST_UNSET_KEY_VARIABLE}}}}\n{AGENT}"
    );
    let factory =
        goondan_runtime::provider::model_factory(Bundle::from_yaml(&yaml, "goondan.yaml"));
    let model = factory("helper");
    let request = ModelRequest {
        system: None,
        agent_name: "helper".into(),
        turn_id: "t".into(),
        step: 0,
        messages: Vec::new(),
        catalog: ToolCatalog::new(),
        tool_choice: None,
        max_tokens: None,
        deltas: None,
        cancellation: Default::default(),
    };
    let err = model.respond(&request).await.unwrap_err();
    assert!(
        matches!(&err, ModelError::Config { message } if message.contains("GOONDAN_TEST_UNSET_KEY_VARIABLE")),
        "{err:?}"
    );
}

#[test]
fn tool_choices_are_checked_at_their_lines_and_the_agents_params_win() {
    let yaml = "apiVersion: goondan.ai/v1\nkind: Model\nmetadata: {name: m}\nspec:\n  provider: openai\n  model: smollm2\n  options:\n    toolChoice: sometimes\n    firstStepToolChoice: 3\n---\napiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: helper}\nspec:\n  modelConfig:\n    modelRef: \"Model/m\"\n    params:\n      toolChoice: file system__write\n";
    let e = errors(yaml);
    assert_eq!(e.len(), 3, "{e:?}");
    assert_eq!(e[0].0, 8);
    assert!(
        e[0].1
            .contains("`sometimes` is not a tool choice: write `auto`, `required`, `none`"),
        "{}",
        e[0].1
    );
    assert_eq!(e[1].0, 9);
    assert!(e[1].1.contains("found 3"), "{}", e[1].1);
    assert_eq!(e[2].0, 18, "the Agent's params are checked too");

    let good = "apiVersion: goondan.ai/v1\nkind: Model\nmetadata: {name: m}\nspec:\n  provider: openai\n  model: smollm2\n  options: {toolChoice: none, firstStepToolChoice: required}\n---\napiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: helper}\nspec:\n  modelConfig:\n    modelRef: \"Model/m\"\n    params: {firstStepToolChoice: file-system__write}\n";
    let bundle = Bundle::from_yaml(good, "goondan.yaml");
    assert_eq!(errors(good), Vec::new());
    let spec = bundle.agent_model("helper").unwrap();
    assert_eq!(spec.tool_choice, Some(ToolChoice::None));
    assert_eq!(
        spec.first_step_tool_choice,
        Some("file-system__write".parse().unwrap())
    );
}
