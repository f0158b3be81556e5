//! `Dialect::tools_json`, the rendering of a catalog, in every dialect, for every corpus type:
//! the same bytes on every rebuilt catalog, and an item a step middleware edited rendered from
//! its edit, the registry's own rendering untouched.

use crate::corpus;

use goondan_runtime::dialect::Dialect;
use goondan_runtime::{Export, Tool, ToolCatalog, ToolError, ToolRegistry, handler_fn};
use serde_json::{Value, json};

/// Every corpus type as an export of `corpus`, and every odd schema the registry accepts as an
/// export of `odd`, each with a description.
fn registry() -> ToolRegistry {
    let noop = || handler_fn(|_ctx, _args| async { Ok::<_, ToolError>(Value::Null) });
    let mut corpus_tool = Tool::builder("corpus").description("The corpus types");
    for case in corpus::corpus() {
        corpus_tool = corpus_tool.export(
            Export::new(corpus::export_name(&case), (*case.schema).clone(), noop())
                .with_description(format!("The {} corpus type.", case.name)),
        );
    }
    let mut builder = ToolRegistry::builder().tool(corpus_tool.build().unwrap());
    for (i, schema) in corpus::odd_schemas().into_iter().enumerate() {
        let tool = Tool::builder(format!("odd{i}"))
            .export(Export::new("x", schema, noop()).with_description("An odd schema."))
            .build();
        if let Ok(tool) = tool {
            builder = builder.tool(tool);
        }
    }
    builder.build().unwrap()
}

#[test]
fn cat_6_the_same_catalog_is_the_same_bytes_on_every_request() {
    let registry = registry();
    for dialect in Dialect::ALL {
        // Each Step builds its catalog again; keep the tools this dialect can send.
        let step = || {
            let mut catalog = ToolCatalog::build(&registry, ["corpus"]).unwrap();
            catalog.retain(|item| {
                let mut one = ToolCatalog::new();
                one.push(item.clone());
                dialect.tools(&one).is_ok()
            });
            catalog
        };
        let first = step();
        assert!(first.len() > 20, "{dialect}: {}", first.len());
        let text = dialect.tools_json(&first).unwrap();
        for _ in 0..3 {
            assert_eq!(dialect.tools_json(&step()).unwrap(), text, "{dialect}");
        }
        let parsed: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed, dialect.tools(&first).unwrap(), "{dialect}");
    }
}

#[test]
fn cat_3_an_item_edited_after_the_build_is_rendered_from_its_edit() {
    let registry = registry();
    for dialect in Dialect::ALL {
        let mut catalog = ToolCatalog::build(&registry, ["corpus"]).unwrap();
        catalog.retain(|item| item.name().export() == "nested");
        let before = dialect.tools_json(&catalog).unwrap();
        assert!(before.contains("The Nested corpus type."), "{before}");

        // A step middleware rewrites the description, then the schema (an equal copy, then a
        // different one): each is what the model must see.
        let mut item = catalog.items()[0].clone();
        item.set_description("Edited by a step middleware.");
        catalog.push(item.clone());
        let edited = dialect.tools_json(&catalog).unwrap();
        assert!(
            edited.contains("Edited by a step middleware."),
            "{dialect}: {edited}"
        );

        item.set_parameters(Value::clone(item.parameters().unwrap()));
        catalog.push(item.clone());
        assert_eq!(dialect.tools_json(&catalog).unwrap(), edited, "{dialect}");

        item.set_parameters(json!({"type": "object", "properties": {
            "only": {"type": "string", "description": "The one field left."}},
            "required": ["only"], "additionalProperties": false}));
        catalog.push(item);
        let narrowed = dialect.tools_json(&catalog).unwrap();
        assert!(
            narrowed.contains("The one field left."),
            "{dialect}: {narrowed}"
        );

        // The registry's own rendering is untouched for the next Step.
        let mut fresh = ToolCatalog::build(&registry, ["corpus"]).unwrap();
        fresh.retain(|item| item.name().export() == "nested");
        assert_eq!(dialect.tools_json(&fresh).unwrap(), before, "{dialect}");
    }
}

/// Every tool of [`registry`], and a few items made by hand (no description, no parameters, a
/// title, hints and an output schema), each alone as the catalog of a dialect: one line each,
/// the JSON text or the error.
fn rendering(dialect: Dialect) -> String {
    use goondan_runtime::CatalogItem;
    use goondan_runtime::tools::annotations::ExportAnnotations;
    use goondan_runtime::tools::output_schema::OutputSchema;

    let mut catalog = ToolCatalog::all(&registry());
    let name = |s: &str| goondan_runtime::ToolName::parse(s).unwrap();
    catalog.push(CatalogItem::new(name("bare__tool")));
    let annotations = ExportAnnotations {
        title: Some("Reads notes".into()),
        read_only: Some(true),
        open_world: Some(false),
        ..ExportAnnotations::default()
    };
    catalog.push(
        CatalogItem::new(name("notes__read"))
            .with_description("Reads a note.")
            .with_parameters(
                json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object", "properties": {"id": {"type": "integer"},
                "tags": {"type": "object", "additionalProperties": {"type": "string"}}},
                "required": ["id"]}),
            )
            .with_annotations(annotations)
            .with_output_schema(OutputSchema::from_schema(json!({"type": "object",
                "properties": {"text": {"type": "string"}}}))),
    );
    let mut lines = String::new();
    let mut line = |catalog: &ToolCatalog| {
        lines += &dialect
            .tools_json(catalog)
            .unwrap_or_else(|e| format!("error: {e}"));
        lines.push('\n');
    };
    for item in catalog.items() {
        let mut one = ToolCatalog::new();
        one.push(item.clone());
        line(&one);
    }
    lines
}

#[test]
fn every_dialect_renders_the_corpus_byte_for_byte_as_recorded() {
    // `tests/fixtures/dialects/{dialect}.jsonl`; `GOONDAN_BLESS=1` records them again.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dialects");
    for dialect in Dialect::ALL {
        let path = dir.join(format!("{dialect}.jsonl"));
        let text = rendering(dialect);
        if std::env::var_os("GOONDAN_BLESS").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &text).unwrap();
        }
        let recorded = std::fs::read_to_string(&path).unwrap();
        for (i, (got, want)) in text.lines().zip(recorded.lines()).enumerate() {
            assert_eq!(got, want, "{dialect}, line {}", i + 1);
        }
        assert_eq!(text.lines().count(), recorded.lines().count(), "{dialect}");
    }
}
