//! The server URL, parsed once: host, port, the request target, the `Host` header, and
//! the socket address when the host is an IP literal (no resolution per connection).

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use super::Error;

/// Where requests go: a plain `http://` URL taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// Host name or IP literal as written (without IPv6 brackets).
    pub host: String,
    /// The port (80 when the URL has none).
    pub port: u16,
    /// Path and query, the request target (`/v1/audio/speech`).
    pub target: String,
    /// The `Host` header's value (`127.0.0.1:8000`; the port left out when it is 80).
    pub authority: String,
    /// The address when the host is an IP literal.
    pub addr: Option<SocketAddr>,
}

impl Endpoint {
    /// Parses `url`; anything but `http://host[:port][/path][?query]` is an error.
    pub(crate) fn parse(url: &str) -> Result<Endpoint, Error> {
        let bad = |why: &str| Error::Url {
            url: url.to_string(),
            why: why.to_string(),
        };
        let u = reqwest::Url::parse(url).map_err(|e| bad(&e.to_string()))?;
        if u.scheme() != "http" {
            return Err(bad(
                "only http:// is supported (the native bench has no TLS)",
            ));
        }
        if !u.username().is_empty() || u.password().is_some() {
            return Err(bad("credentials in the URL are not supported"));
        }
        let host_text = match u.host_str() {
            Some(h) if !h.is_empty() => h,
            _ => return Err(bad("no host")),
        };
        let host = host_text
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = u.port_or_known_default().unwrap_or(80);
        let mut target = u.path().to_string();
        if let Some(q) = u.query() {
            target.push('?');
            target.push_str(q);
        }
        let authority = match u.port() {
            Some(p) => format!("{host_text}:{p}"),
            None => host_text.to_string(),
        };
        let addr = host
            .parse::<IpAddr>()
            .ok()
            .map(|ip| SocketAddr::new(ip, port));
        Ok(Endpoint {
            host,
            port,
            target,
            authority,
            addr,
        })
    }

    /// The server's addresses: the literal, or the host name resolved now (blocking:
    /// the event loop resolves once per step, before its first connection).
    pub(crate) fn addrs(&self) -> Result<Vec<SocketAddr>, Error> {
        if let Some(a) = self.addr {
            return Ok(vec![a]);
        }
        (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map(Iterator::collect)
            .map_err(|source| Error::Resolve {
                authority: self.authority.clone(),
                source,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_host_port_and_target() {
        let e = Endpoint::parse("http://127.0.0.1:8091/v1/audio/speech?x=1").unwrap();
        assert_eq!(e.host, "127.0.0.1");
        assert_eq!(e.port, 8091);
        assert_eq!(e.target, "/v1/audio/speech?x=1");
        assert_eq!(e.authority, "127.0.0.1:8091");
        assert_eq!(e.addr, Some("127.0.0.1:8091".parse().unwrap()));
    }

    #[test]
    fn default_port_ipv6_and_names() {
        let e = Endpoint::parse("http://localhost").unwrap();
        assert_eq!((e.port, e.target.as_str(), e.addr), (80, "/", None));
        assert_eq!(e.authority, "localhost");
        let e = Endpoint::parse("http://[::1]:9000/a").unwrap();
        assert_eq!(e.host, "::1");
        assert_eq!(e.authority, "[::1]:9000");
        assert_eq!(e.addr, Some("[::1]:9000".parse().unwrap()));
    }

    #[test]
    fn rejects_other_schemes_and_garbage() {
        for url in ["https://h/x", "ftp://h/", "not a url", "http://user:pw@h/"] {
            let err = Endpoint::parse(url).unwrap_err();
            assert!(matches!(err, Error::Url { .. }), "{url}: {err}");
        }
    }
}
