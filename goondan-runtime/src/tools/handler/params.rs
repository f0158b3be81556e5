//! The named parameters of a `#[tool]` function, read from the arguments object by one plain
//! function per tuple shape instead of a struct derived for each function: the handler's input
//! is the tuple of the values, in parameter order, and a unit struct the macro makes (with a
//! [`ParamNames`] impl) says their names and doc comments. A lone parameter that is not the
//! whole input is the one-element case of the same reading (`LoneInput`).
//!
//! The reading is the one `#[derive(Deserialize)]` with `#[serde(deny_unknown_fields)]` gives
//! a struct of those fields, read from an object: the keys in the object's order, each value
//! read as its parameter's type; an unknown key is `unknown field`; then a missing `Option`
//! parameter is `None`, any other missing one `missing field`. The schema is the one
//! `#[derive(JsonSchema)]` gives it: an object with one property per parameter (its type's
//! schema, with the title and description of its doc comment), `required` for the parameters
//! that are not `Option`, and no other property.
//!
//! The code generic in the tuple is this reading and this schema only, so it is compiled once
//! per tuple shape that a crate uses, not once per function. Not for use outside generated
//! code.

use std::any::TypeId;
use std::sync::Arc;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{DeserializeOwned, Error as _};
use serde_json::Value;

use crate::tools::handler::{HandlerError, ReadInput, ToolInput, read_input};
use crate::tools::result::JsonObject;
use crate::tools::schema::cached_schema;

/// What the macro says about one function's parameters.
pub trait ParamNames: Send + 'static {
    /// The parameters' names, in order.
    const NAMES: &'static [&'static str];
    /// Each parameter's title and description from its doc comment (`""` for none).
    const DOCS: &'static [(&'static str, &'static str)];
}

/// A tuple of parameter values: how it is read from an arguments object, and its schema. The
/// tuple is the handler's input, so it is a [`ToolInput`] (its own serde and schemars impls, an
/// array, are never used). That is a supertrait rather than a second bound where it is used, so
/// that a parameter type that cannot be an input is reported once, on that type (by
/// `InputType`), not again for the tuple.
pub trait ParamTuple: ToolInput {
    /// Reads the values of an object whose keys are `names`, in order.
    fn read(args: JsonObject, names: &'static [&'static str]) -> Result<Self, serde_json::Error>;

    /// The object schema of parameters named `names`, with their doc comments `docs`.
    fn schema(
        generator: &mut SchemaGenerator,
        names: &'static [&'static str],
        docs: &'static [(&'static str, &'static str)],
    ) -> Schema;
}

/// Reads named parameters (a function's `ParamNames::NAMES`) as the tuple `T`, the handler's
/// input, by [`ParamTuple::read`]. Not generic in the names, so functions with the same
/// parameter types share the reading.
pub(crate) struct NamedInput(pub(crate) &'static [&'static str]);

impl<T: ParamTuple> ReadInput<T> for NamedInput {
    fn read(&self, args: JsonObject) -> Result<T, HandlerError> {
        // A `match`, not `map_err`: no instance of the combinator for each tuple type.
        match T::read(args, self.0) {
            Ok(values) => Ok(values),
            Err(err) => Err(invalid_args(err)),
        }
    }
}

/// The schema of the named parameters `N` names, of types `T`: the root of
/// [`ParamTuple::schema`], cached as [`schema_for`](crate::tools::schema::schema_for) caches a
/// type's.
pub(crate) fn named_schema<N: ParamNames, T: ParamTuple>() -> Arc<Value> {
    cached_schema(TypeId::of::<(N, T)>(), named_root::<N, T>)
}

fn named_root<N: ParamNames, T: ParamTuple>(generator: SchemaGenerator) -> Value {
    root(generator, N::NAMES, N::DOCS, T::schema)
}

/// The signature of [`ParamTuple::schema`].
type TupleSchema = fn(
    &mut SchemaGenerator,
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
) -> Schema;

/// A root schema, as `into_root_schema_for` finishes one: the definitions the properties
/// needed (a recursive type) under `$defs`. The settings have no transforms and no
/// meta-schema, and the root's title is dropped (`tools::schema`), so there is no more to do.
fn root(
    mut generator: SchemaGenerator,
    names: &'static [&'static str],
    docs: &'static [(&'static str, &'static str)],
    schema: TupleSchema,
) -> Value {
    let mut root = schema(&mut generator, names, docs);
    let definitions = generator.take_definitions(false);
    if !definitions.is_empty() {
        root.insert("$defs".to_owned(), Value::Object(definitions));
    }
    root.to_value()
}

/// How a lone parameter is read: as the whole input, or as the one property named after it
/// (the one-parameter tuple's reading). Which one is decided when the export is built, in one
/// place (`lone_input` in `tools/tool/export.rs`).
pub(crate) enum LoneInput {
    /// The type is the whole input.
    Whole,
    /// The type is the one property named `names[0]` (a function's `ParamNames::NAMES`).
    Named(&'static [&'static str]),
}

impl<T: ToolInput> ReadInput<T> for LoneInput {
    fn read(&self, args: JsonObject) -> Result<T, HandlerError> {
        match self {
            LoneInput::Whole => read_input(args),
            // As in `NamedInput`, a `match` rather than combinators.
            LoneInput::Named(names) => match <(T,)>::read(args, names) {
                Ok((value,)) => Ok(value),
                Err(err) => Err(invalid_args(err)),
            },
        }
    }
}

fn invalid_args(err: serde_json::Error) -> HandlerError {
    HandlerError::InvalidArgs {
        reason: err.to_string(),
    }
}

/// A value for a parameter the model left out: `None` for an `Option` (read from `null`, the
/// reading every parameter type already has), `missing field` otherwise, as serde's derive
/// does. Whether a type is an `Option` is schemars' own test, the one that also leaves the
/// parameter out of `required`.
fn missing<T: DeserializeOwned + JsonSchema>(name: &'static str) -> Result<T, serde_json::Error> {
    if T::_schemars_private_is_option() {
        T::deserialize(Value::Null)
    } else {
        Err(serde_json::Error::missing_field(name))
    }
}

/// Where a key is among the names, or serde's `unknown field` error.
fn position(names: &'static [&'static str], key: &str) -> Result<usize, serde_json::Error> {
    names
        .iter()
        .position(|n| *n == key)
        .ok_or_else(|| serde_json::Error::unknown_field(key, names))
}

/// How one parameter's schema is made: its type's subschema (schemars' `subschema_for`), and
/// whether the type is an `Option` (schemars' own test, the one its derive uses too).
type Property = (fn(&mut SchemaGenerator) -> Schema, bool);

/// The object schema of the parameters `names`, in order: each property its type's subschema
/// with the title and description of its doc comment (`docs`), `required` the parameters that
/// are not `Option`. Compiled once: a tuple gives only its types' `properties`.
fn object(
    generator: &mut SchemaGenerator,
    names: &'static [&'static str],
    docs: &'static [(&'static str, &'static str)],
    properties: &[Property],
) -> Schema {
    let optional = generator.contract().is_deserialize();
    let mut props = serde_json::Map::new();
    let mut required = Vec::new();
    for ((name, (title, description)), (subschema, is_option)) in
        names.iter().zip(docs).zip(properties)
    {
        let mut property = subschema(generator);
        for (key, text) in [("title", title), ("description", description)] {
            if !text.is_empty() {
                property.insert(key.to_owned(), Value::from(*text));
            }
        }
        props.insert((*name).to_owned(), property.to_value());
        if !(optional && *is_option) {
            required.push(Value::from(*name));
        }
    }
    let mut schema = json_schema!({"type": "object", "additionalProperties": false});
    schema.insert("properties".to_owned(), Value::Object(props));
    if !required.is_empty() {
        schema.insert("required".to_owned(), Value::Array(required));
    }
    schema
}

// Tuples of 1 to 12 parameters; `#[tool]` derives a struct for a function with more (its
// `MAX_PARAMS` says 12 too).
macro_rules! tuple {
    ($($t:ident $v:ident $i:tt),+) => {
        impl<$($t: DeserializeOwned + JsonSchema + Send + 'static),+> ParamTuple for ($($t,)+) {
            fn read(
                args: JsonObject,
                names: &'static [&'static str],
            ) -> Result<Self, serde_json::Error> {
                $(let mut $v: Option<$t> = None;)+
                for (key, value) in args {
                    match position(names, &key)? {
                        $($i => $v = Some($t::deserialize(value)?),)+
                        _ => {}
                    }
                }
                Ok(($(
                    match $v {
                        Some(value) => value,
                        None => missing(names[$i])?,
                    },
                )+))
            }

            fn schema(
                generator: &mut SchemaGenerator,
                names: &'static [&'static str],
                docs: &'static [(&'static str, &'static str)],
            ) -> Schema {
                object(generator, names, docs, &[$(
                    (SchemaGenerator::subschema_for::<$t>, $t::_schemars_private_is_option()),
                )+])
            }
        }
    };
}

tuple!(A0 a0 0);
tuple!(A0 a0 0, A1 a1 1);
tuple!(A0 a0 0, A1 a1 1, A2 a2 2);
tuple!(A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3);
tuple!(A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4);
tuple!(A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5);
tuple!(A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5, A6 a6 6);
tuple!(A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5, A6 a6 6, A7 a7 7);
tuple!(A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5, A6 a6 6, A7 a7 7, A8 a8 8);
tuple!(A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5, A6 a6 6, A7 a7 7, A8 a8 8,
    A9 a9 9);
tuple!(A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5, A6 a6 6, A7 a7 7, A8 a8 8,
    A9 a9 9, A10 a10 10);
tuple!(A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5, A6 a6 6, A7 a7 7, A8 a8 8,
    A9 a9 9, A10 a10 10, A11 a11 11);

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    /// The names of a function `f(text, times, tree)`.
    struct F;
    impl ParamNames for F {
        const NAMES: &'static [&'static str] = &["text", "times", "tree"];
        const DOCS: &'static [(&'static str, &'static str)] =
            &[("", "The text."), ("", ""), ("Tree", "A tree.")];
    }

    /// The names of a function `g(slug)`.
    struct G;
    impl ParamNames for G {
        const NAMES: &'static [&'static str] = &["slug"];
        const DOCS: &'static [(&'static str, &'static str)] = &[("", "")];
    }

    /// A recursive type: its subschema needs `$defs`.
    #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
    struct Tree {
        label: String,
        children: Vec<Tree>,
    }

    type Three = (String, Option<u32>, Tree);

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    fn read<T: ParamTuple>(names: &'static [&'static str], args: Value) -> Result<T, String> {
        T::read(object(args), names).map_err(|err| err.to_string())
    }

    fn leaf(label: &str) -> Tree {
        Tree {
            label: label.to_owned(),
            children: Vec::new(),
        }
    }

    #[test]
    fn each_value_is_read_as_its_parameters_type_in_any_order() {
        let tree = json!({"label": "t", "children": []});
        assert_eq!(
            read::<Three>(F::NAMES, json!({"text": "a", "times": 2, "tree": tree})),
            Ok(("a".to_owned(), Some(2), leaf("t")))
        );
        assert_eq!(
            read::<Three>(F::NAMES, json!({"tree": tree, "text": "a"})),
            Ok(("a".to_owned(), None, leaf("t")))
        );
        assert_eq!(
            read::<Three>(F::NAMES, json!({"text": "a", "times": null, "tree": tree})),
            Ok(("a".to_owned(), None, leaf("t")))
        );
        assert_eq!(read::<(Option<Value>,)>(G::NAMES, json!({})), Ok((None,)));
        assert_eq!(
            read::<(Value,)>(G::NAMES, json!({"slug": null})),
            Ok((Value::Null,))
        );
    }

    #[test]
    fn refusals_are_serdes_words_for_the_first_wrong_key() {
        let tree = json!({"label": "t", "children": []});
        let cases = [
            (json!({}), "missing field `text`"),
            (json!({"text": "a"}), "missing field `tree`"),
            (
                json!({"text": "a", "tree": tree, "x": 1}),
                "unknown field `x`, expected one of `text`, `times`, `tree`",
            ),
            (
                json!({"x": 1, "text": 5}),
                "unknown field `x`, expected one of `text`, `times`, `tree`",
            ),
            (
                json!({"text": 5, "x": 1}),
                "invalid type: integer `5`, expected a string",
            ),
            (
                json!({"text": "a", "times": 4_294_967_296_u64, "tree": tree}),
                "invalid value: integer `4294967296`, expected u32",
            ),
            (
                json!({"text": "a", "tree": {"label": "t", "children": [{"label": 1}]}}),
                "invalid type: integer `1`, expected a string",
            ),
        ];
        for (args, error) in cases {
            assert_eq!(
                read::<Three>(F::NAMES, args.clone()),
                Err(error.to_owned()),
                "{args}"
            );
        }
        // One parameter: the lone property's reading.
        let lone = [
            (json!({}), "missing field `slug`"),
            (json!({"x": true}), "unknown field `x`, expected `slug`"),
            (
                json!({"slug": "s", "y": 1}),
                "unknown field `y`, expected `slug`",
            ),
            (
                json!({"slug": 1, "y": 1}),
                "invalid type: integer `1`, expected a string",
            ),
        ];
        for (args, error) in lone {
            assert_eq!(
                read::<(String,)>(G::NAMES, args.clone()),
                Err(error.to_owned()),
                "{args}"
            );
        }
    }

    #[test]
    fn a_lone_input_reads_the_whole_object_or_its_one_property() {
        let read =
            |input: &LoneInput, args: Value| match ReadInput::<Tree>::read(input, object(args)) {
                Ok(tree) => Ok(tree),
                Err(HandlerError::InvalidArgs { reason }) => Err(reason),
                Err(other) => panic!("{other:?}"),
            };
        let tree = json!({"label": "t", "children": []});
        assert_eq!(read(&LoneInput::Whole, tree.clone()), Ok(leaf("t")));
        assert_eq!(
            read(&LoneInput::Named(&["tree"]), json!({"tree": tree})),
            Ok(leaf("t"))
        );
        assert_eq!(
            read(&LoneInput::Named(&["tree"]), tree),
            Err("unknown field `label`, expected `tree`".to_owned())
        );
    }

    #[test]
    fn the_schema_is_an_object_of_the_parameters_with_their_docs() {
        let schema = named_schema::<F, Three>();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["required"], json!(["text", "tree"]));
        assert_eq!(
            schema["properties"]["text"],
            json!({"type": "string", "description": "The text."})
        );
        assert_eq!(schema["properties"]["tree"]["title"], "Tree");
        assert_eq!(schema["properties"]["tree"]["description"], "A tree.");
        // A recursive type refers to its definition, kept under `$defs`.
        assert!(schema["$defs"]["Tree"].is_object(), "{schema}");
        assert!(schema.get("title").is_none(), "{schema}");
        let lone = named_schema::<G, (Option<u32>,)>();
        assert_eq!(lone["properties"].as_object().map(|p| p.len()), Some(1));
        assert!(lone.get("required").is_none(), "{lone}");
    }
}
