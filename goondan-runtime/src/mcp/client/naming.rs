//! The names bridged tools get: `{server}__{tool}`, with a remote tool name that our names
//! cannot hold (a `__`, a character outside `A-Za-z0-9_-`, too long) mapped deterministically.

use crate::tools::name::{MAX_TOOL_NAME_LEN, SEPARATOR};

/// Characters of the hash suffix a mapped name ends with (`-` and 8 hex digits).
const HASH_SUFFIX_LEN: usize = 9;

/// The local name of one remote tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalName {
    /// The full `{server}__{export}` name.
    pub full: String,
    /// Whether the export part differs from the remote name.
    pub mapped: bool,
}

/// The local name of the remote tool `remote` of the server `server` (a valid resource name).
///
/// A remote name made only of `A-Za-z0-9_-`, without `__` and short enough is kept as it is.
/// Any other name is mapped: each character outside the set becomes `_`, runs of `_` become
/// one, leading and trailing `_` are dropped, the rest is cut to fit 64 characters, and
/// `-` plus 8 hex digits of the remote name's FNV-1a hash are appended, so two remote names
/// never meet in one local name and the same remote name always maps the same way.
///
/// ```
/// use goondan_runtime::mcp::client::local_name;
/// assert_eq!(local_name("files", "read_file").full, "files__read_file");
/// let mapped = local_name("files", "fs.read__all");
/// assert!(mapped.mapped);
/// assert!(mapped.full.starts_with("files__fs_read_all-"));
/// assert_eq!(mapped, local_name("files", "fs.read__all"));
/// ```
pub fn local_name(server: &str, remote: &str) -> LocalName {
    let budget = MAX_TOOL_NAME_LEN.saturating_sub(server.chars().count() + SEPARATOR.len());
    let clean = remote
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if clean
        && !remote.is_empty()
        && !remote.contains(SEPARATOR)
        && remote.chars().count() <= budget
    {
        return LocalName {
            full: format!("{server}{SEPARATOR}{remote}"),
            mapped: false,
        };
    }
    let mut export = String::with_capacity(remote.len());
    for c in remote.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' {
            c
        } else {
            '_'
        };
        if c == '_' && export.ends_with('_') {
            continue;
        }
        export.push(c);
    }
    let mut export = export.trim_matches('_').to_owned();
    let keep = budget.saturating_sub(HASH_SUFFIX_LEN);
    if export.len() > keep {
        export.truncate(keep);
        export = export.trim_end_matches('_').to_owned();
    }
    if export.is_empty() {
        export.push_str("tool");
    }
    LocalName {
        full: format!(
            "{server}{SEPARATOR}{export}-{:08x}",
            fnv1a(remote.as_bytes())
        ),
        mapped: true,
    }
}

/// FNV-1a, 32 bits: stable across builds and platforms, unlike `std`'s hasher.
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5, |hash, b| {
        (hash ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::name::validate_tool_name;

    #[test]
    fn remote_names_our_charset_cannot_hold_are_mapped_to_valid_distinct_names() {
        let odd = [
            "a__b",
            "a_b",
            "a.b",
            "a b",
            "__",
            "",
            "日本語",
            "x".repeat(80).as_str(),
            "y".repeat(60).as_str(),
        ]
        .map(|s| s.to_owned());
        let names: Vec<_> = odd.iter().map(|r| local_name("srv", r)).collect();
        for (r, n) in odd.iter().zip(&names) {
            assert!(validate_tool_name(&n.full).is_ok(), "{r:?} -> {n:?}");
        }
        assert_eq!(names[1].full, "srv__a_b");
        assert!(!names[1].mapped);
        assert!(names[0].mapped && names[0].full.starts_with("srv__a_b-"));
        let mut unique: Vec<_> = names.iter().map(|n| n.full.clone()).collect();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
        assert_eq!(fnv1a(b"a"), 0xe40c_292c);
    }
}
