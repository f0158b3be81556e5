//! RES-7: `helpUrl` only points where something is written. Runtime codes point to their
//! heading in `docs/errors.md` under the host's base; an author's codes carry a `helpUrl` only
//! when the author gives one.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use goondan_runtime::tools::help_url::{
    DEFAULT_HELP_URL_BASE, DOCUMENTED_CODES, HELP_URL_BASE_ENV,
};
use goondan_runtime::{
    Export, Pending, Tool, ToolCall, ToolCallResult, ToolCatalog, ToolContext, ToolError,
    ToolExecutor, ToolRegistry, handler_fn,
};
use goondan_test_peers::workspace_root;
use serde_json::{Value, json};

fn errors_doc() -> String {
    let path = workspace_root().join("docs").join("errors.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// GitHub's heading anchor: lower case; letters, digits, `_`, `-` and spaces kept (spaces
/// become `-`), everything else dropped.
fn github_anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The `## ...` headings of docs/errors.md, with the text of each section.
fn sections(doc: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in doc.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            out.push((heading.trim().to_owned(), String::new()));
        } else if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

/// The anchors of every heading of docs/errors.md.
fn anchors(doc: &str) -> BTreeSet<String> {
    sections(doc)
        .iter()
        .map(|(h, _)| github_anchor(h))
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `"E_..."` string the runtime and the base crate raise: string literals in their
/// sources, outside comments (doc examples use made-up codes) and outside `#[cfg(test)]`
/// modules (tests do too).
fn codes_in_sources() -> BTreeSet<(String, String)> {
    let mut files = Vec::new();
    for krate in ["goondan-runtime", "goondan-base"] {
        rust_files(&workspace_root().join(krate).join("src"), &mut files);
    }
    let mut found = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for line in text.lines() {
            let code_part = line.trim_start();
            if code_part.starts_with("#[cfg(test)]") {
                break;
            }
            if code_part.starts_with("//") {
                continue;
            }
            let code_part = code_part.split(" //").next().unwrap_or_default();
            for (i, _) in code_part.match_indices("\"E_") {
                let rest = &code_part[i + 1..];
                let len = rest
                    .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                    .unwrap_or(rest.len());
                if rest[len..].starts_with('"') {
                    let rel = file.strip_prefix(workspace_root()).unwrap_or(&file);
                    found.insert((rest[..len].to_owned(), rel.display().to_string()));
                }
            }
        }
    }
    found
}

#[test]
fn res_7_every_runtime_code_in_the_sources_has_a_heading() {
    let doc = errors_doc();
    let anchors = anchors(&doc);
    let found = codes_in_sources();
    let codes: BTreeSet<&str> = found.iter().map(|(c, _)| c.as_str()).collect();
    // The scan sees the codes of every family, so an empty scan cannot pass.
    for sample in [
        "E_TOOL_TIMEOUT",
        "E_AGENT_CYCLE",
        "E_HTTP_DNS",
        "E_FS_NOT_FOUND",
        "E_IO",
    ] {
        assert!(codes.contains(sample), "the scan missed {sample}");
    }
    for (code, file) in &found {
        assert!(
            anchors.contains(&github_anchor(code)),
            "{code} (raised in {file}) has no `## {code}` heading in docs/errors.md"
        );
        assert!(
            DOCUMENTED_CODES.contains(&code.as_str()),
            "{code} (raised in {file}) is missing from help_url::DOCUMENTED_CODES"
        );
    }
    // The list of documented codes and the code headings are the same set.
    let headed: BTreeSet<String> = sections(&doc)
        .into_iter()
        .map(|(h, _)| h)
        .filter(|h| h.starts_with("E_"))
        .collect();
    let listed: BTreeSet<String> = DOCUMENTED_CODES.iter().map(|c| (*c).to_owned()).collect();
    assert_eq!(
        headed, listed,
        "docs/errors.md headings vs DOCUMENTED_CODES"
    );
    // Each heading says what the code means, its usual causes and the fix.
    for (heading, body) in sections(&doc) {
        if heading.starts_with("E_") {
            for part in ["**Means:**", "**Usual causes:**", "**Fix:**"] {
                assert!(body.contains(part), "`## {heading}` lacks {part}");
            }
        }
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct CodeIn {
    code: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

fn schema(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required,
           "additionalProperties": false})
}

/// `demo__fail {code}` fails with that code; `demo__io` fails with a real I/O error;
/// `demo__panic`, `demo__slow` (10 ms timeout), `demo__later {code}` (a submitted call that
/// fails); `demo__given {code}` fails with its own help URL.
fn demo_tool(help_url_base: Option<&str>) -> Tool {
    let mut b = Tool::builder("demo")
        .export(Export::typed("fail", |_ctx, i: CodeIn| async move {
            Err::<Value, _>(ToolError::new("it failed").with_code(i.code))
        }))
        .export(Export::new(
            "io",
            schema(json!({}), &[]),
            handler_fn(|ctx: ToolContext, _args| async move {
                let missing = ctx.workdir().join("no-such-file.txt");
                std::fs::read(missing).map(|_| json!(null))
            }),
        ))
        .export(Export::typed("panic", |_ctx, _i: NoArgs| async move {
            if true {
                panic!("boom");
            }
            Ok::<Value, ToolError>(json!(null))
        }))
        .export(
            Export::typed("slow", |_ctx, _i: NoArgs| async move {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok::<Value, ToolError>(json!(null))
            })
            .with_timeout(Duration::from_millis(10)),
        )
        .export(Export::new(
            "later",
            schema(json!({"code": {"type": "string"}}), &["code"]),
            handler_fn(|_ctx, args| async move {
                let code = args["code"].as_str().unwrap_or_default().to_owned();
                Ok::<_, ToolError>(Pending::new(async move {
                    Err::<Value, _>(ToolError::new("later failure").with_code(code))
                }))
            }),
        ))
        .export(Export::typed("given", |_ctx, i: CodeIn| async move {
            Err::<Value, _>(
                ToolError::new("it failed")
                    .with_code(i.code)
                    .with_help_url("https://given.example/help"),
            )
        }));
    if let Some(base) = help_url_base {
        b = b.help_url_base(base);
    }
    b.build().unwrap()
}

struct Host {
    executor: ToolExecutor,
    catalog: ToolCatalog,
    ctx: ToolContext,
    _workdir: tempfile::TempDir,
}

impl Host {
    fn new(tool: Tool, base: Option<&str>) -> Self {
        let registry = Arc::new(ToolRegistry::builder().tool(tool).build().unwrap());
        let mut builder = ToolExecutor::builder(Arc::clone(&registry));
        if let Some(base) = base {
            builder = builder.help_url_base(base);
        }
        let workdir = tempfile::tempdir().unwrap();
        Host {
            executor: builder.build(),
            catalog: ToolCatalog::build(&registry, ["demo"]).unwrap(),
            ctx: ToolContext::builder(workdir.path()).build(),
            _workdir: workdir,
        }
    }

    async fn call(&self, name: &str, args: Value) -> ToolCallResult {
        let call = ToolCall::new("c1", name, args);
        let r = self.executor.execute(call, &self.ctx, &self.catalog).await;
        match r.handle.clone() {
            Some(handle) => self.executor.pending().wait(&handle).await.unwrap(),
            None => r,
        }
    }

    async fn error(&self, name: &str, args: Value) -> Value {
        let r = self.call(name, args).await;
        assert!(r.is_error(), "{name}: {r:?}");
        serde_json::to_value(r.error.unwrap()).unwrap()
    }
}

/// Asserts that `err` is a runtime code's error whose helpUrl is `base#anchor` of its heading.
fn assert_points_to_heading(err: &Value, base: &str, anchors: &BTreeSet<String>) {
    let code = err["code"].as_str().unwrap();
    let url = err["helpUrl"]
        .as_str()
        .unwrap_or_else(|| panic!("{code} has no helpUrl: {err}"));
    let anchor = url
        .strip_prefix(base)
        .and_then(|rest| rest.strip_prefix('#'))
        .unwrap_or_else(|| panic!("{code}: {url} is not under {base}#"));
    assert_eq!(anchor, github_anchor(code), "{code}");
    assert!(anchors.contains(anchor), "{code}: no heading #{anchor}");
}

#[tokio::test]
async fn res_7_runtime_errors_point_to_their_heading_in_docs_errors_md() {
    let anchors = anchors(&errors_doc());
    let host = Host::new(demo_tool(None), None);
    let base = DEFAULT_HELP_URL_BASE;
    assert_eq!(
        base,
        "https://github.com/goondan/goondan-rs/blob/main/docs/errors.md"
    );
    // Errors the runtime writes itself.
    let cases = [
        ("demo__nope", json!({}), "E_TOOL_NOT_IN_CATALOG"),
        ("demo-x", json!({}), "E_TOOL_INVALID_NAME"),
        ("demo__fail", json!({"code": 5}), "E_TOOL_INVALID_ARGS"),
        ("demo__fail", json!([1]), "E_TOOL_INVALID_ARGS"),
        ("demo__panic", json!({}), "E_TOOL_PANIC"),
        ("demo__slow", json!({}), "E_TOOL_TIMEOUT"),
        ("demo__io", json!({}), "E_IO"),
    ];
    for (name, args, code) in cases {
        let err = host.error(name, args).await;
        assert_eq!(err["code"], code, "{name}");
        assert_points_to_heading(&err, base, &anchors);
    }
    // Every documented code, raised by a handler or by submitted work, points to its heading.
    for code in DOCUMENTED_CODES {
        for name in ["demo__fail", "demo__later"] {
            let err = host.error(name, json!({"code": code})).await;
            assert_eq!(err["code"], *code);
            assert_points_to_heading(&err, base, &anchors);
        }
    }
}

#[tokio::test]
async fn res_7_authors_code_without_help_url_has_none() {
    let host = Host::new(demo_tool(None), None);
    for name in ["demo__fail", "demo__later"] {
        let err = host.error(name, json!({"code": "E_WEATHER_CITY"})).await;
        assert_eq!(
            err,
            json!({"code": "E_WEATHER_CITY", "name": "Error",
                   "message": if name == "demo__fail" { "it failed" } else { "later failure" }}),
            "{name}: no helpUrl at all"
        );
    }
    // The whole result, as the model sees it, has no helpUrl either.
    let r = host
        .call("demo__fail", json!({"code": "E_WEATHER_CITY"}))
        .await;
    let text = serde_json::to_string(&r).unwrap();
    assert!(!text.contains("helpUrl"), "{text}");
}

#[tokio::test]
async fn res_7_per_error_help_url_is_kept() {
    let host = Host::new(demo_tool(Some("https://w.example/errors/")), None);
    for code in ["E_WEATHER_CITY", "E_TOOL_TIMEOUT"] {
        let err = host.error("demo__given", json!({"code": code})).await;
        assert_eq!(err["helpUrl"], "https://given.example/help", "{code}");
    }
}

#[tokio::test]
async fn res_7_per_resource_help_url_base_serves_the_authors_codes() {
    let anchors = anchors(&errors_doc());
    // `{base}{code}`.
    let host = Host::new(demo_tool(Some("https://w.example/errors/")), None);
    for name in ["demo__fail", "demo__later"] {
        let err = host.error(name, json!({"code": "E_WEATHER_CITY"})).await;
        assert_eq!(
            err["helpUrl"], "https://w.example/errors/E_WEATHER_CITY",
            "{name}"
        );
    }
    // The runtime's own codes still point to docs/errors.md.
    let err = host.error("demo__panic", json!({})).await;
    assert_points_to_heading(&err, DEFAULT_HELP_URL_BASE, &anchors);
    let err = host.error("demo__fail", json!({"code": "E_TOOL"})).await;
    assert_points_to_heading(&err, DEFAULT_HELP_URL_BASE, &anchors);
    // `{base}#{anchor}` when the base ends with `#`.
    let host = Host::new(
        demo_tool(Some("https://github.com/me/weather/blob/main/ERRORS.md#")),
        None,
    );
    let err = host
        .error("demo__fail", json!({"code": "E_WEATHER_CITY"}))
        .await;
    assert_eq!(
        err["helpUrl"],
        "https://github.com/me/weather/blob/main/ERRORS.md#e_weather_city"
    );
}

#[tokio::test]
async fn res_7_host_configured_base_is_used() {
    let anchors = anchors(&errors_doc());
    let base = "https://docs.example.com/goondan/errors.html";
    let host = Host::new(demo_tool(None), Some(base));
    for (name, args) in [
        ("demo__nope", json!({})),
        ("demo__panic", json!({})),
        ("demo__fail", json!({"code": "E_FS_NOT_FOUND"})),
        ("demo__later", json!({"code": "E_HTTP_DNS"})),
    ] {
        let err = host.error(name, args).await;
        assert_points_to_heading(&err, base, &anchors);
    }
    // The host's base is for runtime codes only.
    let err = host
        .error("demo__fail", json!({"code": "E_WEATHER_CITY"}))
        .await;
    assert!(err.get("helpUrl").is_none(), "{err}");
}

/// Runs [`process_wide_base_child`] in a process of its own, with the environment variable set:
/// the process-wide base must not leak into the other tests of this binary.
#[test]
fn res_7_process_wide_base_comes_from_the_environment_then_the_setter() {
    let exe = std::env::current_exe().unwrap();
    // The child test's path in this binary: its module path without the crate's name.
    let child = match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::process_wide_base_child"),
        None => "process_wide_base_child".to_owned(),
    };
    let out = std::process::Command::new(exe)
        .args(["--exact", &child, "--ignored", "--test-threads=1"])
        .env(HELP_URL_BASE_ENV, "https://env.example/errors.md")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Only meaningful when started by the test above (it sets the variable); skipped otherwise.
#[tokio::test]
#[ignore = "run by res_7_process_wide_base_comes_from_the_environment_then_the_setter"]
async fn process_wide_base_child() {
    if std::env::var(HELP_URL_BASE_ENV).as_deref() != Ok("https://env.example/errors.md") {
        return;
    }
    let anchors = anchors(&errors_doc());
    let host = Host::new(demo_tool(None), None);
    let err = host.error("demo__panic", json!({})).await;
    assert_points_to_heading(&err, "https://env.example/errors.md", &anchors);

    goondan_runtime::tools::help_url::set_help_url_base("https://set.example/errors.md");
    let err = host.error("demo__panic", json!({})).await;
    assert_points_to_heading(&err, "https://set.example/errors.md", &anchors);

    // An executor's own base wins over the process's.
    let own = Host::new(demo_tool(None), Some("https://own.example/errors.md"));
    let err = own.error("demo__panic", json!({})).await;
    assert_points_to_heading(&err, "https://own.example/errors.md", &anchors);
}
