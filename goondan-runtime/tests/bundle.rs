//! Bundles: loading `goondan.yaml` in the TypeScript runtime's style, validation with file and
//! line, matching to compiled tools (SPEC-5), export (SPEC-7), and no panic on any input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use goondan_runtime::bundle::{Bundle, Kind, Severity, ToolLibrary, export_tools};
use goondan_runtime::prelude::*;
use goondan_runtime::testing::{ResultAssertions, TestKit};
use goondan_runtime::tool::ExportSpec;
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
            Kind::Other("Gadget".into())
        ]
    );
    // Unknown kinds are kept and reported as warnings, with their line.
    let warnings: Vec<_> = bundle
        .diagnostics()
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].message.contains("unknown kind `Gadget`"));
    assert_eq!(warnings[0].line, 77);
    assert_eq!(
        bundle.agent_tools("coder").unwrap(),
        vec!["bash", "text-utils"]
    );
    assert_eq!(bundle.max_steps_per_turn("coder"), Some(7));
    assert_eq!(bundle.entry_agent().as_deref(), Some("coder"));
    assert!(bundle.agent_tools("nobody").is_err());
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
