//! What a search of a catalog reads: each tool as a [`ToolDoc`] (name, description,
//! parameters), a catalog's docs as [`ToolDocs`], and the [`Ranker`] that finds the best of
//! them for a query. The base tools' tool search and code mode's `code__search` rank with one.

use std::hash::{Hash, Hasher};
use std::ops::Deref;

use serde_json::Value;

use crate::tools::catalog::CatalogItem;

/// The longest query a search takes, in characters.
pub const MAX_QUERY_CHARS: usize = 1000;

/// What a ranker knows of a tool: its full name, its description and its parameter schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDoc {
    /// `{resource}__{export}`.
    pub name: String,
    /// What the model would read.
    pub description: String,
    /// The parameter schema (`type: object`), or `null`.
    pub parameters: Value,
}

impl ToolDoc {
    /// The doc of a catalog item.
    pub fn of(item: &CatalogItem) -> Self {
        Self {
            name: item.name().as_str().to_owned(),
            description: item.description().unwrap_or_default().to_owned(),
            parameters: Self::parameters_of(item).cloned().unwrap_or(Value::Null),
        }
    }

    /// The words a ranker reads: the name split into words (twice: a name says the most), the
    /// description, and each parameter's name and description.
    pub fn text(&self) -> String {
        let name = words(&self.name);
        let mut text = format!("{name} {name} {}", self.description);
        if let Some(props) = self.parameters.get("properties").and_then(Value::as_object) {
            for (param, schema) in props {
                text.push(' ');
                text.push_str(&words(param));
                if let Some(d) = schema.get("description").and_then(Value::as_str) {
                    text.push(' ');
                    text.push_str(d);
                }
            }
        }
        text
    }

    /// The parameter schema a doc reads of an item: the item's, else its entry's.
    pub fn parameters_of(item: &CatalogItem) -> Option<&Value> {
        item.parameters()
            .map(|p| &**p)
            .or_else(|| item.entry().map(|e| e.export().parameters()))
    }
}

/// The docs of one catalog, as rankers read them (a slice of [`ToolDoc`]), with a
/// [`key`](Self::key) computed once from what a ranker reads of them.
///
/// ```
/// use goondan_runtime::tools::search::{ToolDoc, ToolDocs};
/// let doc = |description: &str| ToolDoc {
///     name: "notes__add".into(),
///     description: description.into(),
///     parameters: serde_json::Value::Null,
/// };
/// let docs: ToolDocs = [doc("Adds a note.")].into_iter().collect();
/// assert_eq!(docs[0].name, "notes__add");
/// assert_eq!(docs.key(), ToolDocs::new(vec![doc("Adds a note.")]).key());
/// assert_ne!(docs.key(), ToolDocs::new(vec![doc("Removes a note.")]).key());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDocs {
    docs: Vec<ToolDoc>,
    key: u64,
}

impl ToolDocs {
    /// The docs, keyed by their names and [texts](ToolDoc::text).
    pub fn new(docs: Vec<ToolDoc>) -> Self {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for doc in &docs {
            doc.name.hash(&mut h);
            doc.text().hash(&mut h);
        }
        Self {
            key: h.finish(),
            docs,
        }
    }

    /// Identifies what a ranker reads of the docs (their names and texts, in order): a ranker
    /// may keep an index of them for as long as it is given docs with the same key.
    pub fn key(&self) -> u64 {
        self.key
    }
}

impl Deref for ToolDocs {
    type Target = [ToolDoc];

    fn deref(&self) -> &[ToolDoc] {
        &self.docs
    }
}

impl FromIterator<ToolDoc> for ToolDocs {
    fn from_iter<I: IntoIterator<Item = ToolDoc>>(iter: I) -> Self {
        Self::new(iter.into_iter().collect())
    }
}

/// A name or a query as the words a ranker reads: split at every character that is not a
/// letter or a digit and between a lower-case letter and an upper-case one, lower-cased.
///
/// ```
/// use goondan_runtime::tools::search::words;
/// assert_eq!(words("file-system__readFile"), "file system read file");
/// ```
pub fn words(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    let mut prev_lower = false;
    for c in name.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower {
                out.push(' ');
            }
            out.extend(c.to_lowercase());
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
        } else {
            if !out.ends_with(' ') {
                out.push(' ');
            }
            prev_lower = false;
        }
    }
    out.trim().to_owned()
}

/// Ranks tools for a query: the indexes of the best `limit` of `tools`, best first; none when
/// nothing matches.
pub trait Ranker: Send + Sync + 'static {
    /// The best matches of `query` among `tools`; an index of `tools` can be kept for as long
    /// as [`ToolDocs::key`] stays the same.
    fn rank(&self, query: &str, tools: &ToolDocs, limit: usize) -> Vec<usize>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_words() {
        assert_eq!(words("file-system__readFile"), "file system read file");
        assert_eq!(words("math.factorial_v2"), "math factorial v2");
        assert_eq!(words("HTTPGet"), "httpget");
    }
}
