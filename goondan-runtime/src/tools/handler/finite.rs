//! Whether an output can be JSON: `serde_json` writes an `f64` infinity or NaN as `null`, which
//! would hand the model a silent `null`. [`check`] walks the output's `Serialize` impl once and
//! finds such a number first.

use std::fmt;

use serde::Serialize;
use serde::ser;

/// A number JSON cannot hold, with where it was.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct NotFinite(pub(crate) String);

impl ser::Error for NotFinite {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        NotFinite(msg.to_string())
    }
}

/// `Err` when `value` holds an infinite or NaN float anywhere. Errors of the value's own
/// `Serialize` impl are left to the real serialisation.
pub(crate) fn check<T: Serialize + ?Sized>(value: &T) -> Result<(), NotFinite> {
    match value.serialize(Finite) {
        Err(NotFinite(what)) if what.starts_with(MARK) => {
            Err(NotFinite(what[MARK.len()..].to_owned()))
        }
        _ => Ok(()),
    }
}

/// Prefix of the error this checker raises, to tell it from the value's own errors.
const MARK: &str = "\u{0}finite:";

fn float(f: f64) -> Result<(), NotFinite> {
    if f.is_finite() {
        Ok(())
    } else {
        Err(NotFinite(format!("{MARK}{f}")))
    }
}

/// A serializer that produces nothing and fails on a non-finite float.
struct Finite;

type Done = Result<(), NotFinite>;

/// Serializer methods of values with nothing to check: `Ok(())`.
macro_rules! accept {
    ($($name:ident($($ty:ty),*)),* $(,)?) => {
        $(fn $name(self, $(_: $ty),*) -> Done { Ok(()) })*
    };
}

/// Serializer methods that start a compound value: its elements are checked as they come.
macro_rules! compound {
    ($($name:ident($($ty:ty),*)),* $(,)?) => {
        $(fn $name(self, $(_: $ty),*) -> Result<Self, NotFinite> { Ok(self) })*
    };
}

impl ser::Serializer for Finite {
    type Ok = ();
    type Error = NotFinite;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    accept!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_unit_struct(&'static str),
        serialize_none(),
        serialize_unit(),
        serialize_unit_variant(&'static str, u32, &'static str),
    );
    compound!(
        serialize_seq(Option<usize>),
        serialize_tuple(usize),
        serialize_tuple_struct(&'static str, usize),
        serialize_tuple_variant(&'static str, u32, &'static str, usize),
        serialize_map(Option<usize>),
        serialize_struct(&'static str, usize),
        serialize_struct_variant(&'static str, u32, &'static str, usize),
    );

    fn serialize_f32(self, v: f32) -> Done {
        float(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Done {
        float(v)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Done {
        value.serialize(self)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Done {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        v: &T,
    ) -> Done {
        v.serialize(self)
    }
}

/// The compound serializers whose elements are values alone: each element is checked.
macro_rules! elements {
    ($($trait:ident::$method:ident),* $(,)?) => {$(
        impl ser::$trait for Finite {
            type Ok = ();
            type Error = NotFinite;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Done {
                v.serialize(Finite)
            }
            fn end(self) -> Done {
                Ok(())
            }
        }
    )*};
}

elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
);

/// The compound serializers of named fields: a field's name goes into the error.
macro_rules! fields {
    ($($trait:ident),* $(,)?) => {$(
        impl ser::$trait for Finite {
            type Ok = ();
            type Error = NotFinite;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                v: &T,
            ) -> Done {
                v.serialize(Finite).map_err(|e| at(key, e))
            }
            fn end(self) -> Done {
                Ok(())
            }
        }
    )*};
}

fields!(SerializeStruct, SerializeStructVariant);

impl ser::SerializeMap for Finite {
    type Ok = ();
    type Error = NotFinite;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, _key: &T) -> Done {
        // Keys are strings in JSON; a float key is the value's own error, not ours.
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Done {
        v.serialize(Finite)
    }
    fn end(self) -> Done {
        Ok(())
    }
}

/// Adds the field name to the error's description.
fn at(key: &str, err: NotFinite) -> NotFinite {
    match err.0.strip_prefix(MARK) {
        Some(rest) if rest.contains(" at `") => NotFinite(format!(
            "{MARK}{}",
            rest.replacen(" at `", &format!(" at `{key}."), 1)
        )),
        Some(rest) => NotFinite(format!("{MARK}{rest} at `{key}`")),
        None => err,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Reading {
        label: &'static str,
        values: Vec<f64>,
    }

    #[test]
    fn non_finite_floats_are_found_anywhere() {
        assert!(check(&1.5_f64).is_ok());
        assert!(
            check(&Reading {
                label: "a",
                values: vec![1.0]
            })
            .is_ok()
        );
        let err = check(&Reading {
            label: "a",
            values: vec![1.0, f64::NAN],
        })
        .expect_err("NaN");
        assert_eq!(err.0, "NaN at `values`");
        assert!(check(&vec![Some(f32::INFINITY)]).is_err());
        assert!(
            check(&std::collections::BTreeMap::from([(
                "k",
                f64::NEG_INFINITY
            )]))
            .is_err()
        );
    }
}
