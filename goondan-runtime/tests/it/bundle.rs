//! Bundles: loading `goondan.yaml` in the TypeScript runtime's style, validation with file and
//! line, matching to compiled tools (SPEC-5), export (SPEC-7), and no panic on any input.

use std::path::{Path, PathBuf};

use goondan_runtime::bundle::{Bundle, Kind, Severity, ToolLibrary, export_tools};
use goondan_runtime::prelude::*;
use goondan_runtime::testing::{ResultAssertions, TestKit};
use goondan_runtime::tools::tool::ExportSpec;
use goondan_runtime::{Export, Tool, handler_fn};
use serde_json::json;

/// Text utilities, as compiled.
#[tool(name = "text-utils")]
pub mod text_utils {
    use super::*;

    /// Compiled description.
    pub fn uppercase(text: String) -> String {
        text.to_uppercase()
    }

    /// Always fails with a long message.
    pub fn fail() -> Result<String, ToolError> {
        Err(ToolError::new("x".repeat(500)))
    }
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/bundles")
        .join(name)
}

/// A stand-in for `@goondan/base` (the runtime cannot depend on goondan-base).
fn fake_bash() -> Tool {
    Tool::builder("bash")
        .export(Export::new(
            "exec",
            json!({"type": "object", "properties": {"command": {"type": "string"}}}),
            handler_fn(|_c, _a| async { Ok::<_, ToolError>("ran") }),
        ))
        .build()
        .unwrap()
}

fn library() -> ToolLibrary {
    ToolLibrary::new([text_utils::TOOL]).package("@goondan/base", |name| {
        (name == "bash").then(|| Ok(fake_bash()))
    })
}

#[test]
fn spec_7_typescript_style_bundle_loads_with_every_kind() {
    let bundle = Bundle::load(fixture("ts_style.yaml")).unwrap();
    let kinds: Vec<_> = bundle.resources().iter().map(|r| r.kind.clone()).collect();
    assert_eq!(
        kinds,
        vec![
            Kind::Package,
            Kind::Model,
            Kind::Tool,
            Kind::Agent,
            Kind::Swarm,
            Kind::Connection,
            Kind::Extension,
        ]
    );
    // Every reference (model, system prompt file, extension, swarm) resolves: no problem.
    assert!(
        bundle.diagnostics().is_empty(),
        "{:?}",
        bundle.diagnostics()
    );
    assert_eq!(
        bundle.agent_tools("coder").unwrap(),
        vec!["bash", "text-utils"]
    );
    assert_eq!(bundle.max_steps_per_turn("coder"), Some(7));
    assert_eq!(bundle.entry_agent().as_deref(), Some("coder"));
    assert!(bundle.agent_tools("nobody").is_err());
}

#[test]
fn config_unknown_kind_is_an_error_with_its_code_and_line() {
    let yaml = "apiVersion: goondan.ai/v1\nkind: Model\nmetadata: {name: m}\nspec: {}\n---\napiVersion: goondan.ai/v1\nkind: Gadget\nmetadata:\n  name: future-kind\nspec: {}\n";
    let err = Bundle::from_yaml(yaml, "g.yaml").checked().unwrap_err();
    let d = err.diagnostics();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].severity, Severity::Error);
    assert_eq!(d[0].line, 7);
    assert_eq!(d[0].resource.as_deref(), Some("Gadget/future-kind"));
    assert!(
        d[0].message
            .starts_with("E_CONFIG_UNKNOWN_KIND: unknown kind `Gadget`"),
        "{}",
        d[0].message
    );
    assert!(d[0].message.contains("`Extension`"), "{}", d[0].message);
}

/// A bundle whose every kind of reference misses, in a real directory: each miss is an
/// `E_CONFIG_REF_NOT_FOUND` error on the line of the reference, naming what the bundle has.
#[test]
fn config_every_reference_is_checked_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("prompts")).unwrap();
    std::fs::write(dir.path().join("prompts/ok.md"), "You help.\n").unwrap();
    let yaml = r#"apiVersion: goondan.ai/v1
kind: Model
metadata: {name: claude}
spec: {provider: anthropic}
---
apiVersion: goondan.ai/v1
kind: Extension
metadata: {name: skills}
spec: {}
---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {name: good}
spec:
  modelConfig: {modelRef: "Model/claude"}
  prompts: {systemRef: "./prompts/ok.md"}
  extensions: ["Extension/skills", {ref: {kind: Extension, name: x, package: "@goondan/base"}}]
---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {name: bad}
spec:
  modelConfig:
    modelRef: "Model/gpt"
  prompts:
    systemRef: "./prompts/missing.md"
  extensions:
    - "Extension/compaction"
    - "Model/claude"
---
apiVersion: goondan.ai/v1
kind: Swarm
metadata: {name: s}
spec:
  entryAgent: "Agent/ghost"
  agents:
    - ref: "Agent/good"
    - ref: "Agent/phantom"
---
apiVersion: goondan.ai/v1
kind: Connection
metadata: {name: cli}
spec:
  swarmRef: "Swarm/nowhere"
"#;
    let path = dir.path().join("goondan.yaml");
    std::fs::write(&path, yaml).unwrap();
    let err = Bundle::load(&path).unwrap_err();
    let d: Vec<_> = err
        .diagnostics()
        .iter()
        .map(|d| {
            (
                d.line,
                d.resource.clone().unwrap_or_default(),
                d.message.clone(),
            )
        })
        .collect();
    let has = |line: usize, resource: &str, texts: &[&str]| {
        d.iter()
            .any(|(l, r, m)| *l == line && r == resource && texts.iter().all(|t| m.contains(t)))
    };
    let missing = "E_CONFIG_REF_NOT_FOUND";
    assert!(
        has(24, "Agent/bad", &[missing, "`Model/gpt`", "`claude`"]),
        "{d:#?}"
    );
    assert!(has(26, "Agent/bad", &[missing, "missing.md"]), "{d:#?}");
    assert!(
        has(
            28,
            "Agent/bad",
            &[missing, "`Extension/compaction`", "`skills`"]
        ),
        "{d:#?}"
    );
    assert!(
        has(29, "Agent/bad", &["expected kind `Extension`"]),
        "{d:#?}"
    );
    assert!(
        has(35, "Swarm/s", &[missing, "`Agent/ghost`", "`bad`, `good`"]),
        "{d:#?}"
    );
    assert!(has(38, "Swarm/s", &[missing, "`Agent/phantom`"]), "{d:#?}");
    assert!(
        has(44, "Connection/cli", &[missing, "`Swarm/nowhere`", "`s`"]),
        "{d:#?}"
    );
    assert_eq!(d.len(), 7, "{d:#?}");
    assert!(err.diagnostics().iter().all(|x| x.file == path));
}

#[test]
fn base_5_a_missing_package_tool_names_the_tools_the_package_has() {
    let yaml = "apiVersion: goondan.ai/v1\nkind: Agent\nmetadata:\n  name: a\nspec:\n  tools:\n    - ref: {kind: Tool, name: bsh, package: \"@goondan/base\"}\n";
    let library = ToolLibrary::default().package_tools("@goondan/base", [fake_bash()]);
    let err = Bundle::from_yaml(yaml, "b.yaml")
        .registry(&library)
        .unwrap_err();
    let d = err.diagnostics();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].line, 7);
    assert!(
        d[0].message.contains("E_CONFIG_REF_NOT_FOUND")
            && d[0].message.contains("no tool named `bsh`")
            && d[0].message.contains("its tools are: `bash`"),
        "{}",
        d[0].message
    );
    // The same reference, spelled right, resolves.
    let fixed = yaml.replace("bsh", "bash");
    assert!(
        Bundle::from_yaml(&fixed, "b.yaml")
            .registry(&library)
            .is_ok()
    );
}

/// The YAML `parameters` of an export must describe the compiled tool: a property it lacks,
/// another type, another required set are each reported once, on their line.
#[test]
fn spec_5_yaml_parameters_that_disagree_with_the_compiled_tool_are_errors() {
    let yaml = r#"apiVersion: goondan.ai/v1
kind: Tool
metadata:
  name: text-utils
spec:
  exports:
    - name: uppercase
      parameters:
        type: object
        properties:
          text: {type: integer}
          loud: {type: boolean}
        required: [text, loud]
    - name: fail
      parameters:
        type: object
        properties: {}
"#;
    let bundle = Bundle::from_yaml(yaml, "b.yaml");
    assert!(!bundle.has_errors(), "{:?}", bundle.diagnostics());
    let err = bundle.registry(&library()).unwrap_err();
    let d: Vec<_> = err
        .diagnostics()
        .iter()
        .map(|d| (d.line, d.message.clone()))
        .collect();
    assert_eq!(d.len(), 3, "{d:#?}");
    let has = |line: usize, texts: &[&str]| {
        d.iter()
            .any(|(l, m)| *l == line && texts.iter().all(|t| m.contains(t)))
    };
    assert!(
        has(
            11,
            &["export `uppercase`", "`text`", "`integer`", "`string`"]
        ),
        "{d:#?}"
    );
    assert!(
        has(12, &["export `uppercase`", "`loud`", "no such parameter"]),
        "{d:#?}"
    );
    assert!(has(13, &["export `uppercase`", "`required`"]), "{d:#?}");
    // Matching parameters (the fixture's) pass.
    assert!(
        Bundle::load(fixture("ts_style.yaml"))
            .unwrap()
            .registry(&library())
            .is_ok()
    );
}

#[test]
fn a_utf8_byte_order_mark_is_accepted() {
    let yaml = "\u{feff}apiVersion: goondan.ai/v1\nkind: Model\nmetadata:\n  name: m\nspec: {provider: anthropic}\n";
    let bundle = Bundle::from_yaml(yaml, "bom.yaml");
    assert!(
        bundle.diagnostics().is_empty(),
        "{:?}",
        bundle.diagnostics()
    );
    assert_eq!(bundle.resources()[0].name, "m");
    assert_eq!(bundle.resources()[0].line_of("/metadata/name"), 4);
    // From a file too.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("goondan.yaml");
    std::fs::write(&path, yaml).unwrap();
    assert!(Bundle::load(&path).is_ok());
}

#[test]
fn yaml_merge_keys_merge_mappings_and_written_keys_win() {
    let yaml = r#"apiVersion: goondan.ai/v1
kind: Tool
metadata: {name: text-utils}
spec:
  <<: &defaults {errorMessageLimit: 40, entry: "./a.ts"}
  entry: "./b.ts"
  exports:
    - &upper
      name: uppercase
      description: shared
    - <<: [*upper, {description: other}]
      name: fail
"#;
    let bundle = Bundle::from_yaml(yaml, "merge.yaml");
    assert!(
        bundle.diagnostics().is_empty(),
        "{:?}",
        bundle.diagnostics()
    );
    let spec = &bundle.resources()[0].value["spec"];
    assert_eq!(spec["errorMessageLimit"], 40);
    assert_eq!(spec["entry"], "./b.ts");
    assert_eq!(
        spec["exports"][1],
        json!({"name": "fail", "description": "shared"})
    );
    let registry = bundle.registry(&library()).unwrap();
    assert_eq!(
        registry
            .resource("text-utils")
            .unwrap()
            .error_message_limit(),
        40
    );
    // A quoted "<<" is an ordinary key.
    let quoted = Bundle::from_yaml(
        "apiVersion: goondan.ai/v1\nkind: Model\nmetadata: {name: m}\nspec:\n  \"<<\": {b: 1}\n",
        "quoted.yaml",
    );
    assert!(
        quoted.diagnostics().is_empty(),
        "{:?}",
        quoted.diagnostics()
    );
    assert_eq!(quoted.resources()[0].value["spec"], json!({"<<": {"b": 1}}));
    // A merge key takes mappings only, and says so.
    let bad = Bundle::from_yaml("a:\n  <<: [1, 2]\n", "bad.yaml");
    assert!(
        bad.diagnostics()
            .iter()
            .any(|d| d.line == 2 && d.message.contains("merge key `<<`")),
        "{:?}",
        bad.diagnostics()
    );
}

/// Runs `f` on its own thread; a regression that hangs fails after a generous 10 s instead of
/// blocking the suite.
fn within_10s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(10))
        .expect("the loader did not finish within 10 s")
}

/// The bundle's errors, checked to name the alias expansion limit.
fn refused_by_alias_limit(yaml: String) {
    let size = yaml.len();
    let diagnostics =
        within_10s(move || Bundle::from_yaml(&yaml, "bomb.yaml").diagnostics().to_vec());
    assert!(
        diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error && d.message.contains("alias expansion limit")),
        "a {size}-byte bomb: {diagnostics:?}"
    );
}

#[test]
fn alias_bomb_of_long_strings_is_refused_by_the_expansion_limit() {
    // A 90 KB string, aliased ten times per level over three levels: 90 MB expanded from a
    // file of about 90 KB.
    let mut bomb = format!("s0: &s0 \"{}\"\n", "x".repeat(90_000));
    for i in 1..4 {
        let p = i - 1;
        let items = vec![format!("*s{p}"); 10].join(", ");
        bomb.push_str(&format!("s{i}: &s{i} [{items}]\n"));
    }
    assert!(bomb.len() < 100_000);
    refused_by_alias_limit(bomb);
}

#[test]
fn alias_bomb_of_nested_sequences_is_refused_by_the_expansion_limit() {
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let p = i - 1;
        let items = vec![format!("*a{p}"); 10].join(", ");
        bomb.push_str(&format!("a{i}: &a{i} [{items}]\n"));
    }
    refused_by_alias_limit(bomb);
}

#[test]
fn alias_bomb_of_nested_mappings_is_refused_by_the_expansion_limit() {
    let keys = |v: &str| {
        (0..10)
            .map(|k| format!("k{k}: {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut bomb = format!("m0: &m0 {{{}}}\n", keys("x"));
    for i in 1..10 {
        bomb.push_str(&format!(
            "m{i}: &m{i} {{{}}}\n",
            keys(&format!("*m{}", i - 1))
        ));
    }
    refused_by_alias_limit(bomb);
}

#[test]
fn small_aliases_are_still_expanded() {
    let yaml = "apiVersion: goondan.ai/v1\nkind: Model\nmetadata: {name: m}\nspec:\n  a: &a [1, 2, {b: c}]\n  c: [*a, *a]\n";
    let bundle = Bundle::from_yaml(yaml, "ok.yaml");
    assert!(
        bundle.diagnostics().is_empty(),
        "{:?}",
        bundle.diagnostics()
    );
    assert_eq!(
        bundle.resources()[0].value["spec"]["c"][1],
        json!([1, 2, {"b": "c"}])
    );
}

#[test]
fn a_file_over_the_size_cap_is_refused_with_a_clear_error() {
    use goondan_runtime::bundle::{BundleError, MAX_FILE_BYTES};
    assert_eq!(MAX_FILE_BYTES, 8 * 1024 * 1024);
    let head = "apiVersion: goondan.ai/v1\nkind: Model\nmetadata: {name: m}\nspec: {}\n";
    let padding = "# padding\n".repeat(MAX_FILE_BYTES / 10 + 1);
    let text = format!("{head}{padding}");
    assert!(text.len() > MAX_FILE_BYTES);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("goondan.yaml");
    std::fs::write(&path, &text).unwrap();
    let err = Bundle::read(&path).unwrap_err();
    assert!(matches!(err, BundleError::TooLarge { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("size limit of 8388608 bytes (8 MiB)"),
        "{message}"
    );
    // The same text handed over in memory is an error too.
    let bundle = Bundle::from_yaml(&text, "big.yaml");
    assert!(
        bundle
            .diagnostics()
            .iter()
            .any(|d| d.line == 1 && d.message.contains("size limit")),
        "{:?}",
        bundle.diagnostics()
    );
    // Just under the cap is read.
    let under = format!(
        "{head}{}",
        "# padding\n".repeat((MAX_FILE_BYTES - head.len()) / 10)
    );
    std::fs::write(&path, &under).unwrap();
    assert!(Bundle::load(&path).is_ok());
}

#[tokio::test]
async fn spec_7_yaml_overrides_limit_and_description_of_the_compiled_tool() {
    let bundle = Bundle::load(fixture("ts_style.yaml")).unwrap();
    let registry = bundle.registry(&library()).unwrap();
    assert_eq!(
        registry
            .names()
            .iter()
            .map(|n| n.as_str())
            .collect::<Vec<_>>(),
        vec!["bash__exec", "text-utils__fail", "text-utils__uppercase"]
    );
    let res = registry.resource("text-utils").unwrap();
    assert_eq!(res.error_message_limit(), 40);
    let up = registry.get("text-utils__uppercase").unwrap();
    assert_eq!(
        up.export().description(),
        Some("Uppercase, as the bundle describes it")
    );
    // Without a YAML description the compiled one stays.
    let fail = registry.get("text-utils__fail").unwrap();
    assert_eq!(
        fail.export().description(),
        Some("Always fails with a long message.")
    );
    // The YAML limit is the one the executor applies (RES-4).
    let tool = Tool::builder("text-utils")
        .error_message_limit(res.error_message_limit())
        .export(fail.export().clone())
        .build()
        .unwrap();
    let kit = TestKit::with_tools([tool]).unwrap();
    let err = kit.call("text-utils__fail", json!({})).await;
    let message = err.assert_error("E_TOOL").message().to_owned();
    assert!(message.chars().count() <= 40, "{message}");
}

#[test]
fn spec_5_declared_export_without_handler_and_the_reverse_are_errors() {
    let yaml = "apiVersion: goondan.ai/v1\nkind: Tool\nmetadata:\n  name: text-utils\nspec:\n  exports:\n    - name: uppercase\n    - name: lowercase\n";
    let bundle = Bundle::from_yaml(yaml, "b.yaml");
    assert!(!bundle.has_errors(), "{:?}", bundle.diagnostics());
    let err = bundle.registry(&library()).unwrap_err();
    let d = err.diagnostics();
    assert_eq!(d.len(), 2, "{d:?}");
    assert!(
        d.iter()
            .any(|d| d.line == 8 && d.message.contains("`lowercase` has no handler"))
    );
    assert!(d.iter().any(
        |d| d.message.contains("`text-utils__fail`") && d.message.contains("does not declare")
    ));
    assert!(
        d.iter()
            .all(|d| d.resource.as_deref() == Some("Tool/text-utils"))
    );
}

#[test]
fn spec_5_tool_resource_without_compiled_tool_and_unknown_package_are_errors() {
    let yaml = "apiVersion: goondan.ai/v1\nkind: Tool\nmetadata:\n  name: weather\nspec:\n  exports:\n    - name: get\n---\napiVersion: goondan.ai/v1\nkind: Agent\nmetadata:\n  name: a\nspec:\n  tools:\n    - ref: {kind: Tool, name: bash, package: \"@nobody/pkg\"}\n    - ref: {kind: Tool, name: nope, package: \"@goondan/base\"}\n";
    let err = Bundle::from_yaml(yaml, "b.yaml")
        .registry(&library())
        .unwrap_err();
    let lines: Vec<_> = err
        .diagnostics()
        .iter()
        .map(|d| (d.line, d.message.clone()))
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0].0, 4);
    assert!(lines[0].1.contains("no compiled tool is named `weather`"));
    assert_eq!(lines[1].0, 15);
    assert!(lines[1].1.contains("`@nobody/pkg` is not linked"));
    assert_eq!(lines[2].0, 16);
    assert!(lines[2].1.contains("has no tool named `nope`"));
}

/// A slug: its schema is a string.
#[derive(Deserialize, JsonSchema)]
pub struct Slug(String);

/// A compiled tool whose definition is refused: its whole input is not an object (SPEC-6).
pub struct Pages;

/// Pages.
#[tool(name = "pages")]
impl Pages {
    /// Reads a page.
    #[export(input = "whole")]
    pub fn get(&self, id: Slug) -> String {
        id.0
    }
}

#[test]
fn spec_6_a_refused_compiled_or_package_tool_is_a_diagnostic_not_a_panic() {
    let library = ToolLibrary::new([text_utils::TOOL])
        .tools([Pages])
        .package("@acme/tools", |name| {
            (name == "pages").then(|| Pages.into_tool())
        });
    assert_eq!(library.refused().len(), 1);
    assert_eq!(library.refused()[0].resource(), "pages");
    let yaml = "apiVersion: goondan.ai/v1\nkind: Tool\nmetadata:\n  name: pages\nspec:\n  exports:\n    - name: get\n---\napiVersion: goondan.ai/v1\nkind: Agent\nmetadata:\n  name: a\nspec:\n  tools:\n    - ref: {kind: Tool, name: pages, package: \"@acme/tools\"}\n";
    let err = Bundle::from_yaml(yaml, "b.yaml")
        .registry(&library)
        .unwrap_err();
    let lines: Vec<_> = err
        .diagnostics()
        .iter()
        .map(|d| (d.line, d.message.clone()))
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0].0, 4);
    assert_eq!(lines[1].0, 15);
    for (_, message) in &lines {
        assert!(message.contains("tool `pages`, export `get`"), "{message}");
    }
}

#[test]
fn broken_bundle_reports_every_error_with_file_line_and_resource() {
    let path = fixture("broken.yaml");
    let err = Bundle::load(&path).unwrap_err();
    let d = err.diagnostics();
    let errors: Vec<_> = d
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| {
            (
                d.line,
                d.resource.clone().unwrap_or_default(),
                d.message.clone(),
            )
        })
        .collect();
    let has = |line: usize, resource: &str, text: &str| {
        errors
            .iter()
            .any(|(l, r, m)| *l == line && r == resource && m.contains(text))
    };
    assert!(has(4, "Tool/bad__name", "__"), "{errors:#?}");
    assert!(
        has(6, "Tool/bad__name", "at least one export"),
        "{errors:#?}"
    );
    assert!(has(8, "Tool/text-utils", "apiVersion"), "{errors:#?}");
    assert!(
        has(13, "Tool/text-utils", "errorMessageLimit"),
        "{errors:#?}"
    );
    assert!(
        errors
            .iter()
            .any(|(l, _, m)| (16..=17).contains(l) && m.contains("SPEC-6")),
        "{errors:#?}"
    );
    assert!(has(18, "Tool/text-utils", "SPEC-3"), "{errors:#?}");
    assert!(has(19, "Tool/text-utils", "no.pe"), "{errors:#?}");
    assert!(has(21, "Agent/coder", "apiVersion"), "{errors:#?}");
    assert!(has(26, "Agent/coder", "Tool/missing"), "{errors:#?}");
    assert!(has(27, "Agent/coder", "42"), "{errors:#?}");
    assert!(has(34, "Swarm/s", "Agent/ghost"), "{errors:#?}");
    assert!(has(38, "", "metadata.name"), "{errors:#?}");
    assert_eq!(errors.len(), 12, "{errors:#?}");
    // Every diagnostic names the file; the error's text lists all of them.
    assert!(d.iter().all(|d| d.file == path));
    let text = err.to_string();
    assert!(text.starts_with("the bundle has 12 error(s)"), "{text}");
    assert!(
        text.contains("broken.yaml:19: error: Tool/text-utils:"),
        "{text}"
    );
}

#[test]
fn unknown_fields_are_kept_and_warned() {
    let yaml = "apiVersion: goondan.ai/v1\nkind: Tool\nmetadata:\n  name: text-utils\n  colour: red\nspec:\n  exports:\n    - name: uppercase\n      extra: 1\n    - name: fail\n  later: true\nstatus: {}\n";
    let bundle = Bundle::from_yaml(yaml, "b.yaml");
    assert!(!bundle.has_errors(), "{:?}", bundle.diagnostics());
    let lines: Vec<_> = bundle.diagnostics().iter().map(|d| d.line).collect();
    assert_eq!(lines, vec![5, 9, 11, 12]);
    assert_eq!(bundle.resources()[0].value["status"], json!({}));
    assert!(bundle.registry(&library()).is_ok());
}

#[test]
fn spec_7_export_then_load_gives_the_same_specs() {
    let tools = vec![text_utils::TOOL.build().unwrap(), fake_bash()];
    let yaml = export_tools(tools.iter());
    let bundle = Bundle::from_yaml(&yaml, "exported.yaml");
    assert!(!bundle.has_errors(), "{:?}\n{yaml}", bundle.diagnostics());
    let registry = bundle.registry(&ToolLibrary::new(tools.clone())).unwrap();
    for tool in &tools {
        let res = bundle.get(&Kind::Tool, tool.name()).unwrap();
        assert_eq!(res.value["spec"]["errorMessageLimit"], 1000);
        for (name, export) in tool.exports() {
            let loaded = registry.get(name.as_str()).unwrap();
            assert_eq!(
                ExportSpec::from(loaded.export()),
                ExportSpec::from(export),
                "{name}"
            );
            let declared = res.value["spec"]["exports"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["name"] == export.name())
                .unwrap();
            assert_eq!(&declared["parameters"], export.parameters());
        }
    }
}

/// A small seeded generator (xorshift) of mutated bundles: byte flips, cut lines, swapped and
/// repeated lines, inserted YAML punctuation. The loader must never panic, and whatever it
/// reports must have a line inside the file.
#[test]
fn loader_never_panics_on_mutated_yaml() {
    let seeds = [
        std::fs::read_to_string(fixture("ts_style.yaml")).unwrap(),
        std::fs::read_to_string(fixture("broken.yaml")).unwrap(),
    ];
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let punct = [
        ":", "-", "[", "]", "{", "}", "&a", "*a", "---", "\t", "'", "\"", "|", ">", "!!str", "#",
        "? ", "\u{feff}", "é", "\0",
    ];
    for round in 0..1500 {
        let base = &seeds[round % seeds.len()];
        let mut lines: Vec<String> = base.lines().map(str::to_owned).collect();
        for _ in 0..(1 + next() % 4) {
            let n = lines.len().max(1);
            let i = usize::try_from(next() % n as u64).unwrap();
            match next() % 6 {
                0 if !lines.is_empty() => {
                    lines.remove(i.min(lines.len() - 1));
                }
                1 if i < lines.len() => {
                    let l = lines[i].clone();
                    lines.insert(i, l);
                }
                2 if i < lines.len() => {
                    let j = usize::try_from(next() % n as u64)
                        .unwrap()
                        .min(lines.len() - 1);
                    lines.swap(i, j);
                }
                3 if i < lines.len() => {
                    let p = punct[usize::try_from(next() % punct.len() as u64).unwrap()];
                    let at = lines[i]
                        .char_indices()
                        .map(|(k, _)| k)
                        .nth(usize::try_from(next() % 8).unwrap())
                        .unwrap_or(lines[i].len());
                    lines[i].insert_str(at, p);
                }
                4 if i < lines.len() => {
                    let keep = lines[i]
                        .chars()
                        .take(usize::try_from(next() % 12).unwrap())
                        .collect();
                    lines[i] = keep;
                }
                _ => lines.push(format!("  x{}: [", next() % 100)),
            }
        }
        let text = lines.join("\n");
        let total = text.lines().count().max(1) + 1;
        let bundle = Bundle::from_yaml(&text, "fuzz.yaml");
        for d in bundle.diagnostics() {
            assert!(
                d.line >= 1 && d.line <= total,
                "line {} of {total}: {d}\n{text}",
                d.line
            );
        }
        let _ = bundle.registry(&library());
    }
}

/// Nesting a million levels deep in flow style, or in block style (`- - - x`), is an
/// error, found without recursing on the input (the parser's own loader would overflow the
/// stack).
#[test]
fn deeply_nested_input_is_an_error_not_a_stack_overflow() {
    let flow = "[".repeat(1_000_000);
    let block = format!("{}x\n", "- ".repeat(1_000_000));
    for text in [flow, block] {
        let diagnostics =
            within_10s(move || Bundle::from_yaml(&text, "deep.yaml").diagnostics().to_vec());
        assert!(
            diagnostics.iter().any(|d| d.line >= 1
                && (d.message.contains("nest deeper than 64 levels")
                    || d.message.contains("recursion limit"))),
            "{diagnostics:?}"
        );
    }
}

/// `policy.journal`: where an Agent keeps its run journal, the Agent's own else its
/// Swarm's; a wrong setting is an error on its line when the bundle loads.
#[test]
fn policy_journal_is_read_per_agent_and_a_wrong_one_is_an_error_on_its_line() {
    let yaml = "apiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: a}\nspec:\n  policy:\n    journal: {durability: full}\n---\napiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: b}\nspec: {}\n---\napiVersion: goondan.ai/v1\nkind: Swarm\nmetadata: {name: s}\nspec:\n  entryAgent: Agent/a\n  agents: [Agent/a, Agent/b]\n  policy:\n    journal:\n      nats: nats://127.0.0.1:4222\n      lease: 20s\n";
    let bundle = Bundle::from_yaml(yaml, "g.yaml").checked().unwrap();
    let a = bundle.journal("a").unwrap();
    assert!(a.full && a.nats.is_none(), "the Agent's own: {a:?}");
    let b = bundle.journal("b").unwrap();
    assert_eq!(b.nats.as_deref(), Some("nats://127.0.0.1:4222"));
    assert_eq!(b.lease, Some(std::time::Duration::from_secs(20)));

    let wrong = yaml.replace("lease: 20s", "lease: whenever");
    let err = Bundle::from_yaml(&wrong, "g.yaml").checked().unwrap_err();
    let d = err.diagnostics();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].severity, d[0].line), (Severity::Error, 22));
    assert!(
        d[0].message.contains("`policy.journal.lease`"),
        "{}",
        d[0].message
    );
    assert_eq!(
        bundle.journal("nobody").map(|j| j.nats.is_some()),
        Some(true)
    );
}

/// `policy.toolRetries`: a number for every tool, or a default with tools
/// and exports named; a wrong one is an error on its line.
#[test]
fn policy_tool_retries_is_read_per_agent_and_a_wrong_one_is_an_error_on_its_line() {
    let yaml = "apiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: a}\nspec:\n  policy:\n    toolRetries: 2\n---\napiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: b}\nspec:\n  policy:\n    toolRetries:\n      default: 3\n      tools: {bash: 5, http-fetch__get: 1}\n";
    let bundle = Bundle::from_yaml(yaml, "g.yaml").checked().unwrap();
    let a = bundle.retry_budget("a").unwrap();
    assert_eq!(a.of("bash__exec"), Some(2));
    let b = bundle.retry_budget("b").unwrap();
    assert_eq!(
        (
            b.of("bash__exec"),
            b.of("http-fetch__get"),
            b.of("wait__seconds")
        ),
        (Some(5), Some(1), Some(3))
    );
    let wrong = yaml.replace("bash: 5", "bash: many");
    let err = Bundle::from_yaml(&wrong, "g.yaml").checked().unwrap_err();
    let d = err.diagnostics();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].severity, d[0].line), (Severity::Error, 15));
    assert!(d[0].message.contains("retry budget"), "{}", d[0].message);
}
