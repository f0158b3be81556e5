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
//! that a crate uses, not once per function. Not for use outside generated code.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserialize, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// What the macro says about one function's parameters.
pub trait ParamNames: Send + 'static {
    /// The name of the input in errors and schemas (`__GoondanInput_{function}`).
    const NAME: &'static str;
    /// The parameters' names, in order.
    const NAMES: &'static [&'static str];
    /// Each parameter's title and description from its doc comment (`""` for none).
    const DOCS: &'static [(&'static str, &'static str)];

    /// For a lone parameter read as [`Lone`]: whether its type is the whole input (see
    /// `is_whole_input`), decided once per function by the macro's impl.
    fn whole_input() -> bool {
        false
    }
}

/// The named parameters of one function: `.0` is the tuple of their values, in order.
pub struct Params<N, T>(pub T, PhantomData<fn() -> N>);

impl<N, T> Params<N, T> {
    fn new(values: T) -> Self {
        Self(values, PhantomData)
    }
}

/// The input of a function with one parameter and no attributes on it: the parameter's type
/// is the whole input when its schema is an object with properties (or a closed object), and
/// otherwise the one property of an object, named after the parameter. One type for both
/// readings, so the function has one handler; `N::whole_input()` says which reading holds.
pub struct Lone<N, T>(pub T, PhantomData<fn() -> N>);

impl<'de, N: ParamNames, T: DeserializeOwned + JsonSchema + Send + 'static> Deserialize<'de>
    for Lone<N, T>
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = if N::whole_input() {
            T::deserialize(deserializer)?
        } else {
            let (value,) = Params::<N, (T,)>::deserialize(deserializer)?.0;
            value
        };
        Ok(Self(value, PhantomData))
    }
}

impl<N: ParamNames, T: JsonSchema + DeserializeOwned + Send + 'static> JsonSchema for Lone<N, T> {
    fn schema_name() -> Cow<'static, str> {
        if N::whole_input() {
            T::schema_name()
        } else {
            Cow::Borrowed(N::NAME)
        }
    }

    fn schema_id() -> Cow<'static, str> {
        if N::whole_input() {
            T::schema_id()
        } else {
            Cow::Owned(std::any::type_name::<Self>().to_owned())
        }
    }

    fn inline_schema() -> bool {
        N::whole_input() && T::inline_schema()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        if N::whole_input() {
            T::json_schema(generator)
        } else {
            <(T,) as ParamTuple>::schema(generator, N::NAMES, N::DOCS)
        }
    }
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
    let mut schema = generator.subschema_for::<T>();
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
