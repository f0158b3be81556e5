//! `#[tool_input]` frees a tool author from depending on serde and schemars: a crate whose
//! `Cargo.toml` names only `goondan-runtime` compiles a tool with a struct input, and the same
//! crate with a plain `#[derive(Deserialize, JsonSchema)]` does not (the control that shows
//! the check can fail). Real `cargo check` runs on a crate written to a temporary directory.

use std::path::Path;
use std::process::Command;

use goondan_test_peers::workspace_root;

const TOOL_INPUT: &str = r#"
use goondan_runtime::prelude::*;

/// What `count` reads.
#[tool_input]
pub struct CountInput {
    /// The text whose words to count.
    pub text: String,
    /// Count only words at least this long.
    #[serde(default)]
    #[schemars(range(max = 100))]
    pub min_len: usize,
}

/// Counts words.
#[tool(name = "words")]
pub fn count(input: CountInput) -> usize {
    input.text.split_whitespace().filter(|w| w.len() >= input.min_len).count()
}
"#;

const PLAIN_DERIVE: &str = r#"
use goondan_runtime::prelude::*;

#[derive(Deserialize, JsonSchema)]
pub struct CountInput {
    pub text: String,
}

/// Counts words.
#[tool(name = "words")]
pub fn count(input: CountInput) -> usize {
    input.text.split_whitespace().count()
}
"#;

/// Writes a library crate whose only dependency is the runtime (without default features,
/// as a tool author writes it) and runs `cargo check` on it. Returns success and stderr.
fn check_crate(name: &str, lib_rs: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let runtime = workspace_root().join("goondan-runtime");
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [dependencies]\ngoondan-runtime = {{ path = {runtime:?}, default-features = false }}\n\n\
         [workspace]\n"
    );
    std::fs::write(dir.path().join("Cargo.toml"), manifest).unwrap();
    // The workspace's versions, so the check builds what the workspace builds, offline.
    std::fs::copy(
        workspace_root().join("Cargo.lock"),
        dir.path().join("Cargo.lock"),
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), lib_rs).unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args(["check", "--offline", "--quiet", "--lib"])
        .current_dir(dir.path())
        // Shared between runs and the two crates, so the runtime is checked once.
        .env(
            "CARGO_TARGET_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("tool-input-crates"),
        )
        .env_remove("RUSTFLAGS")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn tool_input_needs_no_serde_or_schemars_in_the_authors_manifest() {
    let (ok, stderr) = check_crate("only_the_runtime", TOOL_INPUT);
    assert!(
        ok,
        "a crate depending only on goondan-runtime failed:\n{stderr}"
    );

    // The control: the same crate deriving through serde's own paths cannot compile.
    let (ok, stderr) = check_crate("plain_derive", PLAIN_DERIVE);
    assert!(!ok, "a plain derive compiled without serde in the manifest");
    assert!(
        stderr.contains("crate for `serde`") || stderr.contains("crate `schemars`"),
        "{stderr}"
    );
}
