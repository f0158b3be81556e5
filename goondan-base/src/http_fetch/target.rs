//! A URL `http-fetch` may request: http or https, no user info, a host that is a DNS name or
//! an IP address. Parsing and redirect joining are the WHATWG URL Standard's, from the `url`
//! crate, so numeric IPv4 spellings such as `2130706433`, `0x7f.1` or `0177.0.0.1` are read the
//! way browsers read them and the address check sees the real address.

use std::fmt;
use std::net::IpAddr;

use goondan_runtime::ToolError;
use url::Url;

use super::codes;

/// The host of a [`Target`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Host {
    /// A DNS name, lowercase (international names in punycode), without a trailing dot.
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
    url: Url,
    pub(crate) https: bool,
    pub(crate) host: Host,
    pub(crate) port: u16,
    /// Path and query, starting with `/`.
    pub(crate) path: String,
}

impl Target {
    /// Parses and checks `raw`.
    pub(crate) fn parse(raw: &str) -> Result<Self, ToolError> {
        let url = Url::parse(raw.trim()).map_err(|err| invalid(raw, &err.to_string()))?;
        Self::check(raw, url)
    }

    /// Resolves a redirect's `Location` against this URL (WHATWG joining) and checks it.
    #[cfg(feature = "http-tools")]
    pub(crate) fn join(&self, location: &str) -> Result<Self, ToolError> {
        let url = self
            .url
            .join(location.trim())
            .map_err(|err| invalid(location, &err.to_string()))?;
        Self::check(location, url)
    }

    fn check(raw: &str, mut url: Url) -> Result<Self, ToolError> {
        let https = match url.scheme() {
            "http" => false,
            "https" => true,
            other => return Err(bad_scheme(other)),
        };
        if !url.username().is_empty() || url.password().is_some() {
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
        let host = match url.host() {
            Some(url::Host::Domain(name)) => {
                let name = name.strip_suffix('.').unwrap_or(name);
                if name.is_empty() {
                    return Err(invalid(raw, "the host is empty"));
                }
                Host::Name(name.to_owned())
            }
            Some(url::Host::Ipv4(ip)) => Host::Ip(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Host::Ip(IpAddr::V6(ip)),
            None => return Err(invalid(raw, "it has no host")),
        };
        let port = url
            .port_or_known_default()
            .unwrap_or(if https { 443 } else { 80 });
        if port == 0 {
            return Err(invalid(raw, "port 0 cannot be connected to"));
        }
        url.set_fragment(None);
        let path = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        Ok(Self {
            url,
            https,
            host,
            port,
            path,
        })
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
    use std::net::Ipv4Addr;

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
        assert_eq!(
            host("http://b\u{fc}cher.example/"),
            Some(Host::Name("xn--bcher-kva.example".into()))
        );
        assert!(Target::parse("http://u:p@a.test/").is_err());
        assert!(Target::parse("ftp://a.test/").is_err());
        assert!(Target::parse("a.test/x").is_err());
        assert!(Target::parse("http://a.test:0/").is_err());
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
        assert_eq!(join("../z").as_deref(), Some("http://a.test:8080/z"));
        assert_eq!(join("z#frag").as_deref(), Some("http://a.test:8080/x/z"));
        assert!(
            base.as_ref()
                .is_some_and(|b| b.join("file:///etc/passwd").is_err())
        );
    }
}
