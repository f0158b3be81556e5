//! The README and the guide (issue 24, item 5): a short README that opens with the two
//! commands and points into the guide, a guide chapter per `goondan_runtime::guide` module, and
//! the generated tables in `docs/`. The examples themselves run as doc tests.

use std::collections::BTreeSet;
use std::path::Path;

use goondan_test_peers::workspace_root;

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn readme() -> String {
    read(&workspace_root().join("README.md"))
}

#[test]
fn the_readme_is_at_most_200_lines_and_opens_with_the_two_commands() {
    let readme = readme();
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines; the tour belongs in the guide"
    );
    let first_block = readme
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("README.md has an sh block");
    let commands: Vec<&str> = first_block
        .lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .filter(|command| !command.is_empty())
        .collect();
    assert_eq!(
        commands,
        ["cargo run --example quickstart", "cargo test --workspace"]
    );
}

/// The targets of the README's relative links (`[text](path)`), without their anchors.
fn relative_links(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .filter(|target| !target.starts_with("http") && !target.starts_with('#'))
        .map(|target| target.split('#').next().unwrap_or(target).to_owned())
        .collect()
}

#[test]
fn the_readme_links_only_to_files_that_exist() {
    let links = relative_links(&readme());
    assert!(links.iter().any(|l| l == "docs/errors.md"), "{links:?}");
    for link in links {
        assert!(
            workspace_root().join(&link).is_file(),
            "README.md links to {link}, which does not exist"
        );
    }
}

#[test]
fn every_guide_chapter_is_in_the_readme_and_has_its_page() {
    let guide = workspace_root().join("goondan-runtime/src/guide");
    let modules: BTreeSet<String> = read(&guide.join("mod.rs"))
        .lines()
        .filter_map(|line| line.strip_prefix("pub mod "))
        .filter_map(|rest| rest.strip_suffix(" {}"))
        .map(str::to_owned)
        .collect();
    assert_eq!(modules.len(), 13, "{modules:?}");
    for module in &modules {
        assert!(guide.join(format!("{module}.md")).is_file(), "{module}.md");
    }
    let readme = readme();
    let named: BTreeSet<String> = readme
        .split("goondan_runtime::guide::")
        .skip(1)
        .map(|rest| {
            rest.chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect()
        })
        .collect();
    assert_eq!(
        named, modules,
        "the README's table names every chapter, and only those"
    );
}

#[test]
fn the_generated_tables_live_in_docs_not_in_the_readme() {
    let readme = readme();
    for (page, marker) in [
        ("docs/benchmarks.md", "<!-- perf-table:begin -->"),
        ("docs/conformance.md", "<!-- conformance:begin -->"),
    ] {
        assert!(
            read(&workspace_root().join(page)).contains(marker),
            "{page}"
        );
        assert!(!readme.contains(marker), "README.md still holds {marker}");
    }
}
