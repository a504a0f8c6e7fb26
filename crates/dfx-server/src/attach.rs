//! Attach mode (`--server-url`): benchmark a server that is already running. Nothing is
//! launched or stopped; readiness is still checked.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use dfx_core::server::{
    ExitStatus, RunningServer, ServerError, ServerLauncher, ServerSpec, StartContext, Unavailable,
};

use crate::probe::{Probe, http_get};

/// How long an attached server gets to answer `/health` 200 (it is supposed to be up).
pub(crate) const ATTACH_READY_TIMEOUT: Duration = Duration::from_secs(10);
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(250);

/// A launcher that starts nothing and hands out the server at a fixed URL.
#[derive(Debug, Clone)]
pub struct AttachLauncher {
    url: String,
    host: String,
    port: u16,
}

impl AttachLauncher {
    /// Validates `url` (`http://host:port`, an optional trailing `/`; default port 80).
    pub fn new(url: &str) -> Result<Self, ServerError> {
        let bad = |why: &str| {
            ServerError::InvalidSpec(format!(
                "--server-url `{url}`: {why} (expected http://HOST:PORT, e.g. http://127.0.0.1:8091)"
            ))
        };
        let rest = url.trim().strip_prefix("http://").ok_or_else(|| {
            if url.starts_with("https://") {
                bad("https is not supported")
            } else {
                bad("must start with http://")
            }
        })?;
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.contains(['/', '?', '#', '@']) {
            return Err(bad("a path, query or credentials are not accepted"));
        }
        let (host, port) =
            split_host_port(authority).ok_or_else(|| bad("cannot read host and port"))?;
        if host.is_empty() {
            return Err(bad("the host is empty"));
        }
        let port: u16 = match port {
            None => 80,
            Some(p) => p
                .parse()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| bad("the port must be 1-65535"))?,
        };
        let shown = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        Ok(AttachLauncher {
            url: format!("http://{shown}:{port}"),
            host: host.into(),
            port,
        })
    }

    /// The normalised base URL.
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// `host:port`, `[v6]:port`, `host` → (host, port).
fn split_host_port(authority: &str) -> Option<(&str, Option<&str>)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return match after {
            "" => Some((host, None)),
            p => Some((host, Some(p.strip_prefix(':')?))),
        };
    }
    match authority.split_once(':') {
        Some((h, p)) if !p.contains(':') => Some((h, Some(p))),
        Some(_) => None,
        None => Some((authority, None)),
    }
}

impl ServerLauncher for AttachLauncher {
    fn name(&self) -> &str {
        "attach"
    }

    fn availability(&self, _spec: &ServerSpec) -> Result<(), Unavailable> {
        Ok(())
    }

    fn start(
        &mut self,
        _spec: &ServerSpec,
        ctx: &StartContext,
    ) -> Result<Box<dyn RunningServer>, ServerError> {
        // A total deadline: every probe ends by it, so a `/health` that trickles fails.
        let deadline = Instant::now() + ATTACH_READY_TIMEOUT.min(ctx.ready_timeout);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let probe_timeout = PROBE_TIMEOUT.min(left).max(Duration::from_millis(50));
            let reason = match http_get(&self.host, self.port, "/health", probe_timeout) {
                Probe::Status(200 | 404) => {
                    return Ok(Box::new(AttachedServer {
                        url: self.url.clone(),
                        host: self.host.clone(),
                        port: self.port,
                    }));
                }
                Probe::Status(code) => format!("GET /health answered {code}"),
                Probe::Down(e) => format!("GET /health failed: {e}"),
            };
            if Instant::now() >= deadline {
                return Err(ServerError::AttachNotReady {
                    url: self.url.clone(),
                    reason,
                });
            }
            std::thread::sleep(POLL);
        }
    }
}

/// A server dfx-perf did not start: never stopped, never reported as exited.
#[derive(Debug)]
struct AttachedServer {
    url: String,
    host: String,
    port: u16,
}

impl RunningServer for AttachedServer {
    fn base_url(&self) -> String {
        self.url.clone()
    }
    fn host(&self) -> String {
        self.host.clone()
    }
    fn port(&self) -> u16 {
        self.port
    }
    fn exit_status(&mut self) -> Option<ExitStatus> {
        None
    }
    fn log_tail(&self, _lines: usize) -> String {
        String::new()
    }
    fn log_path(&self) -> Option<PathBuf> {
        None
    }
    fn stop(self: Box<Self>) -> Result<(), ServerError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_validated_and_normalised() {
        let ok = |u: &str| AttachLauncher::new(u).unwrap().url().to_string();
        assert_eq!(ok("http://127.0.0.1:8091"), "http://127.0.0.1:8091");
        assert_eq!(ok("http://localhost:8091/"), "http://localhost:8091");
        assert_eq!(ok("http://[::1]:9000"), "http://[::1]:9000");
        assert_eq!(ok("http://gpu-box"), "http://gpu-box:80");
        for (u, why) in [
            ("127.0.0.1:8091", "must start with http://"),
            ("https://x:1", "https is not supported"),
            ("http://x:1/v1", "a path"),
            ("http://x:0", "1-65535"),
            ("http://x:99999", "1-65535"),
            ("http://:80", "host is empty"),
            ("http://a:b:c", "cannot read host and port"),
        ] {
            let e = AttachLauncher::new(u).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains(u), "{u}: {e}");
        }
    }
}
