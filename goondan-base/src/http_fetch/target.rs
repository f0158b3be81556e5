//! A URL `http-fetch` may request: http or https, no user info, a host that is a DNS name or
//! an IP address (numeric IPv4 spellings such as `2130706433`, `0x7f.1` or `0177.0.0.1` are
//! read the way browsers read them, so the address check sees the real address).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use goondan_runtime::ToolError;

use super::codes;

/// The host of a [`Target`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Host {
    /// A DNS name, lowercase, without a trailing dot.
    Name(String),
    /// An IP address.
    Ip(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Ip(IpAddr::V4(ip)) => write!(f, "{ip}"),
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
        }
    }
}

/// A checked URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) https: bool,
    pub(crate) host: Host,
    pub(crate) port: u16,
    /// Path and query, starting with `/`.
    pub(crate) path: String,
}

impl Target {
    /// Parses and checks `raw`.
    pub(crate) fn parse(raw: &str) -> Result<Self, ToolError> {
        let raw = raw.trim();
        let without_fragment = raw.split('#').next().unwrap_or_default();
        let scheme_end = without_fragment.find(':');
        let scheme = scheme_end.map(|i| without_fragment[..i].to_ascii_lowercase());
        let https = match scheme.as_deref() {
            Some("http") => false,
            Some("https") => true,
            Some(other) if is_scheme(other) => return Err(bad_scheme(other)),
            _ => return Err(invalid(raw, "it has no `http://` or `https://` scheme")),
        };
        let uri: http::Uri = without_fragment
            .parse()
            .map_err(|err| invalid(raw, &format!("{err}")))?;
        let Some(authority) = uri.authority() else {
            return Err(invalid(raw, "it has no host"));
        };
        if authority.as_str().contains('@') {
            return Err(ToolError::new(format!(
                "the URL `{}` carries user info (`user@host`), which is refused",
                short(raw)
            ))
            .with_code(codes::USERINFO)
            .with_name("UrlUserInfoError")
            .with_suggestion(
                "remove the `user:password@` part; send credentials in a header instead",
            ));
        }
        let host = parse_host(authority.host()).map_err(|why| invalid(raw, &why))?;
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        if port == 0 {
            return Err(invalid(raw, "port 0 cannot be connected to"));
        }
        let path = uri
            .path_and_query()
            .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
        let path = if path.starts_with('/') {
            path
        } else {
            format!("/{path}")
        };
        Ok(Self {
            https,
            host,
            port,
            path,
        })
    }

    /// Resolves a redirect's `Location` against this URL.
    pub(crate) fn join(&self, location: &str) -> Result<Self, ToolError> {
        let location = location.trim();
        if let Some(i) = location.find(':')
            && is_scheme(&location[..i])
            && !location[..i].contains('/')
        {
            return Self::parse(location);
        }
        let scheme = if self.https { "https" } else { "http" };
        if let Some(rest) = location.strip_prefix("//") {
            return Self::parse(&format!("{scheme}://{rest}"));
        }
        let origin = format!("{scheme}://{}", self.authority());
        if location.starts_with('/') {
            return Self::parse(&format!("{origin}{location}"));
        }
        let base_path = self.path.split('?').next().unwrap_or("/");
        if location.starts_with('?') {
            return Self::parse(&format!("{origin}{base_path}{location}"));
        }
        let dir = base_path.rsplit_once('/').map_or("", |(dir, _)| dir);
        Self::parse(&format!("{origin}{dir}/{location}"))
    }

    /// `host[:port]`, the port only when not the scheme's default.
    pub(crate) fn authority(&self) -> String {
        let default = if self.https { 443 } else { 80 };
        if self.port == default {
            self.host.to_string()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        write!(f, "{scheme}://{}{}", self.authority(), self.path)
    }
}

fn is_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

fn parse_host(host: &str) -> Result<Host, String> {
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner
            .parse::<Ipv6Addr>()
            .map(|ip| Host::Ip(IpAddr::V6(ip)))
            .map_err(|_| format!("`{host}` is not an IPv6 address"));
    }
    let lower = host.to_ascii_lowercase();
    let name = lower.strip_suffix('.').unwrap_or(&lower);
    if name.is_empty() {
        return Err("the host is empty".to_owned());
    }
    if let Some(v4) = parse_ipv4(name)? {
        return Ok(Host::Ip(IpAddr::V4(v4)));
    }
    let valid = name.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    });
    if !valid || name.len() > 253 {
        return Err(format!(
            "`{host}` is not a valid host name (letters, digits, `-` and `.`; IDNs in punycode)"
        ));
    }
    Ok(Host::Name(name.to_owned()))
}

/// The WHATWG URL reading of an IPv4 host: `None` when the host is a name, an error when it
/// looks like a number but is not a valid address.
fn parse_ipv4(host: &str) -> Result<Option<Ipv4Addr>, String> {
    let parts: Vec<&str> = host.split('.').collect();
    let Some(last) = parts.last() else {
        return Ok(None);
    };
    if parse_number(last).is_none() && !last.chars().all(|c| c.is_ascii_digit()) {
        return Ok(None);
    }
    let bad = || format!("`{host}` looks like an IPv4 address but is not a valid one");
    if parts.len() > 4 {
        return Err(bad());
    }
    let numbers: Vec<u64> = parts
        .iter()
        .map(|p| parse_number(p).ok_or_else(bad))
        .collect::<Result<_, _>>()?;
    let (init, tail) = numbers.split_at(numbers.len() - 1);
    if init.iter().any(|n| *n > 255) {
        return Err(bad());
    }
    let tail = tail.first().copied().unwrap_or(0);
    let tail_bits = 8 * (5 - numbers.len() as u32);
    if tail >= (1u64 << tail_bits) {
        return Err(bad());
    }
    let mut value = tail;
    for (i, n) in init.iter().enumerate() {
        value += n << (8 * (3 - i as u32));
    }
    u32::try_from(value)
        .map(|v| Some(Ipv4Addr::from(v)))
        .map_err(|_| bad())
}

/// One IPv4 part: decimal, `0x` hex or `0` octal.
fn parse_number(part: &str) -> Option<u64> {
    if part.is_empty() {
        return None;
    }
    let (digits, radix) =
        if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            (hex, 16)
        } else if part.len() > 1 && part.starts_with('0') {
            (&part[1..], 8)
        } else {
            (part, 10)
        };
    if digits.is_empty() {
        return Some(0);
    }
    if digits.len() > 12 {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

fn short(raw: &str) -> String {
    crate::workspace::shorten(raw)
}

fn invalid(raw: &str, why: &str) -> ToolError {
    ToolError::new(format!("the URL `{}` is not valid: {why}", short(raw)))
        .with_code(codes::URL_INVALID)
        .with_name("InvalidUrlError")
        .with_suggestion("give an absolute URL like `https://example.com/path`")
}

fn bad_scheme(scheme: &str) -> ToolError {
    ToolError::new(format!(
        "the scheme `{scheme}` is refused; only http and https are fetched"
    ))
    .with_code(codes::SCHEME)
    .with_name("UnsupportedSchemeError")
    .with_suggestion("use an `http://` or `https://` URL")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(raw: &str) -> Option<Host> {
        Target::parse(raw).ok().map(|t| t.host)
    }

    fn v4(a: u8, b: u8, c: u8, d: u8) -> Option<Host> {
        Some(Host::Ip(IpAddr::V4(Ipv4Addr::new(a, b, c, d))))
    }

    #[test]
    fn numeric_ipv4_spellings_are_read_like_browsers() {
        assert_eq!(host("http://2130706433/"), v4(127, 0, 0, 1));
        assert_eq!(host("http://0x7f000001/"), v4(127, 0, 0, 1));
        assert_eq!(host("http://0177.0.0.1/"), v4(127, 0, 0, 1));
        assert_eq!(host("http://127.1/"), v4(127, 0, 0, 1));
        assert_eq!(host("http://0x7f.1/"), v4(127, 0, 0, 1));
        assert_eq!(host("http://127.0.0.1./"), v4(127, 0, 0, 1));
        assert_eq!(host("http://0/"), v4(0, 0, 0, 0));
        assert_eq!(
            host("http://Example.COM./a"),
            Some(Host::Name("example.com".into()))
        );
        assert!(Target::parse("http://1.2.3.4.5/").is_err());
        assert!(Target::parse("http://256.0.0.1/").is_err());
        assert!(Target::parse("http://08.0.0.1/").is_err());
    }

    #[test]
    fn redirects_join_like_browsers() {
        let base = Target::parse("http://a.test:8080/x/y?q=1").ok();
        let join = |loc: &str| {
            base.as_ref()
                .and_then(|b| b.join(loc).ok())
                .map(|t| t.to_string())
        };
        assert_eq!(join("/z").as_deref(), Some("http://a.test:8080/z"));
        assert_eq!(join("z").as_deref(), Some("http://a.test:8080/x/z"));
        assert_eq!(join("?p=2").as_deref(), Some("http://a.test:8080/x/y?p=2"));
        assert_eq!(join("//b.test/").as_deref(), Some("http://b.test/"));
        assert_eq!(
            join("https://c.test/p").as_deref(),
            Some("https://c.test/p")
        );
        assert!(
            base.as_ref()
                .is_some_and(|b| b.join("file:///etc/passwd").is_err())
        );
    }
}
