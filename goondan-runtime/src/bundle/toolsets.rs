//! The shaping of an Agent's `spec.tools` entries ([`Toolset`]):
//!
//! ```yaml
//! tools:
//!   - Tool/bash                          # as it is
//!   - ref: Tool/github
//!     prefix: gh                         # gh__list_issues, ...
//!     include: ["list_*", get_issue]     # export or full names, `*` for any run of characters
//!     exclude: [list_secrets]
//!     annotations: {readOnly: true}      # only the tools with these effect hints
//!     rename: {list_issues: issues}      # gh__issues; a full name renames the resource too
//! ```

use serde_json::Value;

use super::resource::Resource;
use crate::tools::schema::escape_pointer;
use crate::tools::toolset::{Hint, Toolset};

/// A wrong shaping: the JSON pointer under the entry, and why.
type Wrong = (String, String);

/// The [`Wrong`] at `at`.
fn wrong(at: impl Into<String>, why: impl Into<String>) -> Wrong {
    (at.into(), why.into())
}

/// The toolset of one `spec.tools` entry referencing `resource`.
pub(super) fn shape(resource: &str, entry: &Value) -> Result<Toolset, Wrong> {
    let mut set = Toolset::of(resource);
    let Some(map) = entry.as_object() else {
        return Ok(set);
    };
    if let Some(v) = map.get("prefix") {
        let prefix = v.as_str().filter(|s| !s.is_empty());
        let prefix =
            prefix.ok_or_else(|| wrong("/prefix", "`prefix` is a resource name, such as `gh`"))?;
        set = set.prefix(prefix);
    }
    for key in ["include", "exclude"] {
        let Some(v) = map.get(key) else { continue };
        let why = format!("`{key}` is a list of tool names or patterns");
        let items = v.as_array().ok_or_else(|| wrong(format!("/{key}"), why))?;
        let mut patterns = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let why = || format!("the items of `{key}` are tool names or patterns");
            let pattern = item.as_str().filter(|s| !s.is_empty());
            let pattern = pattern.ok_or_else(|| wrong(format!("/{key}/{i}"), why()))?;
            patterns.push(pattern.to_owned());
        }
        set = if key == "include" {
            set.include(patterns)
        } else {
            set.exclude(patterns)
        };
    }
    if let Some(v) = map.get("annotations") {
        let why = "`annotations` maps effect hints (readOnly, destructive, idempotent, openWorld) to true or false";
        let hints = v.as_object().ok_or_else(|| wrong("/annotations", why))?;
        for (key, value) in hints {
            let at = format!("/annotations/{}", escape_pointer(key));
            let why = || {
                format!(
                    "`{key}` is not an effect hint: use readOnly, destructive, idempotent or openWorld"
                )
            };
            let hint = Hint::from_key(key).ok_or_else(|| wrong(&at, why()))?;
            let value = value
                .as_bool()
                .ok_or_else(|| (at, format!("`{key}` is true or false")))?;
            set = set.when(hint, value);
        }
    }
    if let Some(v) = map.get("rename") {
        let why = "`rename` maps tool names to new names";
        let renames = v.as_object().ok_or_else(|| wrong("/rename", why))?;
        for (from, to) in renames {
            let at = format!("/rename/{}", escape_pointer(from));
            let to = to
                .as_str()
                .filter(|s| !s.is_empty())
                .ok_or_else(|| (at, format!("the new name of `{from}` is text")))?;
            set = set.rename(from, to);
        }
    }
    Ok(set)
}

/// The toolsets of an Agent's well-formed `spec.tools` entries, each with its JSON pointer;
/// wrong shapings are left out (validation reports them).
pub(super) fn of_agent(r: &Resource) -> Vec<(Toolset, String)> {
    let entries = r
        .spec()
        .and_then(|s| s.get("tools"))
        .and_then(Value::as_array);
    r.raw_refs("tools")
        .into_iter()
        .filter_map(|(parsed, pointer)| {
            let reference = parsed.ok()?;
            let index: usize = pointer.rsplit('/').next()?.parse().ok()?;
            let entry = entries?.get(index)?;
            shape(&reference.name, entry).ok().map(|set| (set, pointer))
        })
        .collect()
}
