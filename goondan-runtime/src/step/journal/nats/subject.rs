//! Where one instance's journal lives on NATS: its subject in the journal stream and its key in
//! the lease bucket, both built from the agent's name and the instance key.
//!
//! A name is escaped into one subject token: ASCII letters, digits, `_` and `-` stay as they
//! are; every other byte (`.`, `*`, `>`, spaces, `:`, `/`, non-ASCII, and `=` itself) becomes
//! `=XX` (its hex value). The token is valid in a subject and in a key-value key, and two names
//! never share one.

use super::super::JournalError;

/// The longest escaped name, in bytes: subjects travel in a protocol line the server bounds.
const MAX_TOKEN_BYTES: usize = 256;

/// The subject and lease key of one instance's journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Place {
    /// `{prefix}.{agent}.{instance}`.
    pub(super) subject: String,
    /// `{agent}.{instance}`, the key of the instance's lease.
    pub(super) key: String,
}

impl Place {
    /// The place of `agent`'s instance `instance_key` under `prefix` (`goondan.journal`).
    pub(super) fn new(prefix: &str, agent: &str, instance_key: &str) -> Result<Self, JournalError> {
        let key = format!(
            "{}.{}",
            token("agent", agent)?,
            token("instance key", instance_key)?
        );
        Ok(Self {
            subject: format!("{prefix}.{key}"),
            key,
        })
    }
}

/// `name` escaped into one token; an error when it is empty or too long.
fn token(what: &'static str, name: &str) -> Result<String, JournalError> {
    let bad = |reason: &'static str| JournalError::Name {
        what,
        name: name.to_owned(),
        reason,
    };
    if name.is_empty() {
        return Err(bad("it is empty"));
    }
    let mut out = String::with_capacity(name.len());
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-' {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("={byte:02X}"));
        }
    }
    if out.len() > MAX_TOKEN_BYTES {
        return Err(bad("it is longer than 256 bytes once escaped"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_stay_as_they_are() {
        let place = Place::new("goondan.journal", "helper", "user-1_a").ok();
        assert_eq!(
            place,
            Some(Place {
                subject: "goondan.journal.helper.user-1_a".into(),
                key: "helper.user-1_a".into(),
            })
        );
    }

    #[test]
    fn dots_wildcards_spaces_and_the_escape_itself_are_escaped_apart() {
        let escaped = |s: &str| token("agent", s).unwrap_or_default();
        assert_eq!(escaped("a.b"), "a=2Eb");
        assert_eq!(escaped("*>"), "=2A=3E");
        assert_eq!(escaped("a b"), "a=20b");
        assert_eq!(escaped("a=2Eb"), "a=3D2Eb", "never the same token as `a.b`");
        assert_eq!(escaped("é"), "=C3=A9");
        assert_ne!(escaped("a.b"), escaped("a=2Eb"));
    }

    #[test]
    fn an_empty_or_overlong_name_is_an_error_naming_it() {
        let empty = Place::new("p", "helper", "");
        assert!(
            matches!(
                &empty,
                Err(JournalError::Name {
                    what: "instance key",
                    ..
                })
            ),
            "{empty:?}"
        );
        let long = Place::new("p", &".".repeat(100), "k");
        let message = long.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.contains("agent") && message.contains("256"),
            "{message}"
        );
    }
}
