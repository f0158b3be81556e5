//! The named parameters of a `#[tool]` function, read by one generic type instead of a struct
//! derived for each function: [`Params<N, T>`] holds the values as a tuple `T`, and `N` (a
//! unit struct the macro makes, with a [`ParamNames`] impl) says their names and doc comments.
//!
//! The reading and the schema are the ones `#[derive(Deserialize, JsonSchema)]` with
//! `#[serde(deny_unknown_fields)]` gives a struct of those fields (the differential tests in
//! `tests/it/params.rs` compare both): an object whose keys are the names, each value read
//! as its parameter's type; a missing `Option` parameter is `None`, any other missing one is
//! `missing field`; an unknown key is `unknown field`; a key twice is `duplicate field`. An
//! array is read by position, as serde reads a struct from one. The schema is an object with
//! one property per parameter (its type's schema, with the title and description of its doc
//! comment), `required` for the parameters that are not `Option`, and no other property.
//!
//! Only the code that reads these tuples is generic, so it is compiled once per tuple shape
//! that a crate uses, not once per function. A lone parameter is read by `LoneInput`, whose
//! only code generic in the parameter's type is that type's own deserialisation and schema.
//! Not for use outside generated code.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserialize, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::tools::handler::{HandlerError, ReadInput, ToolInput, read_input};
use crate::tools::result::JsonObject;

/// What the macro says about one function's parameters.
pub trait ParamNames: Send + 'static {
    /// The name of the input in errors and schemas (`__GoondanInput_{function}`).
    const NAME: &'static str;
    /// The parameters' names, in order.
    const NAMES: &'static [&'static str];
    /// Each parameter's title and description from its doc comment (`""` for none).
    const DOCS: &'static [(&'static str, &'static str)];
}

/// The named parameters of one function: `.0` is the tuple of their values, in order.
pub struct Params<N, T>(pub T, PhantomData<fn() -> N>);

impl<N, T> Params<N, T> {
    fn new(values: T) -> Self {
        Self(values, PhantomData)
    }
}

/// How the lone parameter of a function with no attributes on it is read: its type is the
/// whole input when its schema is an object with properties (or a closed object), and
/// otherwise the one property of an object, named after the parameter. The export decides
/// which when it is built (see `lone_input` in `tools/tool/export.rs`), and the handler reads the arguments
/// object directly: the property's key is found by code compiled once, so the only reading
/// generic in the type is the type's own, the one the whole reading uses too. Errors are the
/// ones [`Params`] gives for a one-parameter tuple, word for word (`tests/it/params.rs`).
pub(crate) struct LoneInput {
    /// The parameter's name, alone in its slice (as `ParamNames::NAMES`), or `None` when the
    /// type is the whole input.
    named: Option<&'static [&'static str]>,
}

impl LoneInput {
    /// The type is the whole input.
    pub(crate) fn whole() -> Self {
        Self { named: None }
    }

    /// The type is the one property named `names[0]` (a function's `ParamNames::NAMES`).
    pub(crate) fn named(names: &'static [&'static str]) -> Self {
        Self { named: Some(names) }
    }
}

impl<T: ToolInput> ReadInput<T> for LoneInput {
    fn read(&self, args: JsonObject) -> Result<T, HandlerError> {
        match self.named {
            None => read_input(args),
            Some(names) => read_lone(args, names).map_err(|err| HandlerError::InvalidArgs {
                reason: err.to_string(),
            }),
        }
    }
}

/// The value of the one property `names[0]`, read as `T`.
fn read_lone<T: DeserializeOwned + JsonSchema>(
    args: JsonObject,
    names: &'static [&'static str],
) -> Result<T, serde_json::Error> {
    let (value, after) = take_lone(args, names)?;
    let value = match value {
        Some(value) => T::deserialize(value)?,
        None => missing(lone_key(names))?,
    };
    match after {
        Some(err) => Err(err),
        None => Ok(value),
    }
}

/// The one parameter's name (`ParamNames::NAMES` of a lone parameter holds exactly one).
fn lone_key(names: &'static [&'static str]) -> &'static str {
    names.first().copied().unwrap_or_default()
}

/// The property's value if there is one, and the error of an unknown key after it.
type Taken = (Option<Value>, Option<serde_json::Error>);

/// The value of the one property `names[0]` taken out of `args`, in the order a map is read:
/// an unknown key before it is the error; an unknown key after it is one too, but only once
/// the value itself was read without error, so it is returned beside the value.
fn take_lone(args: JsonObject, names: &'static [&'static str]) -> Result<Taken, serde_json::Error> {
    let key = lone_key(names);
    let mut found = None;
    for (k, v) in args {
        if k == key {
            found = Some(v);
        } else {
            let err = <serde_json::Error as de::Error>::unknown_field(&k, names);
            return match found {
                None => Err(err),
                Some(value) => Ok((Some(value), Some(err))),
            };
        }
    }
    Ok((found, None))
}

/// The root schema of a lone parameter read as the one property of an object: what
/// `into_root_schema_for::<Params<N, (T,)>>()` makes, with only the parameter's subschema
/// generic in its type (schemars' `subschema_for`), the rest compiled once in
/// [`lone_root_with`].
pub(crate) fn lone_root<N: ParamNames, T: JsonSchema>(generator: SchemaGenerator) -> Value {
    lone_root_with(
        generator,
        N::NAME,
        N::NAMES,
        N::DOCS,
        SchemaGenerator::subschema_for::<T>,
        T::_schemars_private_is_option(),
    )
}

fn lone_root_with(
    mut generator: SchemaGenerator,
    name: &'static str,
    names: &'static [&'static str],
    docs: &'static [(&'static str, &'static str)],
    subschema: fn(&mut SchemaGenerator) -> Schema,
    is_option: bool,
) -> Value {
    let optional = generator.contract().is_deserialize() && is_option;
    let key = lone_key(names);
    let doc = docs.first().copied().unwrap_or_default();
    let property = with_doc(subschema(&mut generator), doc);
    let mut schema = object(vec![(key, property, optional)]);
    // As `into_root_schema_for` finishes a root: its name as the title, the definitions the
    // subschema needed (a recursive type) under `$defs`. The settings have no transforms
    // and no meta-schema (`tools::schema`).
    schema.insert("title".to_owned(), Value::from(name));
    let definitions = generator.take_definitions(false);
    if !definitions.is_empty() {
        schema.insert("$defs".to_owned(), Value::Object(definitions));
    }
    schema.to_value()
}

/// A value for a parameter the model left out: `None` for an `Option` (read from `null`, the
/// reading every parameter type already has), `missing field` otherwise, as serde's derive
/// does. Whether a type is an `Option` is schemars' own test, the one that also leaves the
/// parameter out of `required`.
fn missing<T: DeserializeOwned + JsonSchema, E: de::Error>(name: &'static str) -> Result<T, E> {
    if T::_schemars_private_is_option() {
        T::deserialize(Value::Null).map_err(E::custom)
    } else {
        Err(E::missing_field(name))
    }
}

/// Where a key is among the names.
fn position<E: de::Error>(names: &'static [&'static str], key: &str) -> Result<usize, E> {
    names
        .iter()
        .position(|n| *n == key)
        .ok_or_else(|| E::unknown_field(key, names))
}

/// The schema of one parameter: its type's, with its doc comment's title and description.
fn property<T: JsonSchema>(generator: &mut SchemaGenerator, doc: (&str, &str)) -> Schema {
    with_doc(generator.subschema_for::<T>(), doc)
}

/// `schema` with a parameter's doc comment as its title and description.
fn with_doc(mut schema: Schema, doc: (&str, &str)) -> Schema {
    for (key, text) in [("title", doc.0), ("description", doc.1)] {
        if !text.is_empty() {
            schema.insert(key.to_owned(), Value::from(text));
        }
    }
    schema
}

/// The object schema of `properties`, in order; `optional[i]` leaves property `i` out of
/// `required`.
fn object(properties: Vec<(&'static str, Schema, bool)>) -> Schema {
    let mut schema = json_schema!({"type": "object", "additionalProperties": false});
    let mut props = serde_json::Map::new();
    let mut required = Vec::new();
    for (name, sub, optional) in properties {
        props.insert(name.to_owned(), sub.to_value());
        if !optional {
            required.push(Value::from(name));
        }
    }
    schema.insert("properties".to_owned(), Value::Object(props));
    if !required.is_empty() {
        schema.insert("required".to_owned(), Value::Array(required));
    }
    schema
}

/// A tuple of parameter values: how it is read from an object or an array, and its schema.
/// The work is here, generic over the tuple's types only, so one function with the
/// parameters `(String, Option<u32>)` and another with the same types share this code.
pub trait ParamTuple: Sized + Send + 'static {
    /// How many parameters.
    const LEN: usize;

    /// Reads the values of an object whose keys are `names`.
    fn read_map<'de, A: MapAccess<'de>>(
        map: A,
        names: &'static [&'static str],
    ) -> Result<Self, A::Error>;

    /// Reads the values from an array, by position; `expected` names the input for errors.
    fn read_seq<'de, A: SeqAccess<'de>>(seq: A, expected: &str) -> Result<Self, A::Error>;

    /// The object schema of parameters named `names`, with their doc comments `docs`.
    fn schema(
        generator: &mut SchemaGenerator,
        names: &'static [&'static str],
        docs: &'static [(&'static str, &'static str)],
    ) -> Schema;
}

impl<'de, N: ParamNames, T: ParamTuple> Deserialize<'de> for Params<N, T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Reader<N, T>(PhantomData<fn() -> (N, T)>);
        impl<'de, N: ParamNames, T: ParamTuple> Visitor<'de> for Reader<N, T> {
            type Value = Params<N, T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "struct {}", N::NAME)
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                let expected = format!("struct {} with {} elements", N::NAME, T::LEN);
                T::read_seq(seq, &expected).map(Params::new)
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::read_map(map, N::NAMES).map(Params::new)
            }
        }
        deserializer.deserialize_struct(N::NAME, N::NAMES, Reader::<N, T>(PhantomData))
    }
}

impl<N: ParamNames, T: ParamTuple> JsonSchema for Params<N, T> {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed(N::NAME)
    }

    fn schema_id() -> Cow<'static, str> {
        Cow::Owned(std::any::type_name::<Self>().to_owned())
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::schema(generator, N::NAMES, N::DOCS)
    }
}

// Tuples of 1 to 12 parameters; `#[tool]` derives a struct for a function with more (its
// `MAX_PARAMS` says 12 too).
macro_rules! tuple {
    ($len:literal => $($t:ident $v:ident $i:tt),+) => {
        impl<$($t: DeserializeOwned + JsonSchema + Send + 'static),+> ParamTuple for ($($t,)+) {
            const LEN: usize = $len;

            fn read_map<'de, A: MapAccess<'de>>(
                mut map: A,
                names: &'static [&'static str],
            ) -> Result<Self, A::Error> {
                $(let mut $v: Option<$t> = None;)+
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match position::<A::Error>(names, &key)? {
                        $(
                            $i => {
                                if $v.is_some() {
                                    return Err(de::Error::duplicate_field(names[$i]));
                                }
                                $v = Some(map.next_value()?);
                            }
                        )+
                        _ => {
                            map.next_value::<de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(($(
                    match $v {
                        Some(value) => value,
                        None => missing(names[$i])?,
                    },
                )+))
            }

            fn read_seq<'de, A: SeqAccess<'de>>(mut seq: A, expected: &str) -> Result<Self, A::Error> {
                Ok(($(
                    match seq.next_element::<$t>()? {
                        Some(value) => value,
                        None => return Err(de::Error::invalid_length($i, &expected)),
                    },
                )+))
            }

            fn schema(
                generator: &mut SchemaGenerator,
                names: &'static [&'static str],
                docs: &'static [(&'static str, &'static str)],
            ) -> Schema {
                let optional = generator.contract().is_deserialize();
                object(vec![$(
                    (
                        names[$i],
                        property::<$t>(generator, docs[$i]),
                        optional && $t::_schemars_private_is_option(),
                    ),
                )+])
            }
        }
    };
}

tuple!(1 => A0 a0 0);
tuple!(2 => A0 a0 0, A1 a1 1);
tuple!(3 => A0 a0 0, A1 a1 1, A2 a2 2);
tuple!(4 => A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3);
tuple!(5 => A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4);
tuple!(6 => A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5);
tuple!(7 => A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5, A6 a6 6);
tuple!(8 => A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5, A6 a6 6, A7 a7 7);
tuple!(9 => A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5, A6 a6 6, A7 a7 7, A8 a8 8);
tuple!(10 => A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5, A6 a6 6, A7 a7 7, A8 a8 8,
    A9 a9 9);
tuple!(11 => A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5, A6 a6 6, A7 a7 7, A8 a8 8,
    A9 a9 9, A10 a10 10);
tuple!(12 => A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5, A6 a6 6, A7 a7 7, A8 a8 8,
    A9 a9 9, A10 a10 10, A11 a11 11);

#[cfg(test)]
mod tests {
    use std::any::TypeId;
    use std::collections::BTreeMap;

    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use crate::tools::schema::{cached_schema, schema_for};

    /// The names of a function `f(slug)`.
    struct F;
    impl ParamNames for F {
        const NAME: &'static str = "__GoondanInput_f";
        const NAMES: &'static [&'static str] = &["slug"];
        const DOCS: &'static [(&'static str, &'static str)] = &[("Slug", "The page's slug.")];
    }

    /// A recursive type: its subschema needs `$defs`.
    #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
    struct Tree {
        label: String,
        children: Vec<Tree>,
    }

    /// The plain route `LoneInput` replaces for a named lone parameter: `Params` of a
    /// one-element tuple, read from the arguments as a `Value`.
    fn plain<T: ToolInput>(args: &JsonObject) -> Result<T, String> {
        Params::<F, (T,)>::deserialize(Value::Object(args.clone()))
            .map(|params| params.0.0)
            .map_err(|err| err.to_string())
    }

    fn lone<T: ToolInput>(args: &JsonObject) -> Result<T, String> {
        match ReadInput::<T>::read(&LoneInput::named(F::NAMES), args.clone()) {
            Ok(value) => Ok(value),
            Err(HandlerError::InvalidArgs { reason }) => Err(reason),
            Err(_) => Err("not an argument error".to_owned()),
        }
    }

    /// Arguments objects, each in the key order written (the maps keep it).
    fn inputs() -> Vec<JsonObject> {
        let values = [
            json!("a"),
            json!(1),
            json!(null),
            json!([]),
            json!(["x", "y"]),
            json!({}),
            json!({"a": 1}),
            json!({"label": "t", "children": []}),
            json!({"label": "t", "children": [{"label": "u", "children": []}]}),
            json!([{"label": "t", "children": []}]),
            json!([{"label": 1}]),
            json!(4_294_967_296_u64),
        ];
        let mut inputs = vec![JsonObject::new()];
        for value in values {
            for (before, after) in [(None, None), (Some("x"), None), (None, Some("y"))] {
                let mut args = JsonObject::new();
                if let Some(k) = before {
                    args.insert(k.to_owned(), json!(true));
                }
                args.insert("slug".to_owned(), value.clone());
                if let Some(k) = after {
                    args.insert(k.to_owned(), json!(false));
                }
                inputs.push(args);
            }
        }
        let mut two = JsonObject::new();
        two.insert("x".to_owned(), json!(1));
        two.insert("y".to_owned(), json!(2));
        inputs.push(two);
        inputs
    }

    fn reads_alike<T: ToolInput + PartialEq + std::fmt::Debug>() -> usize {
        let mut errors = 0;
        for args in inputs() {
            let (lone, plain) = (lone::<T>(&args), plain::<T>(&args));
            assert_eq!(lone, plain, "{} from {args:?}", std::any::type_name::<T>());
            errors += usize::from(plain.is_err());
        }
        errors
    }

    #[test]
    fn a_lone_property_reads_like_the_one_parameter_tuple_values_and_errors() {
        // Each type meets values it takes and values it refuses, unknown keys before and after
        // the property (the order decides which error comes first), and no property at all.
        let refused = [
            reads_alike::<String>(),
            reads_alike::<Option<u32>>(),
            reads_alike::<Vec<String>>(),
            reads_alike::<BTreeMap<String, u32>>(),
            reads_alike::<Tree>(),
            reads_alike::<Vec<Tree>>(),
            reads_alike::<Value>(),
            reads_alike::<Option<Value>>(),
        ];
        // The inputs are not all refused, nor all taken, for any type.
        let total = inputs().len();
        assert!(refused.iter().all(|&n| n > 0 && n < total), "{refused:?}");
    }

    fn schemas_alike<T: ToolInput>() {
        let lone = cached_schema(TypeId::of::<(F, T)>(), lone_root::<F, T>);
        let plain = schema_for::<Params<F, (T,)>>();
        assert_eq!(lone, plain, "{}", std::any::type_name::<T>());
    }

    #[test]
    fn a_lone_property_schema_is_the_one_parameter_tuples() {
        schemas_alike::<String>();
        schemas_alike::<Option<u32>>();
        schemas_alike::<BTreeMap<String, u32>>();
        schemas_alike::<Tree>();
        schemas_alike::<Vec<Tree>>();
        schemas_alike::<Option<Vec<Tree>>>();
        schemas_alike::<Value>();
        let tree = schema_for::<Params<F, (Vec<Tree>,)>>();
        assert!(
            tree.get("$defs").is_some(),
            "a recursive type keeps its $defs: {tree}"
        );
        assert_eq!(tree["properties"]["slug"]["title"], "Slug");
    }
}
