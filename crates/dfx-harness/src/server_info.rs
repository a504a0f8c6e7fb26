//! What a trial knows about the server it runs against (the pool fills it, the runner and
//! the progress read it).

/// What a trial needs to know about the server it runs against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerInfo {
    pub base_url: String,
    pub host: String,
    pub port: u16,
    /// The start's folder relative to the run folder (`servers/01-test_x`).
    pub rel_dir: String,
    /// Whether this trial started the server (false: reused).
    pub started: bool,
    /// The judge server's `http://host:port`, when the case has one and it is up.
    pub judge_url: Option<String>,
    /// The server's process group on this machine, when the suite started it.
    pub process_group: Option<u32>,
}
