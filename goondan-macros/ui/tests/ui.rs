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
    // Built by cargo as `ui-pass-<file name>`.
    let built = [
        env!("CARGO_BIN_EXE_ui-pass-context-positions"),
        env!("CARGO_BIN_EXE_ui-pass-crate-reexport"),
        env!("CARGO_BIN_EXE_ui-pass-export-annotations"),
        env!("CARGO_BIN_EXE_ui-pass-export-attr"),
        env!("CARGO_BIN_EXE_ui-pass-export-ui"),
        env!("CARGO_BIN_EXE_ui-pass-fn-form"),
        env!("CARGO_BIN_EXE_ui-pass-impl-form"),
        env!("CARGO_BIN_EXE_ui-pass-mod-form"),
        env!("CARGO_BIN_EXE_ui-pass-option-params"),
        env!("CARGO_BIN_EXE_ui-pass-pending-return"),
        env!("CARGO_BIN_EXE_ui-pass-raw-ident-and-serde-attrs"),
        env!("CARGO_BIN_EXE_ui-pass-result-alias"),
        env!("CARGO_BIN_EXE_ui-pass-sync-and-async"),
        env!("CARGO_BIN_EXE_ui-pass-unit-return"),
        env!("CARGO_BIN_EXE_ui-pass-upper-case-names"),
        env!("CARGO_BIN_EXE_ui-pass-whole-struct-input"),
        env!("CARGO_BIN_EXE_ui-pass-zero-params"),
    ];
    let name = |exe: &str| {
        let file = Path::new(exe).file_stem().unwrap().to_string_lossy();
        file.strip_prefix("ui-pass-").unwrap().to_owned()
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui/pass");
    let mut cases: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    cases.sort();
    let listed: Vec<String> = built.iter().map(|exe| name(exe)).collect();
    assert_eq!(
        cases, listed,
        "every file in tests/ui/pass is a [[bin]] of Cargo.toml (ui-pass-<name>) and listed here"
    );
    for exe in built {
        let out = Command::new(exe).output().unwrap();
        assert!(
            out.status.success(),
            "tests/ui/pass/{}.rs: {}\n{}",
            name(exe),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
