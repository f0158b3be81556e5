//! The neutral schema of every corpus type: inline, strict where serde is strict, faithful to
//! serde's attributes and the doc comments, and valid JSON Schema 2020-12.

use crate::corpus;

use goondan_runtime::tools::schema::{ArgValidator, check_metaschema, check_parameters};
use serde_json::{Value, json};

fn schema_of(name: &str) -> Value {
    let case = corpus::corpus()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no corpus type {name}"));
    (*case.schema).clone()
}

#[test]
fn corpus_has_at_least_thirty_types() {
    assert!(corpus::corpus().len() >= 30);
}

#[test]
fn spec_6_every_neutral_schema_is_an_object_schema_valid_against_the_2020_12_metaschema() {
    for case in corpus::corpus() {
        check_metaschema(&case.schema).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        check_parameters(&case.schema).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert!(case.schema.get("$schema").is_none(), "{}", case.name);
        assert!(case.schema.get("title").is_none(), "{}", case.name);
    }
}

#[test]
fn every_object_node_has_properties_and_closes_unknown_keys() {
    for case in corpus::corpus() {
        corpus::walk(&case.schema, "", &mut |path, node| {
            let Some(obj) = node.as_object() else { return };
            let is_object = obj.get("type") == Some(&json!("object"))
                || obj
                    .get("type")
                    .and_then(Value::as_array)
                    .is_some_and(|t| t.contains(&json!("object")));
            if !is_object {
                return;
            }
            assert!(
                obj.get("properties").is_some_and(Value::is_object),
                "{} {path}",
                case.name
            );
            let composed = ["oneOf", "anyOf", "allOf", "$ref"]
                .iter()
                .any(|k| obj.contains_key(*k));
            if composed && obj.get("properties").is_some_and(|p| p != &json!({})) {
                assert_eq!(
                    obj.get("unevaluatedProperties"),
                    Some(&json!(false)),
                    "{} {path}",
                    case.name
                );
            }
            if !composed && !is_branch_of_open_object(&case.schema, path) {
                assert!(
                    obj.contains_key("additionalProperties"),
                    "{} {path}: {node}",
                    case.name
                );
            }
        });
    }
}

#[test]
fn only_recursive_types_keep_references() {
    for case in corpus::corpus() {
        let text = case.schema.to_string();
        let recursive = matches!(case.name, "Tree" | "Calc");
        assert_eq!(text.contains("$ref"), recursive, "{}: {text}", case.name);
    }
    assert_eq!(
        schema_of("Tree")["properties"]["children"]["items"],
        json!({"$ref": "#"})
    );
    assert!(schema_of("Calc")["$defs"]["Expr"].is_object());
}

#[test]
fn required_lists_exactly_the_parameters_without_option_or_default() {
    let cases = [
        ("Optionals", json!(["name"])),
        ("Defaults", json!(["url"])),
        ("CamelCase", json!(["filePath", "followLinks"])),
        ("Flattened", json!(["query", "size"])),
        ("Renamed", json!(["type", "$value"])),
        ("KebabStrict", json!(["dry-run"])),
        ("Strict", json!(["id"])),
        ("ExecParams", json!(["command"])),
    ];
    for (name, required) in cases {
        assert_eq!(schema_of(name)["required"], required, "{name}");
    }
    for name in ["AllOptional", "StructDefault", "OptionalNested", "Empty"] {
        assert!(
            schema_of(name)
                .get("required")
                .is_none_or(|r| r == &json!([])),
            "{name}"
        );
    }
}

#[test]
fn serde_attributes_are_honoured() {
    let camel = schema_of("CamelCase");
    assert!(camel["properties"]["maxBytes"].is_object());
    let skipped = schema_of("Skipped");
    assert!(skipped["properties"].get("cache").is_none());
    let flattened = schema_of("Flattened");
    assert!(
        flattened["properties"]["size"].is_object()
            && flattened["properties"]["offset"].is_object()
    );
    assert_eq!(flattened["additionalProperties"], false);
    let defaults = schema_of("Defaults");
    assert_eq!(defaults["properties"]["retries"]["default"], 3);
    let levels = schema_of("RenamedVariants");
    assert_eq!(
        levels["properties"]["level"]["enum"],
        json!(["dbg", "INFO_LEVEL"])
    );
    let internal = schema_of("Internal");
    let tags: Vec<_> = internal["properties"]["command"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["properties"]["kind"]["const"].clone())
        .collect();
    assert_eq!(tags, vec![json!("move"), json!("say"), json!("stop")]);
    let adjacent = schema_of("Adjacent");
    assert_eq!(
        adjacent["properties"]["event"]["oneOf"][0]["required"],
        json!(["t", "c"])
    );
}

#[test]
fn descriptions_come_from_doc_comments_of_types_fields_and_variants() {
    let p = schema_of("Primitives");
    assert_eq!(p["description"], "Every primitive a tool takes.");
    assert_eq!(p["properties"]["flag"]["description"], "A flag.");
    let docs = schema_of("DocumentedEnum");
    assert_eq!(
        docs["properties"]["volume"]["oneOf"][0]["description"],
        "Barely audible."
    );
    assert_eq!(
        docs["properties"]["volume"]["oneOf"][2]["const"],
        "very_loud"
    );
    let nested = schema_of("Nested");
    assert_eq!(
        nested["properties"]["start"]["description"],
        "Where it starts."
    );
}

#[test]
fn integers_carry_the_bounds_of_their_width() {
    let ints = schema_of("Integers");
    let bounds = |k: &str| {
        (
            ints["properties"][k]["minimum"].clone(),
            ints["properties"][k]["maximum"].clone(),
        )
    };
    assert_eq!(bounds("i8"), (json!(-128), json!(127)));
    assert_eq!(bounds("u32"), (json!(0), json!(u32::MAX)));
    assert_eq!(bounds("i64"), (json!(i64::MIN), json!(i64::MAX)));
    assert_eq!(bounds("u64"), (json!(0), json!(u64::MAX)));
    assert_eq!(bounds("usize"), (json!(0), json!(u64::MAX)));
    let bounded = schema_of("Bounds");
    assert_eq!(bounded["properties"]["level"]["minimum"], 1);
    assert_eq!(bounded["properties"]["level"]["maximum"], 10);
}

#[test]
fn an_enum_input_is_typed_object_at_its_root() {
    let command = schema_of("Command");
    assert_eq!(command["type"], "object");
    assert_eq!(command["oneOf"].as_array().map(Vec::len), Some(3));
    let v = ArgValidator::new(&command);
    assert!(v.is_valid(&json!({"kind": "stop"})));
    assert!(!v.is_valid(&json!({"kind": "stop", "extra": 1})));
}

#[test]
fn timestamps_are_strings_with_a_format_annotation() {
    let t = schema_of("Timestamps");
    assert_eq!(t["properties"]["starts_at"]["type"], "string");
    assert_eq!(t["properties"]["starts_at"]["format"], "date-time");
    let v = ArgValidator::new(&t);
    assert!(v.is_valid(&json!({"starts_at": "2024-05-01T12:00:00Z"})));
}

/// Whether `path` is a branch of an object closed by `unevaluatedProperties` (a struct with a
/// flattened enum), which must accept its parent's keys.
fn is_branch_of_open_object(schema: &Value, path: &str) -> bool {
    let Some((parent, _index)) = path.rsplit_once('/') else {
        return false;
    };
    let Some((owner, keyword)) = parent.rsplit_once('/') else {
        return false;
    };
    ["oneOf", "anyOf", "allOf"].contains(&keyword)
        && schema
            .pointer(owner)
            .and_then(|o| o.get("unevaluatedProperties"))
            == Some(&json!(false))
}

#[test]
fn a_flattened_enum_accepts_its_parents_keys_and_nothing_else() {
    let v = ArgValidator::new(&schema_of("FlattenedEnum"));
    assert!(v.is_valid(&json!({"id": "a", "kind": "stop"})));
    assert!(v.is_valid(&json!({"id": "a", "kind": "say", "text": "hi"})));
    assert!(!v.is_valid(&json!({"id": "a", "kind": "stop", "extra": 1})));
    assert!(!v.is_valid(&json!({"kind": "stop"})));
}

#[test]
fn tuples_are_fixed_length_arrays() {
    let v = ArgValidator::new(&schema_of("Tupled"));
    assert!(v.is_valid(&json!({"pair": ["a", 1]})));
    assert!(!v.is_valid(&json!({"pair": ["a", 1, 2]})));
    assert!(!v.is_valid(&json!({"pair": [1, "a"]})));
}
