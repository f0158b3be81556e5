//! The README and the guide: a README that opens with the two commands and points into the
//! guide, a guide chapter per `goondan_runtime::guide` module, and
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
fn the_readme_opens_with_the_two_commands() {
    let readme = readme();
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
    assert_eq!(modules.len(), 14, "{modules:?}");
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

/// The link targets (`](target)`) of one line, in order.
fn link_targets(line: &str) -> Vec<&str> {
    line.split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .collect()
}

#[test]
fn every_guide_chapter_ends_linking_to_the_previous_and_the_next() {
    let guide = workspace_root().join("goondan-runtime/src/guide");
    let index = read(&guide.join("mod.rs"));
    // The reading order: the index's numbered list (`//! 1. [`tools`]: ...`).
    let chapters: Vec<&str> = index
        .lines()
        .filter_map(|line| line.strip_prefix("//! "))
        .filter_map(|line| line.split_once(". [`"))
        .filter(|(number, _)| number.parse::<usize>().is_ok())
        .filter_map(|(_, rest)| rest.split('`').next())
        .collect();
    let declared: Vec<&str> = index
        .lines()
        .filter_map(|line| line.strip_prefix("pub mod "))
        .filter_map(|rest| rest.strip_suffix(" {}"))
        .collect();
    assert_eq!(
        chapters, declared,
        "the index lists the chapters in the order they are declared"
    );
    let target = |chapter: Option<&&str>| match chapter {
        Some(chapter) => format!("crate::guide::{chapter}"),
        None => "crate::guide".to_owned(),
    };
    for (i, chapter) in chapters.iter().enumerate() {
        let page = read(&guide.join(format!("{chapter}.md")));
        let last = page
            .lines()
            .rev()
            .find(|line| !line.trim().is_empty())
            .unwrap_or("");
        assert!(
            last.starts_with("Previous: [") && last.contains(". Next: ["),
            "{chapter}.md ends with `{last}`, not with its Previous/Next line"
        );
        let previous = target(i.checked_sub(1).and_then(|p| chapters.get(p)));
        let next = target(chapters.get(i + 1));
        assert_eq!(
            link_targets(last),
            [previous.as_str(), next.as_str()],
            "{chapter}.md"
        );
    }
    // goondan-base's guide holds the examples of the base tools' chapter, and leads on to the
    // chapter after it. Its links are docs.rs addresses: a link into another crate's docs does
    // not resolve in this workspace's rustdoc.
    let base = read(&workspace_root().join("goondan-base/src/guide.md"));
    let ending = base.trim_end().rsplit("\n\n").next().unwrap_or("");
    let docs = "https://docs.rs/goondan-runtime/latest/goondan_runtime/guide";
    assert!(
        ending.starts_with("Previous: ["),
        "goondan-base/src/guide.md ends with `{ending}`"
    );
    assert_eq!(
        link_targets(ending),
        [
            format!("{docs}/base_tools/index.html"),
            format!("{docs}/sandbox/index.html")
        ],
        "goondan-base/src/guide.md ends with `{ending}`"
    );
}
