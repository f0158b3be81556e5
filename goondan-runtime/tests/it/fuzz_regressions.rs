//! Inputs the fuzz targets (`goondan-runtime/fuzz`, run by `scripts/fuzz`) found, replayed
//! through the same entry points the targets call, plus every committed seed input.

use crate::fuzz_entry;

use std::path::Path;

use goondan_runtime::Dialect;

/// Every file of `fuzz/seeds/{target}`.
fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target);
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no seeds for {target}");
    out
}

/// A fuzz entry point.
type Entry = fn(&[u8]);

#[test]
fn every_seed_replays_through_its_fuzz_entry_point() {
    let targets: [(&str, Entry); 6] = [
        ("tool_name", fuzz_entry::tool_name),
        ("args", fuzz_entry::args),
        ("args_differential", fuzz_entry::args_differential),
        ("execute", fuzz_entry::execute),
        ("bundle_yaml", fuzz_entry::bundle_yaml),
        ("ipc_frame", fuzz_entry::ipc_frame),
    ];
    for (target, run) in targets {
        for (_, data) in seeds(target) {
            run(&data);
        }
    }
    let dialects = [
        ("dialect_openai_chat", Dialect::OPENAI_CHAT),
        ("dialect_openai_responses", Dialect::OPENAI_RESPONSES),
        ("dialect_anthropic", Dialect::ANTHROPIC),
        ("dialect_gemini", Dialect::GEMINI),
        ("dialect_mcp", Dialect::MCP),
    ];
    for (target, dialect) in dialects {
        for (_, data) in seeds(target) {
            fuzz_entry::dialect_calls(dialect, &data);
        }
    }
}

/// Found by the `execute` target on its seed `bad_bounds.json` (input `\x18` followed by
/// `{"level": 11, "name": "", "slug": "A"}`): a typed export whose schema states `maximum: 10`,
/// `minLength: 1` and `pattern: ^[a-z]+$` (schemars' `range`, `length`, `regex`) runs with
/// arguments outside them when the executor leaves typed handlers to serde, which does not
/// check those keywords. Every call is checked against the schema.
#[tokio::test]
async fn execute_typed_export_refuses_arguments_outside_its_schema_bounds() {
    let kit = goondan_runtime::testing::TestKit::with_tools([fuzz_entry::corpus_tool()]).unwrap();
    let result = kit
        .call(
            "corpus__bounds",
            serde_json::json!({"level": 11, "name": "", "slug": "A"}),
        )
        .await;
    assert_eq!(
        result.error_code(),
        Some("E_TOOL_INVALID_ARGS"),
        "{result:?}"
    );
}

/// Found by the `execute` and `args_differential` targets (seeds `negative_zero_isize`):
/// `"isize": -0.0` is an integer for JSON Schema, and the call reads it as
/// 0; the fuzz properties had compared against serde on the raw arguments.
#[tokio::test]
async fn execute_reads_negative_zero_as_the_integer_zero() {
    let kit = goondan_runtime::testing::TestKit::with_tools([fuzz_entry::corpus_tool()]).unwrap();
    let args = serde_json::json!({"i8": -127, "i16": 300, "i32": -70000,
        "i64": 9007199254740993_i64, "u8": 255, "u16": 65535, "u32": 4294967295_u32,
        "u64": 18446744073709551615_u64, "usize": 1, "isize": -0.0});
    let result = kit.call("corpus__integers", args).await;
    let output = result
        .output
        .clone()
        .unwrap_or_else(|| panic!("{result:?}"));
    assert_eq!(output["isize"], serde_json::json!(0));
    assert_eq!(output["u64"], serde_json::json!(18446744073709551615_u64));
}
