//! Compile-time behaviour of `#[tool]`: every mistake in `ui/fail` is refused with a message
//! that points at it and says how to fix it; every form in `ui/pass` compiles and runs. The cases
//! use the macro as users do, through `goondan-runtime`.

use std::path::Path;
use std::process::Command;

/// The mistakes, checked by trybuild against the tool contract alone (the runtime without
/// default features), each with the messages in its `.stderr`.
#[test]
fn fail() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
}

/// The forms that compile: each case is a binary of this package (`Cargo.toml`), so cargo has
/// built it before this test; each runs its own assertions in `main`.
#[test]
fn pass() {
    let built: &[(&str, &str)] = &[
        (
            "context-positions",
            env!("CARGO_BIN_EXE_ui-pass-context-positions"),
        ),
        (
            "crate-reexport",
            env!("CARGO_BIN_EXE_ui-pass-crate-reexport"),
        ),
        (
            "export-annotations",
            env!("CARGO_BIN_EXE_ui-pass-export-annotations"),
        ),
        ("export-attr", env!("CARGO_BIN_EXE_ui-pass-export-attr")),
        ("fn-form", env!("CARGO_BIN_EXE_ui-pass-fn-form")),
        ("impl-form", env!("CARGO_BIN_EXE_ui-pass-impl-form")),
        ("mod-form", env!("CARGO_BIN_EXE_ui-pass-mod-form")),
        ("option-params", env!("CARGO_BIN_EXE_ui-pass-option-params")),
        (
            "pending-return",
            env!("CARGO_BIN_EXE_ui-pass-pending-return"),
        ),
        (
            "raw-ident-and-serde-attrs",
            env!("CARGO_BIN_EXE_ui-pass-raw-ident-and-serde-attrs"),
        ),
        ("result-alias", env!("CARGO_BIN_EXE_ui-pass-result-alias")),
        (
            "sync-and-async",
            env!("CARGO_BIN_EXE_ui-pass-sync-and-async"),
        ),
        ("unit-return", env!("CARGO_BIN_EXE_ui-pass-unit-return")),
        (
            "upper-case-names",
            env!("CARGO_BIN_EXE_ui-pass-upper-case-names"),
        ),
        (
            "whole-struct-input",
            env!("CARGO_BIN_EXE_ui-pass-whole-struct-input"),
        ),
        ("zero-params", env!("CARGO_BIN_EXE_ui-pass-zero-params")),
    ];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui/pass");
    let mut cases: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    cases.sort();
    let listed: Vec<&str> = built.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        cases, listed,
        "every file in tests/ui/pass is a [[bin]] of Cargo.toml (ui-pass-<name>) and listed here"
    );
    for (name, exe) in built {
        let out = Command::new(exe).output().unwrap();
        assert!(
            out.status.success(),
            "tests/ui/pass/{name}.rs: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
