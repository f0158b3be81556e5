//! A dialect's tool form as JSON built from borrowed parts: the names, descriptions and schemas
//! of a catalog are referred to, not copied, and only what a dialect changes is made anew.
//!
//! A [`Json`] is the one rendering of a dialect: written as text for a request's `tools` field
//! ([`Json::to_text`]) and turned into a [`Value`] for the JSON form ([`Json::to_value`]), both
//! from the same tree, so the two agree byte for byte. An object keeps its keys in the order
//! they are set, as `serde_json`'s ordered `Map` does, and setting a key again, or removing one,
//! behaves as on that `Map`.

use std::borrow::Cow;

use serde::ser::{Serialize, Serializer};
use serde_json::{Map, Value};

/// A JSON value whose parts may borrow from the catalog.
#[derive(Debug, Clone)]
pub(crate) enum Json<'a> {
    /// A value written as it is.
    Value(Cow<'a, Value>),
    /// A string.
    Str(Cow<'a, str>),
    /// `true` or `false`.
    Bool(bool),
    /// `null`.
    Null,
    /// An array.
    Array(Vec<Json<'a>>),
    /// An object.
    Object(Object<'a>),
}

/// A JSON object: its entries in order, each key once.
#[derive(Debug, Clone, Default)]
pub(crate) struct Object<'a>(Vec<(Cow<'a, str>, Json<'a>)>);

impl<'a> From<&'a Value> for Json<'a> {
    fn from(value: &'a Value) -> Self {
        Json::Value(Cow::Borrowed(value))
    }
}

impl<'a> From<&'a str> for Json<'a> {
    fn from(text: &'a str) -> Self {
        Json::Str(Cow::Borrowed(text))
    }
}

impl<'a> From<Object<'a>> for Json<'a> {
    fn from(object: Object<'a>) -> Self {
        Json::Object(object)
    }
}

impl<'a> Json<'a> {
    /// The string, when this is one.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            Json::Value(v) => v.as_str(),
            _ => None,
        }
    }

    /// The value of `key`, when this is an object that has it.
    pub(crate) fn get(&self, key: &str) -> Option<&Json<'a>> {
        match self {
            Json::Object(o) => o.get(key),
            _ => None,
        }
    }

    /// Whether this is `ty` or an array holding the string `ty` (a schema's `type`).
    pub(crate) fn names_type(&self, ty: &str) -> bool {
        match self {
            Json::Array(items) => items.iter().any(|t| t.as_str() == Some(ty)),
            Json::Value(v) => match &**v {
                Value::Array(items) => items.iter().any(|t| t.as_str() == Some(ty)),
                v => v.as_str() == Some(ty),
            },
            other => other.as_str() == Some(ty),
        }
    }

    /// The items, when this is an array.
    pub(crate) fn into_items(self) -> Result<Vec<Json<'a>>, Json<'a>> {
        match self {
            Json::Array(items) => Ok(items),
            Json::Value(Cow::Borrowed(Value::Array(items))) => {
                Ok(items.iter().map(Json::from).collect())
            }
            Json::Value(Cow::Owned(Value::Array(items))) => Ok(items
                .into_iter()
                .map(|v| Json::Value(Cow::Owned(v)))
                .collect()),
            other => Err(other),
        }
    }

    /// Appends `item` when this is an array; `false`, leaving it as it was, otherwise.
    pub(crate) fn push_item(&mut self, item: Json<'a>) -> bool {
        match std::mem::replace(self, Json::Null).into_items() {
            Ok(mut items) => {
                items.push(item);
                *self = Json::Array(items);
                true
            }
            Err(other) => {
                *self = other;
                false
            }
        }
    }

    /// The same JSON, owning every part.
    pub(crate) fn into_owned(self) -> Json<'static> {
        match self {
            Json::Value(v) => Json::Value(Cow::Owned(v.into_owned())),
            Json::Str(s) => Json::Str(Cow::Owned(s.into_owned())),
            Json::Bool(b) => Json::Bool(b),
            Json::Null => Json::Null,
            Json::Array(items) => Json::Array(items.into_iter().map(Json::into_owned).collect()),
            Json::Object(o) => Json::Object(o.into_owned()),
        }
    }

    /// The JSON as a [`Value`].
    pub(crate) fn to_value(&self) -> Value {
        match self {
            Json::Value(v) => (**v).clone(),
            Json::Str(s) => Value::String((**s).to_owned()),
            Json::Bool(b) => Value::Bool(*b),
            Json::Null => Value::Null,
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(o) => Value::Object(o.to_map()),
        }
    }

    /// The JSON as compact text, as `serde_json` writes the same [`Value`].
    pub(crate) fn to_text(&self) -> String {
        match serde_json::to_string(self) {
            Ok(text) => text,
            // Every key is a string and every leaf a `Value`: writing cannot fail.
            Err(e) => unreachable!("a tool form always writes as JSON: {e}"),
        }
    }
}

impl<'a> Object<'a> {
    /// An empty object with room for `n` entries.
    pub(crate) fn with_capacity(n: usize) -> Self {
        Object(Vec::with_capacity(n))
    }

    /// Sets `key`: in its place when it is already there, last otherwise.
    pub(crate) fn insert(&mut self, key: &'a str, value: impl Into<Json<'a>>) {
        let value = value.into();
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value,
            None => self.0.push((Cow::Borrowed(key), value)),
        }
    }

    /// Adds `key`, which the object does not have yet, last.
    pub(crate) fn push(&mut self, key: &'a str, value: impl Into<Json<'a>>) {
        self.0.push((Cow::Borrowed(key), value.into()));
    }

    /// The value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&Json<'a>> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The value of `key`, to change.
    pub(crate) fn get_mut(&mut self, key: &str) -> Option<&mut Json<'a>> {
        self.0.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Whether the object has `key`.
    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Removes `key`; the last entry takes its place.
    pub(crate) fn remove(&mut self, key: &str) -> Option<Json<'a>> {
        let at = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.swap_remove(at).1)
    }

    /// The keys, in order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &Cow<'a, str>> {
        self.0.iter().map(|(k, _)| k)
    }

    /// The same object, owning every part.
    pub(crate) fn into_owned(self) -> Object<'static> {
        Object(
            self.0
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k.into_owned()), v.into_owned()))
                .collect(),
        )
    }

    /// The object as a `serde_json` map.
    pub(crate) fn to_map(&self) -> Map<String, Value> {
        self.0
            .iter()
            .map(|(k, v)| ((**k).to_owned(), v.to_value()))
            .collect()
    }
}

impl Serialize for Json<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Value(v) => v.serialize(serializer),
            Json::Str(s) => serializer.serialize_str(s),
            Json::Bool(b) => serializer.serialize_bool(*b),
            Json::Null => serializer.serialize_unit(),
            Json::Array(items) => items.serialize(serializer),
            Json::Object(o) => o.serialize(serializer),
        }
    }
}

impl Serialize for Object<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(k, v)| (&**k, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_object_sets_and_removes_keys_as_an_ordered_map_does() {
        let a = json!("a");
        let mut object = Object::default();
        let mut map = Map::new();
        for (k, v) in [("x", 1), ("y", 2), ("z", 3), ("x", 4)] {
            object.insert(k, Json::Value(Cow::Owned(Value::from(v))));
            map.insert(k.to_owned(), Value::from(v));
        }
        object.remove("x");
        map.remove("x");
        object.insert("w", &a);
        map.insert("w".to_owned(), a.clone());
        let json = Json::Object(object);
        assert_eq!(json.to_value(), Value::Object(map.clone()));
        assert_eq!(json.to_text(), Value::Object(map).to_string());
    }
}
