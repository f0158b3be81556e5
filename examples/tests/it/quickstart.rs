//! The quickstart prints what the README's first command promises: the catalog, and then
//! exactly its scripted sequence of tool calls. The test runs the example's program, which is
//! also the sandbox's helper for its `bash__exec` calls; `cargo test` builds the examples next
//! to this binary's directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use serde_json::Value;

fn example_binary() -> PathBuf {
    let deps = std::env::current_exe().unwrap();
    let profile_dir = deps.parent().unwrap().parent().unwrap();
    profile_dir.join("examples").join("quickstart")
}

/// Splits the output into the catalog and the JSON document after each `call` line.
fn results(out: &str) -> (Value, Vec<Value>) {
    let mut de =
        serde_json::Deserializer::from_str(out.split_once('\n').unwrap().1).into_iter::<Value>();
    let catalog = de.next().unwrap().unwrap();
    let mut results = Vec::new();
    for block in out.split("\ncall ").skip(1) {
        let json_start = block.find('{').unwrap();
        let mut it = serde_json::Deserializer::from_str(&block[json_start..]).into_iter::<Value>();
        // The call line's own arguments come first, then the result.
        let _args = it.next().unwrap().unwrap();
        let rest = &block[json_start..];
        let second = rest.find("\n{").unwrap();
        let mut it = serde_json::Deserializer::from_str(&rest[second..]).into_iter::<Value>();
        results.push(it.next().unwrap().unwrap());
    }
    (catalog, results)
}

#[test]
fn quickstart_prints_catalog_and_the_scripted_sequence() {
    let bin = example_binary();
    assert!(bin.exists(), "{} was not built", bin.display());
    let run = std::process::Command::new(&bin).output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let out = String::from_utf8(run.stdout).unwrap();
    let (catalog, results) = results(&out);

    let names: Vec<&str> = catalog
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"text-utils__uppercase") && names.contains(&"notes__summarise"));
    assert!(!names.iter().any(|n| n.starts_with("admin__")), "{names:?}");

    let outcome: Vec<(String, Option<String>)> = results
        .iter()
        .map(|r| {
            (
                r["status"].as_str().unwrap().to_owned(),
                r["error"]["code"].as_str().map(str::to_owned),
            )
        })
        .collect();
    let expect = |s: &str, c: Option<&str>| (s.to_owned(), c.map(str::to_owned));
    assert_eq!(
        outcome,
        [
            expect("ok", None),
            expect("ok", None),
            expect("ok", None),
            expect("ok", None),
            expect("error", Some("E_TOOL_INVALID_ARGS")),
            expect("error", Some("E_TOOL_NOT_IN_CATALOG")),
            expect("error", Some("E_TOOL_INVALID_NAME")),
            expect("error", Some("E_NOTE_NOT_FOUND")),
            expect("error", Some("E_TOOL_PANIC")),
            expect("error", Some("E_TOOL_TIMEOUT")),
            expect("pending", None),
            // The base tools.
            expect("ok", None),
            expect("ok", None),
            expect("ok", None),
            expect("ok", None),
            expect("error", Some("E_PATH_OUTSIDE_WORKDIR")),
        ]
    );
    assert_eq!(results[12]["output"]["content"], "hello from goondan\n");
    assert_eq!(
        results[14]["output"]["stdout"].as_str().unwrap().trim(),
        "3"
    );
    assert_eq!(results[14]["output"]["exitCode"], 0);
    assert_eq!(results[0]["output"]["result"], "HELLO, GOONDAN");
    let truncated = results[7]["error"]["message"].as_str().unwrap();
    assert!(truncated.ends_with("... (truncated)") && truncated.chars().count() == 80);
    // The pending result's completion is printed after it.
    let completion = out
        .split("completion of pending-")
        .nth(1)
        .expect("a completion");
    let done: Value =
        serde_json::Deserializer::from_str(&completion[completion.find('{').unwrap()..])
            .into_iter::<Value>()
            .next()
            .unwrap()
            .unwrap();
    assert_eq!(done["status"], "ok");
    assert_eq!(done["toolCallId"], results[10]["toolCallId"]);
    assert_eq!(done["output"]["notes"], 2);

    // Part 3: the bundle's Turn. The catalog shows what the model's search found, and a tool
    // the search left out is refused like any call outside the catalog.
    let part3 = out
        .split("# A bundle and the step loop")
        .nth(1)
        .expect("part 3");
    let seen: Vec<usize> = part3
        .lines()
        .filter_map(|l| l.split("the model sees ").nth(1))
        .map(|rest| rest.split(' ').next().unwrap().parse().unwrap())
        .collect();
    assert!(seen.len() >= 3, "{part3}");
    // More tools than the search's threshold: the search tool alone, then what it found.
    assert_eq!(seen[..3], [1, 3, 3], "{part3}");
    assert!(
        part3.contains("bash__exec -> error E_TOOL_NOT_IN_CATALOG"),
        "{part3}"
    );
    assert!(part3.contains("file-system__read -> "), "{part3}");
}
