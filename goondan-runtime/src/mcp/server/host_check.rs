//! The Streamable HTTP server's `Host` check against DNS rebinding, and a quick way through it
//! for the common request.
//!
//! rmcp's `StreamableHttpService` refuses a request whose `Host` is not one of its allowed
//! hosts (`localhost`, `127.0.0.1` and `::1` by default): HTTP 403, or 400 for a `Host` that
//! does not parse. It parses every entry of that list again on every request. With the default
//! list, a client of `127.0.0.1` costs two `http::uri::Authority` parses besides its own
//! `Host`'s (`docs/benchmarks.md` has the figures).
//!
//! [`PlainHosts`] keeps the entries that are a plain host name or address, read once. A
//! request whose `Host` is one of them, with at most a port, is one rmcp lets through; it goes
//! to a copy of rmcp's service whose own host check is off. Any other request (another host,
//! an odd spelling, no `Host` at all) goes to the service with rmcp's check, which decides it
//! as it always has. So the check answers exactly as rmcp's; only the cost of the common
//! request changes.

use hyper::header::{HOST, HeaderMap};

/// The allowed hosts a request's `Host` is matched against without parsing (see the module
/// docs).
#[derive(Debug, Clone, Default)]
pub(super) struct PlainHosts {
    /// Host names and IPv4 addresses, lowercase: matched as they are, `host[:port]`.
    names: Vec<Box<str>>,
    /// IPv6 addresses, lowercase and without brackets: matched as `[address][:port]`.
    addresses: Vec<Box<str>>,
}

impl PlainHosts {
    /// The plain entries of `allowed` (rmcp's `allowed_hosts`). An entry is taken only if
    /// `http`'s own parser reads it, and it with a port, as this host and no other; any other
    /// entry is left to rmcp's check.
    pub(super) fn of(allowed: &[String]) -> Self {
        let mut plain = Self::default();
        for entry in allowed {
            let entry = entry.trim();
            if entry.is_empty() {
                continue;
            }
            if entry.bytes().all(is_name_byte) {
                let name = entry.to_ascii_lowercase();
                if parses_as(&name, &name) && parses_as(&format!("{name}:65535"), &name) {
                    plain.names.push(name.into());
                }
                continue;
            }
            let address = entry
                .strip_prefix('[')
                .and_then(|e| e.strip_suffix(']'))
                .unwrap_or(entry)
                .to_ascii_lowercase();
            // An unbracketed entry rmcp's parser reads (one colon: a host and a port) is not
            // an address; only one it cannot read stands for itself.
            let unbracketed_stands_alone =
                entry.starts_with('[') || http::uri::Authority::try_from(entry).is_err();
            if address.bytes().all(is_address_byte)
                && address.bytes().filter(|&b| b == b':').count() >= 2
                && unbracketed_stands_alone
                && parses_as(&format!("[{address}]"), &address)
                && parses_as(&format!("[{address}]:65535"), &address)
            {
                plain.addresses.push(address.into());
            }
        }
        plain
    }

    /// Whether `headers`' `Host` is plainly one of the entries, with at most a port: a host
    /// rmcp's check lets through. `false` says nothing: that request is left to rmcp's check.
    pub(super) fn admits(&self, headers: &HeaderMap) -> bool {
        let Some(host) = headers.get(HOST) else {
            return false;
        };
        let host = host.as_bytes();
        // The bytes as clients send them (lowercase) first: a plain comparison. Without case,
        // byte by byte and dearer, only when none is equal.
        self.admits_spelt(host, <[u8]>::starts_with)
            || self.admits_spelt(host, |host, entry| {
                host.get(..entry.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(entry))
            })
    }

    /// Whether `host` is an entry, as `begins` compares, with at most a port.
    fn admits_spelt(&self, host: &[u8], begins: impl Fn(&[u8], &[u8]) -> bool) -> bool {
        match host.strip_prefix(b"[") {
            Some(bracketed) => self.addresses.iter().any(|address| {
                after(bracketed, address, &begins)
                    .and_then(|rest| rest.strip_prefix(b"]"))
                    .is_some_and(is_port_suffix)
            }),
            None => self
                .names
                .iter()
                .any(|name| after(host, name, &begins).is_some_and(is_port_suffix)),
        }
    }
}

/// What follows `entry` in `host`, when `host` begins with it as `begins` compares.
fn after<'h>(
    host: &'h [u8],
    entry: &str,
    begins: &impl Fn(&[u8], &[u8]) -> bool,
) -> Option<&'h [u8]> {
    let entry = entry.as_bytes();
    if begins(host, entry) {
        host.get(entry.len()..)
    } else {
        None
    }
}

/// Nothing, or `:` and a port number (1 to 5 digits, at most 65535).
fn is_port_suffix(rest: &[u8]) -> bool {
    let Some(digits) = rest.strip_prefix(b":") else {
        return rest.is_empty();
    };
    (1..=5).contains(&digits.len())
        && digits.iter().all(u8::is_ascii_digit)
        && digits
            .iter()
            .fold(0u32, |n, d| n * 10 + u32::from(d - b'0'))
            <= u32::from(u16::MAX)
}

/// A byte of a host name or an IPv4 address.
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'.' || b == b'-'
}

/// A byte of an IPv6 address (without brackets).
fn is_address_byte(b: u8) -> bool {
    b.is_ascii_hexdigit() || b == b':' || b == b'.'
}

/// Whether `http`'s parser reads `authority` with the host `host` (brackets and case aside),
/// as rmcp's check reads a `Host`.
fn parses_as(authority: &str, host: &str) -> bool {
    http::uri::Authority::try_from(authority)
        .is_ok_and(|a| a.host().trim_matches(['[', ']']).eq_ignore_ascii_case(host))
}

#[cfg(test)]
mod tests {
    use hyper::header::HeaderValue;

    use super::*;

    fn defaults() -> PlainHosts {
        PlainHosts::of(&rmcp::transport::StreamableHttpServerConfig::default().allowed_hosts)
    }

    fn strs(entries: &[Box<str>]) -> Vec<&str> {
        entries.iter().map(|e| &**e).collect()
    }

    fn admits(plain: &PlainHosts, host: &str) -> bool {
        let mut headers = HeaderMap::new();
        if let Ok(value) = HeaderValue::from_str(host) {
            headers.insert(HOST, value);
        }
        plain.admits(&headers)
    }

    #[test]
    fn the_default_entries_are_all_plain() {
        let plain = defaults();
        assert_eq!(strs(&plain.names), ["localhost", "127.0.0.1"]);
        assert_eq!(strs(&plain.addresses), ["::1"]);
    }

    #[test]
    fn a_plain_host_with_at_most_a_port_is_admitted() {
        let plain = defaults();
        for host in [
            "localhost",
            "LocalHost:8080",
            "127.0.0.1:1",
            "127.0.0.1:65535",
            "[::1]",
            "[::1]:3000",
        ] {
            assert!(admits(&plain, host), "{host}");
        }
        for host in [
            "",
            "localhost:",
            "localhost:65536",
            "localhost:123456",
            "localhost:+1",
            "localhost:80:80",
            "localhost.",
            "localhost.evil.example",
            "evil.example",
            "127.0.0.2",
            "127.0.0.1.",
            "::1",
            "[::1",
            "[::1]x",
            "[::1]:",
            "[::2]",
            "user@localhost",
            " localhost",
        ] {
            assert!(!admits(&plain, host), "{host}");
        }
        assert!(!plain.admits(&HeaderMap::new()), "no Host at all");
    }

    #[test]
    fn an_entry_that_is_not_plain_is_left_to_rmcp() {
        let plain = PlainHosts::of(&[
            "example.com:8080".into(),
            "a:1".into(),
            "*.example.com".into(),
            " ".into(),
            "[::1]".into(),
            "Example.ORG".into(),
        ]);
        assert_eq!(strs(&plain.names), ["example.org"]);
        assert_eq!(strs(&plain.addresses), ["::1"]);
    }
}
