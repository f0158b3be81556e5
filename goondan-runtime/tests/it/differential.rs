//! The validator and serde agree: for every corpus type and every argument set (hand-written
//! and generated from the schema, then mutated), the neutral schema's validator accepts exactly
//! what serde accepts.
//!
//! "serde accepts" means: deserialising succeeds and nothing the model sent is dropped, i.e.
//! serialising the value back keeps every key and the kind of every value. Serde silently
//! ignores unknown keys of a struct without `deny_unknown_fields`; the neutral schema refuses
//! them (`additionalProperties: false`), so a misspelt parameter reaches the model as an error.
//!
//! JSON Schema counts `2.0` as an integer; serde reads it after [`ArgValidator::normalise`] has
//! turned it into `2`. The executor's check ([`ArgValidator::check`]) agrees with the validator
//! on every argument set too.

use crate::corpus;

use goondan_runtime::tools::schema::ArgValidator;
use serde_json::{Map, Value, json};

/// Whether `output` (serde's re-serialisation) keeps every key and value kind of `input`.
fn covers(input: &Value, output: &Value) -> bool {
    match (input, output) {
        (Value::Object(i), Value::Object(o)) => i
            .iter()
            .all(|(k, v)| o.get(k).is_some_and(|w| covers(v, w))),
        (Value::Array(i), Value::Array(o)) => {
            i.len() == o.len() && i.iter().zip(o).all(|(a, b)| covers(a, b))
        }
        (Value::Number(_), Value::Number(_)) => true,
        (Value::String(a), Value::String(b)) => a == b,
        (a, b) => a == b,
    }
}

fn serde_accepts(case: &corpus::Case, args: &Value) -> bool {
    (case.serde)(args).is_ok_and(|out| covers(args, &out))
}

struct Disagreement {
    case: &'static str,
    args: Value,
    validator: bool,
    detail: String,
}

fn compare(
    case: &corpus::Case,
    validator: &ArgValidator,
    args: &Value,
    out: &mut Vec<Disagreement>,
) -> bool {
    let v = validator.is_valid(args);
    let mut normalised = args.clone();
    validator.normalise(&mut normalised);
    let s = serde_accepts(case, &normalised);
    let checked = validator.check(&mut args.clone()).is_ok();
    if v != s || v != checked {
        let detail = format!(
            "serde: {:?}; check: {checked}; validator: {:?}",
            (case.serde)(&normalised),
            validator.problems(args)
        );
        out.push(Disagreement {
            case: case.name,
            args: args.clone(),
            validator: v,
            detail,
        });
    }
    v
}

fn report(disagreements: &[Disagreement]) {
    if disagreements.is_empty() {
        return;
    }
    let mut seen = std::collections::HashSet::new();
    let shown: Vec<String> = disagreements
        .iter()
        .filter(|d| seen.insert(d.case))
        .map(|d| {
            format!(
                "{} {} validator={} ({})",
                d.case, d.args, d.validator, d.detail
            )
        })
        .collect();
    panic!(
        "{} disagreements:\n{}",
        disagreements.len(),
        shown.join("\n")
    );
}

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }
}

fn integers() -> Vec<Value> {
    vec![
        json!(0),
        json!(1),
        json!(-1),
        json!(3),
        json!(10),
        json!(11),
        json!(127),
        json!(128),
        json!(-128),
        json!(-129),
        json!(255),
        json!(256),
        json!(65535),
        json!(65536),
        json!(i32::MAX),
        json!(i64::from(i32::MAX) + 1),
        json!(i64::from(i32::MIN) - 1),
        json!(u32::MAX),
        json!(u64::from(u32::MAX) + 1),
        json!(i64::MAX),
        json!(i64::MIN),
        json!(u64::MAX),
        json!(18_446_744_073_709_551_616.0_f64),
        json!(1.0),
        json!(2.5),
    ]
}

fn strings() -> Vec<Value> {
    vec![
        json!(""),
        json!("a"),
        json!("é"),
        json!("abc"),
        json!("Red"),
        json!("x-y"),
        json!("2024-05-01T12:00:00Z"),
        json!("aaaaaaaaaaaaaaaaaaaaaaaaa"),
        json!("5"),
    ]
}

/// A value for `node`, usually one that fits, sometimes one that does not.
fn generate(node: &Value, root: &Value, depth: usize, rng: &mut Rng) -> Value {
    let Some(obj) = node.as_object() else {
        return if node == &json!(true) {
            any_value(rng)
        } else {
            Value::Null
        };
    };
    if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
        let target = if r == "#" {
            root
        } else {
            root.pointer(r.trim_start_matches('#')).unwrap()
        };
        return generate(target, root, depth + 1, rng);
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(branches) = obj.get(key).and_then(Value::as_array) {
            let branch = if depth > 3 {
                &branches[0]
            } else {
                &branches[rng.below(branches.len())]
            };
            let mut value = generate(branch, root, depth + 1, rng);
            // A struct with a flattened enum: its own properties next to the variant's.
            if obj.get("properties").is_some_and(|p| p != &json!({})) {
                let mut own = obj.clone();
                own.remove(key);
                if let (Value::Object(v), Value::Object(o)) = (
                    &mut value,
                    generate(&Value::Object(own), root, depth + 1, rng),
                ) {
                    v.extend(o);
                }
            }
            return value;
        }
    }
    if let Some(c) = obj.get("const") {
        return c.clone();
    }
    if let Some(values) = obj.get("enum").and_then(Value::as_array) {
        return if rng.chance(8) {
            json!("Purple")
        } else {
            rng.pick(values)
        };
    }
    let ty = match obj.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => {
            let t = &ts[rng.below(ts.len())];
            t.as_str().unwrap().to_owned()
        }
        _ => return any_value(rng),
    };
    match ty.as_str() {
        "null" => Value::Null,
        "boolean" => json!(rng.chance(2)),
        "integer" => rng.pick(&integers()),
        "number" => rng.pick(&[json!(0), json!(1.5), json!(-2.25), json!(1e300), json!(7)]),
        "string" => rng.pick(&strings()),
        "array" => {
            let n = if depth > 3 { 0 } else { rng.below(3) };
            let items = obj.get("items").cloned().unwrap_or(json!(true));
            Value::Array(
                (0..n)
                    .map(|_| generate(&items, root, depth + 1, rng))
                    .collect(),
            )
        }
        "object" => {
            let mut map = Map::new();
            let required: Vec<&str> = obj
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for (k, sub) in obj
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                if required.contains(&k.as_str()) || rng.chance(2) {
                    map.insert(k.clone(), generate(sub, root, depth + 1, rng));
                }
            }
            if let Some(extra) = obj.get("additionalProperties").filter(|a| a.is_object()) {
                for i in 0..rng.below(3) {
                    map.insert(format!("key{i}"), generate(extra, root, depth + 1, rng));
                }
            }
            Value::Object(map)
        }
        _ => Value::Null,
    }
}

fn any_value(rng: &mut Rng) -> Value {
    rng.pick(&[
        json!(null),
        json!(1),
        json!("s"),
        json!([1, "a"]),
        json!({"k": {"n": 1}}),
    ])
}

/// A mutation of `value`: a key dropped or added, a leaf of the wrong kind, a wrapper.
fn mutate(value: &Value, rng: &mut Rng) -> Value {
    let mut v = value.clone();
    match rng.below(6) {
        0 => {
            if let Value::Object(m) = &mut v
                && let Some(k) = m.keys().next().cloned()
            {
                m.remove(&k);
            }
        }
        1 => {
            if let Value::Object(m) = &mut v {
                m.insert("unexpected".into(), json!(1));
            }
        }
        2 => replace_leaf(&mut v, rng),
        3 => v = json!([v]),
        4 => {
            if let Value::Object(m) = &mut v {
                for (_, x) in m.iter_mut() {
                    if x.is_object() {
                        if let Value::Object(inner) = x {
                            inner.insert("unexpected".into(), json!(true));
                        }
                        break;
                    }
                }
            }
        }
        _ => v = Value::String(v.to_string()),
    }
    v
}

fn replace_leaf(v: &mut Value, rng: &mut Rng) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            let i = rng.below(m.len());
            if let Some((_, x)) = m.iter_mut().nth(i) {
                replace_leaf(x, rng);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            let i = rng.below(a.len());
            replace_leaf(&mut a[i], rng);
        }
        _ => {
            *v = rng.pick(&[
                json!(null),
                json!("5"),
                json!(5),
                json!(1.0),
                json!([]),
                json!({}),
                json!(true),
            ])
        }
    }
}

#[test]
fn validator_and_serde_agree_on_generated_and_mutated_arguments() {
    let mut disagreements = Vec::new();
    let mut accepted = 0;
    let mut total = 0;
    for (n, case) in corpus::corpus().into_iter().enumerate() {
        let validator = ArgValidator::new(&case.schema);
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (n as u64 + 1));
        let before = accepted;
        for _ in 0..400 {
            let args = generate(&case.schema, &case.schema, 0, &mut rng);
            total += 1;
            if compare(&case, &validator, &args, &mut disagreements) {
                accepted += 1;
            }
            let mutated = mutate(&args, &mut rng);
            total += 1;
            if compare(&case, &validator, &mutated, &mut disagreements) {
                accepted += 1;
            }
        }
        assert!(
            accepted > before,
            "{}: no generated argument set fits",
            case.name
        );
    }
    report(&disagreements);
    assert!(
        accepted > total / 10,
        "the generator produces valid arguments too ({accepted}/{total})"
    );
    assert!(
        accepted < total * 9 / 10,
        "and invalid ones ({accepted}/{total})"
    );
}

#[test]
fn validator_and_serde_agree_on_hand_written_edge_cases() {
    let sets: &[(&str, Value, bool)] = &[
        (
            "Integers",
            json!({"i8": 1, "i16": 1, "i32": 1, "i64": 1, "u8": 1, "u16": 1, "u32": 1,
                            "u64": u64::MAX, "usize": 1, "isize": -1}),
            true,
        ),
        (
            "Integers",
            json!({"i8": 1, "i16": 1, "i32": 1, "i64": 1, "u8": 1.0, "u16": 1, "u32": 1,
                            "u64": 1, "usize": 1, "isize": -1}),
            true,
        ),
        (
            "Integers",
            json!({"i8": 1, "i16": 1, "i32": 1, "i64": 1, "u8": 1.5, "u16": 1, "u32": 1,
                            "u64": 1, "usize": 1, "isize": -1}),
            false,
        ),
        (
            "Integers",
            json!({"i8": 1, "i16": 1, "i32": 1, "i64": 1, "u8": "1", "u16": 1, "u32": 1,
                            "u64": 1, "usize": 1, "isize": -1}),
            false,
        ),
        (
            "Integers",
            json!({"i8": 1, "i16": 1, "i32": 1, "i64": 1, "u8": 256.0, "u16": 1, "u32": 1,
                            "u64": 1, "usize": 1, "isize": -1}),
            false,
        ),
        ("Optionals", json!({"name": "a", "limit": 5.0}), true),
        (
            "Optionals",
            json!({"name": "a", "origin": {"x": 1, "y": 2, "deep": {"z": 1}}}),
            false,
        ),
        (
            "Nested",
            json!({"start": {"x": 1, "y": 2}, "inner": {"depth": 1, "leaf": {"value": "v", "typo": 1}}}),
            false,
        ),
        (
            "Maps",
            json!({"counts": {"a": 1.0}, "places": {"home": {"x": 1, "y": 2, "z": 0}}}),
            false,
        ),
        (
            "Bounds",
            json!({"level": 0, "name": "n", "slug": "s"}),
            false,
        ),
        (
            "Bounds",
            json!({"level": 5, "name": "", "slug": "s"}),
            false,
        ),
        (
            "Bounds",
            json!({"level": 5, "name": "n", "slug": "S"}),
            false,
        ),
        (
            "Bounds",
            json!({"level": 5.0, "name": "n", "slug": "s"}),
            true,
        ),
        (
            "Bounds",
            json!({"level": 5, "name": "n", "slug": "s", "other": 1}),
            false,
        ),
        (
            "Integers",
            json!({"i8": 1, "i16": 1, "i32": 2_147_483_648_i64, "i64": 1, "u8": 1,
                            "u16": 1, "u32": 1, "u64": 1, "usize": 1, "isize": -1}),
            false,
        ),
        (
            "Primitives",
            json!({"flag": true, "text": "", "letter": "é", "single": 1, "double": 1e300}),
            true,
        ),
        (
            "Primitives",
            json!({"flag": true, "text": "", "letter": "ab", "single": 1, "double": 1}),
            false,
        ),
        (
            "Optionals",
            json!({"name": "a", "limit": null, "origin": {"x": 1, "y": 2}}),
            true,
        ),
        (
            "Optionals",
            json!({"name": "a", "origin": {"x": 1, "y": 2, "z": 3}}),
            false,
        ),
        ("Optionals", json!({"name": "a", "nmae": "typo"}), false),
        ("External", json!({"shape": "Empty"}), true),
        ("External", json!({"shape": {"Empty": null}}), false),
        (
            "External",
            json!({"shape": {"Circle": {"radius": 1}}}),
            true,
        ),
        (
            "External",
            json!({"shape": {"Circle": {"radius": 1}, "Square": 2}}),
            false,
        ),
        (
            "Internal",
            json!({"command": {"kind": "say", "text": "hi"}}),
            true,
        ),
        (
            "Internal",
            json!({"command": {"kind": "stop", "now": true}}),
            false,
        ),
        ("Adjacent", json!({"event": {"t": "Quit"}}), true),
        (
            "Adjacent",
            json!({"event": {"t": "Quit", "c": null}}),
            false,
        ),
        (
            "Adjacent",
            json!({"event": {"t": "Key", "c": {"code": 13}}}),
            true,
        ),
        (
            "Flattened",
            json!({"query": "q", "size": 10, "offset": null}),
            true,
        ),
        (
            "Flattened",
            json!({"query": "q", "size": 10, "paging": {}}),
            false,
        ),
        ("Defaults", json!({"url": "u"}), true),
        ("Defaults", json!({"url": "u", "retries": null}), false),
        ("Strict", json!({"id": "x", "other": 1}), false),
        ("Skipped", json!({"kept": "k", "cache": "c"}), false),
        ("Empty", json!({}), true),
        ("Empty", json!([]), false),
        (
            "Nested",
            json!({"start": [1, 2], "inner": {"depth": 1, "leaf": {"value": "v"}}}),
            false,
        ),
        (
            "Tree",
            json!({"value": 1, "children": [{"value": 2, "children": []}]}),
            true,
        ),
        (
            "Tree",
            json!({"value": 1, "children": [{"value": 2}]}),
            false,
        ),
        (
            "Calc",
            json!({"expr": {"op": "add", "left": {"op": "num", "value": 1},
                                 "right": {"op": "num", "value": 2}}}),
            true,
        ),
        ("AnyJson", json!({"payload": null}), true),
        ("AnyJson", json!({}), false),
        (
            "Bounds",
            json!({"level": 11, "name": "n", "slug": "s"}),
            false,
        ),
        (
            "Bounds",
            json!({"level": 10, "name": "n", "slug": "s"}),
            true,
        ),
        (
            "Command",
            json!({"kind": "move", "to": {"x": 1, "y": 1}}),
            true,
        ),
        (
            "CamelCase",
            json!({"file_path": "p", "follow_links": true}),
            false,
        ),
        (
            "KebabStrict",
            json!({"dry-run": true, "out-dir": null}),
            true,
        ),
        ("RenamedVariants", json!({"level": "Debug"}), false),
        (
            "Maps",
            json!({"counts": {"a": 1}, "places": {"home": {"x": 1, "y": 2}}}),
            true,
        ),
        ("Maps", json!({"counts": {"a": "1"}, "places": {}}), false),
        (
            "FlattenedEnum",
            json!({"id": "a", "kind": "say", "text": "t"}),
            true,
        ),
        (
            "FlattenedEnum",
            json!({"id": "a", "kind": "stop", "extra": 1}),
            false,
        ),
        ("Tupled", json!({"pair": ["a", 1]}), true),
        ("Tupled", json!({"pair": ["a", 1.5]}), false),
    ];
    let corpus = corpus::corpus();
    let mut disagreements = Vec::new();
    for (name, args, expected) in sets {
        let case = corpus.iter().find(|c| c.name == *name).unwrap();
        let validator = ArgValidator::new(&case.schema);
        let verdict = compare(case, &validator, args, &mut disagreements);
        assert_eq!(
            verdict,
            *expected,
            "{name} {args}: {:?}",
            validator.problems(args)
        );
    }
    report(&disagreements);
}
