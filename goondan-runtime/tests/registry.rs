//! The registry and the catalog: REG, SPEC, CAT.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use goondan_runtime::testing::{ResultAssertions, TestKit};
use goondan_runtime::tools::catalog::CatalogError;
use goondan_runtime::tools::registry::RegistryError;
use goondan_runtime::tools::tool::{SourceKind, ToolDefinitionError};
use goondan_runtime::{
    CatalogItem, Export, Tool, ToolCatalog, ToolError, ToolName, ToolRegistry, ToolSource,
    handler_fn,
};
use serde_json::json;

fn echo_export(name: &str) -> Export {
    Export::new(
        name,
        json!({"type": "object", "properties": {}, "additionalProperties": false}),
        handler_fn(|_c, _a| async { Ok::<_, ToolError>("echo") }),
    )
}

fn resource(name: &str, exports: &[&str]) -> Tool {
    let mut b = Tool::builder(name).origin(format!("test resource {name}"));
    for e in exports {
        b = b.export(echo_export(e));
    }
    b.build().unwrap()
}

#[test]
fn reg_1_registry_holds_every_endpoint_with_its_handler() {
    let registry = ToolRegistry::builder()
        .tool(common::text_tool(None))
        .tool(resource("b", &["run", "stop"]))
        .build()
        .unwrap();
    registry
        .register_item(
            "dyn__go",
            None,
            json!({"type": "object", "properties": {}}),
            handler_fn(|_c, _a| async { Ok::<_, ToolError>(1) }),
            ToolSource::extension("ext"),
        )
        .unwrap();
    let names: Vec<String> = registry.names().iter().map(ToString::to_string).collect();
    for n in ["text__upper", "b__run", "b__stop", "dyn__go"] {
        assert!(names.contains(&n.to_owned()), "{n} in {names:?}");
        assert!(registry.get(n).is_some());
    }
    assert_eq!(registry.len(), names.len());
}

#[test]
fn reg_3_entries_are_immutable_duplicates_name_both_sources() {
    let registry = ToolRegistry::builder()
        .tool(resource("a", &["x"]))
        .build()
        .unwrap();
    let before = registry.get("a__x").unwrap();
    let err = registry
        .register(
            Tool::builder("a")
                .export(echo_export("y"))
                .origin("the intruder")
                .build()
                .unwrap(),
        )
        .unwrap_err();
    match &err {
        RegistryError::DuplicateTool {
            name,
            first,
            second,
        } => {
            assert_eq!(name, "a");
            assert_eq!(first, "test resource a");
            assert_eq!(second, "the intruder");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string().contains("test resource a") && err.to_string().contains("the intruder")
    );
    // Nothing changed: same entry, and the refused export is not there.
    assert!(Arc::ptr_eq(&before, &registry.get("a__x").unwrap()));
    assert!(registry.get("a__y").is_none());

    // A dynamic registration cannot replace a compiled export either.
    let err = registry
        .register_item(
            "a__x",
            None,
            json!({"type": "object", "properties": {}}),
            handler_fn(|_c, _a| async { Ok::<_, ToolError>(2) }),
            ToolSource::extension("evil"),
        )
        .unwrap_err();
    assert!(
        matches!(err, RegistryError::DuplicateTool { .. }),
        "{err:?}"
    );

    // Building with the same tool twice fails, never "last wins".
    let err = ToolRegistry::builder()
        .tool(resource("a", &["x"]))
        .tool(resource("a", &["x"]))
        .build()
        .unwrap_err();
    assert!(matches!(err, RegistryError::DuplicateTool { .. }));
}

#[test]
fn cat_4_dynamic_registration_joins_the_registry() {
    let registry = ToolRegistry::new();
    let item = |name: &str| {
        registry.register_item(
            name,
            Some("Weather".into()),
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            handler_fn(|_c, _a| async { Ok::<_, ToolError>(21) }),
            ToolSource::extension("weather-ext"),
        )
    };
    item("weather__get").unwrap();
    // The same extension may add more exports to its resource.
    item("weather__forecast").unwrap();
    // The same name twice is refused.
    assert!(matches!(
        item("weather__get"),
        Err(RegistryError::DuplicateExport { .. })
    ));
    // Bad names are refused with the name error.
    assert!(matches!(
        item("weather"),
        Err(RegistryError::InvalidName { .. })
    ));
    assert!(matches!(
        item("weather!__x"),
        Err(RegistryError::InvalidName { .. })
    ));
    let info = registry.resource("weather").unwrap();
    assert_eq!(info.source().kind, SourceKind::Extension);
    assert_eq!(registry.len(), 2);
}

#[test]
fn spec_2_a_resource_needs_an_export() {
    let err = Tool::builder("empty").build().unwrap_err();
    assert_eq!(
        err,
        ToolDefinitionError::NoExports {
            resource: "empty".into()
        }
    );
}

#[test]
fn spec_3_export_names_are_unique_within_a_resource() {
    let err = Tool::builder("r")
        .export(echo_export("go"))
        .export(echo_export("go"))
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        ToolDefinitionError::DuplicateExport {
            resource: "r".into(),
            export: "go".into()
        }
    );
    // The same export name in two resources is fine.
    ToolRegistry::builder()
        .tool(resource("r1", &["go"]))
        .tool(resource("r2", &["go"]))
        .build()
        .unwrap();
}

#[test]
fn spec_4_error_message_limit_defaults_to_1000() {
    assert_eq!(resource("r", &["go"]).error_message_limit(), 1000);
    let t = Tool::builder("r")
        .error_message_limit(1200)
        .export(echo_export("go"))
        .build()
        .unwrap();
    assert_eq!(t.error_message_limit(), 1200);
}

#[test]
fn spec_6_parameters_must_be_an_object_schema() {
    let bad = Tool::builder("r")
        .export(Export::new(
            "go",
            json!({"type": "string"}),
            handler_fn(|_c, _a| async { Ok::<_, ToolError>(1) }),
        ))
        .build()
        .unwrap_err();
    assert!(
        matches!(bad, ToolDefinitionError::InvalidParameters { .. }),
        "{bad:?}"
    );
    let t = common::text_tool(None);
    for (_, e) in t.exports() {
        let p = e.parameters();
        assert_eq!(p["type"], "object");
        assert!(p["properties"].is_object(), "{p}");
    }
}

/// A slug: its schema is a string, not an object.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Slug(String);

/// Marks its lone string input as the whole input, which SPEC-6 refuses.
#[goondan_runtime::tool(name = "slug-pages")]
#[export(input = "whole")]
pub fn page(id: Slug) -> String {
    id.0
}

/// The same mistake in an `impl` block.
pub struct Pages;

/// Pages by slug.
#[goondan_runtime::tool(name = "slug-store")]
impl Pages {
    /// Reads a page.
    #[export(input = "whole")]
    pub fn get(&self, id: Slug) -> String {
        id.0
    }
}

#[test]
fn spec_6_a_whole_input_that_is_not_an_object_is_a_build_error_naming_the_tool() {
    let err = ToolRegistry::builder()
        .tool(page::TOOL)
        .build()
        .unwrap_err();
    assert!(
        matches!(
            &err,
            RegistryError::Definition(ToolDefinitionError::WholeInputNotObject {
                resource,
                export,
                ..
            }) if resource == "slug-pages" && export == "page"
        ),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains("tool `slug-pages`, export `page`") && message.contains("input = "),
        "{message}"
    );
    // Every linked tool is built at start-up: the mistake is an error there too, not a panic.
    let linked = ToolRegistry::builder().linked().build().unwrap_err();
    assert!(linked.to_string().contains("`slug-pages`"), "{linked}");
    // An `impl` block's tool, through the builder, `register` and a test kit.
    let store = ToolRegistry::builder().tool(Pages).build().unwrap_err();
    assert!(
        store
            .to_string()
            .contains("tool `slug-store`, export `get`"),
        "{store}"
    );
    let registry = ToolRegistry::new();
    assert!(registry.register(Pages).is_err());
    assert!(registry.is_empty());
    assert!(TestKit::with_tools([page::TOOL]).is_err());
}

#[test]
fn name_5_upper_case_export_and_resource_names_are_registered() {
    // The seeds' own names: the API reference's `my-tool__doSomething`, upstream's
    // `setChatAction` and `downloadFile`.
    let registry = ToolRegistry::builder()
        .tool(resource("my-tool", &["doSomething"]))
        .tool(resource("Telegram", &["setChatAction", "downloadFile"]))
        .build()
        .unwrap();
    assert!(registry.get("my-tool__doSomething").is_some());
    assert!(registry.get("Telegram__setChatAction").is_some());
    assert!(registry.get("Telegram__downloadFile").is_some());
    // Names stay case-sensitive, as the model must send them back exactly.
    assert!(registry.get("my-tool__dosomething").is_none());
    registry
        .register_item(
            "bot__sendMessage",
            None,
            json!({"type": "object", "properties": {}}),
            handler_fn(|_c, _a| async { Ok::<_, ToolError>("sent") }),
            ToolSource::extension("bot-ext"),
        )
        .unwrap();
    assert!(registry.contains("bot__sendMessage"));
}

#[test]
fn name_3_double_underscore_stays_refused_in_upper_case_names() {
    let err = Tool::builder("MyTool")
        .export(echo_export("do__It"))
        .build()
        .unwrap_err();
    assert!(
        matches!(&err, ToolDefinitionError::InvalidName { resource, .. } if resource == "MyTool"),
        "{err:?}"
    );
    assert!(err.to_string().contains("`__`"), "{err}");
}

#[test]
fn name_3_definitions_with_double_underscores_are_refused() {
    assert!(matches!(
        Tool::builder("a__b").export(echo_export("x")).build(),
        Err(ToolDefinitionError::InvalidName { .. })
    ));
    assert!(matches!(
        Tool::builder("a").export(echo_export("x__y")).build(),
        Err(ToolDefinitionError::InvalidName { .. })
    ));
}

#[test]
fn cat_1_catalog_is_built_per_step_from_the_registry() {
    let registry = ToolRegistry::builder()
        .tool(resource("a", &["x", "y"]))
        .tool(resource("b", &["z"]))
        .build()
        .unwrap();
    let step1 = ToolCatalog::build(&registry, ["b", "a"]).unwrap();
    assert_eq!(step1.names().collect::<Vec<_>>(), ["b__z", "a__x", "a__y"]);
    // A later step built from a changed registry sees the change; the earlier one does not.
    registry.register(resource("c", &["w"])).unwrap();
    let step2 = ToolCatalog::build(&registry, ["b", "a", "c"]).unwrap();
    assert!(step2.contains("c__w") && !step1.contains("c__w"));
    // Unknown declared tools are an error naming them.
    let err = ToolCatalog::build(&registry, ["a", "nope"]).unwrap_err();
    assert_eq!(
        err,
        CatalogError::UnknownTools {
            names: vec!["nope".into()]
        }
    );
}

#[test]
fn cat_5_dynamic_tools_appear_in_the_next_catalog() {
    let registry = ToolRegistry::builder()
        .tool(resource("a", &["x"]))
        .build()
        .unwrap();
    let before = ToolCatalog::build(&registry, ["a"]).unwrap();
    registry
        .register_item(
            "weather__get",
            None,
            json!({"type": "object", "properties": {}}),
            handler_fn(|_c, _a| async { Ok::<_, ToolError>(1) }),
            ToolSource::extension("w"),
        )
        .unwrap();
    let after = ToolCatalog::build(&registry, ["a"]).unwrap();
    assert!(!before.contains("weather__get"));
    assert_eq!(after.names().collect::<Vec<_>>(), ["a__x", "weather__get"]);
}

#[tokio::test]
async fn cat_3_step_middleware_may_edit_the_catalog_and_the_gate_follows() {
    let mut kit = TestKit::with_tools([resource("a", &["x", "y"]), resource("b", &["z"])]).unwrap();
    let mut catalog = kit.catalog().clone();
    // Remove, reorder, add back: what a step middleware may do to ctx.toolCatalog.
    let removed = catalog.remove("a__y").unwrap();
    catalog.sort_by(|l, r| r.name().cmp(l.name()));
    assert_eq!(catalog.names().collect::<Vec<_>>(), ["b__z", "a__x"]);
    kit.set_catalog(catalog.clone());
    kit.call("a__y", json!({}))
        .await
        .assert_error("E_TOOL_NOT_IN_CATALOG");
    catalog.push(removed);
    catalog.retain(|i| i.name().resource() != "b");
    kit.set_catalog(catalog);
    kit.call("a__y", json!({})).await.assert_ok();
    kit.call("b__z", json!({}))
        .await
        .assert_error("E_TOOL_NOT_IN_CATALOG");
}

#[test]
fn cat_6_catalog_items_have_the_seeds_shape() {
    let registry = ToolRegistry::builder()
        .tool(common::weather_tool())
        .build()
        .unwrap();
    registry
        .register_item(
            "github__create_issue",
            Some("Create an issue".into()),
            json!({"type": "object", "properties": {"repo": {"type": "string"}}, "required": ["repo"]}),
            handler_fn(|_c, _a| async { Ok::<_, ToolError>(1) }),
            ToolSource::mcp("mcp-github", "mcp-github", None),
        )
        .unwrap();
    let catalog = ToolCatalog::build(&registry, ["weather"]).unwrap();
    let json = catalog.to_json();
    assert_eq!(json[0]["name"], "weather__get");
    assert_eq!(json[0]["parameters"]["type"], "object");
    assert_eq!(
        json[0]["source"],
        json!({"type": "config", "name": "weather"})
    );
    assert_eq!(
        json[1],
        json!({"name": "github__create_issue", "description": "Create an issue",
               "parameters": {"type": "object", "properties": {"repo": {"type": "string"}}, "required": ["repo"]},
               "source": {"type": "mcp", "name": "mcp-github", "mcp": {"extensionName": "mcp-github"}}})
    );
    let item: CatalogItem = serde_json::from_value(json[1].clone()).unwrap();
    assert_eq!(
        *item.name(),
        ToolName::parse("github__create_issue").unwrap()
    );
    assert_eq!(item.source().unwrap().kind, SourceKind::Mcp);
    // Only the name is required.
    let bare: CatalogItem = serde_json::from_value(json!({"name": "a__b"})).unwrap();
    assert!(bare.description().is_none() && bare.parameters().is_none() && bare.source().is_none());
}

#[test]
fn catalog_shares_schemas_instead_of_copying_them() {
    let registry = ToolRegistry::builder()
        .tool(common::text_tool(None))
        .build()
        .unwrap();
    let a = ToolCatalog::build(&registry, ["text"]).unwrap();
    let b = ToolCatalog::build(&registry, ["text"]).unwrap();
    let pa = a.get("text__upper").unwrap().parameters().cloned().unwrap();
    let pb = b.get("text__upper").unwrap().parameters().cloned().unwrap();
    assert!(Arc::ptr_eq(&pa, &pb));
}
