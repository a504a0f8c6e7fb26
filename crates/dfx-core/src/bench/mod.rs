//! The bench seam: something that offers one sweep step of load to a ready server and
//! returns an upstream-compatible result document (the native load generator, the external
//! `vllm bench serve --omni` driver, or a fake in tests).

use std::path::PathBuf;

use crate::plan::{BenchEntry, Trial};
use crate::result::ResultDoc;

mod exit;
mod unsupported;

pub use exit::{BenchExit, PreflightError, ProcessEnd};
pub use unsupported::{MissingProgram, Unsupported};

/// Which bench produced a result (`result_source` in result.json).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BenchKind {
    /// dfx-perf's own tokio + reqwest load generator.
    Native,
    /// `vllm bench serve --omni`.
    Vllm,
    /// Upstream's `benchmarks/diffusion/diffusion_benchmark_serving.py`.
    Diffusion,
}

impl BenchKind {
    /// `native` / `vllm` / `diffusion`.
    pub fn as_str(self) -> &'static str {
        match self {
            BenchKind::Native => "native",
            BenchKind::Vllm => "vllm",
            BenchKind::Diffusion => "diffusion",
        }
    }
}

/// Everything a bench needs for one trial beyond its own settings.
#[derive(Debug, Clone)]
pub struct BenchContext<'a> {
    /// The trial to run (its entry, sweep step, server spec and thresholds).
    pub trial: &'a Trial,
    /// `http://host:port` of the ready server.
    pub base_url: String,
    /// Host part of `base_url` (what the external bench gets as `--host`).
    pub host: String,
    /// Port part of `base_url` (`--port`).
    pub port: u16,
    /// The trial's folder: the bench writes `records.jsonl`, `bench.log` and any file of
    /// its own here. `result.json` is written by the harness.
    pub out_dir: PathBuf,
    /// Hardware label of the run (`H100`, `SIM`, `na`).
    pub hardware: String,
    /// `http://host:port` of the case's judge server, when it has one and it is up
    /// (`--omniinteract-judge-base-url` of the external bench).
    pub judge_url: Option<String>,
    /// The server's process group when the suite runs it on this machine (resource
    /// samples from `/proc`).
    pub server_group: Option<u32>,
}

/// How the line a bench puts first in [`BenchOutcome::errors`] starts when its stall rule
/// ended the step (`server stalled: no stream made progress …`); the harness classes such a
/// trial as stalled.
pub const STALLED_PREFIX: &str = "server stalled: ";

/// What a bench run produced.
#[derive(Debug, Clone, Default)]
pub struct BenchOutcome {
    /// The result document; `None` when the bench left no result (the harness then writes
    /// the template fallback and fails the trial).
    pub result: Option<ResultDoc>,
    /// How the bench ended when that matters for the user: the external bench's exit
    /// status, or a native error. `None` when it ran to completion.
    pub exit: Option<BenchExit>,
    /// Tail of the bench's own log (`bench.log`), shown on failure.
    pub log_tail: String,
    /// The first distinct request errors, for the completion failure message.
    pub errors: Vec<String>,
    /// Set when the load generator could not offer the configured load (open-loop lag
    /// beyond the threshold); the trial fails with this reason.
    pub invalid_load: Option<String>,
}

/// A load generator.
pub trait Bench {
    /// Which bench this is; recorded as `result_source` in result.json.
    fn kind(&self) -> BenchKind;
    /// Whether this bench can run `entry` (backend/dataset implemented, executable found).
    /// The harness asks before anything starts and gives a trial only to a bench that
    /// said yes (`dfx_harness::select`), so [`Bench::preflight`] and [`Bench::run`] need
    /// not ask again.
    fn supports(&self, entry: &BenchEntry) -> Result<(), Unsupported>;
    /// Checks the inputs of a trial this bench will run (datasets and the like) before
    /// any server starts; the harness turns an error into a config error (exit 2).
    /// `Ok` carries a note for the log. The default checks nothing. Called only for an
    /// entry [`Bench::supports`] accepted.
    fn preflight(&self, _trial: &Trial) -> Result<Option<String>, PreflightError> {
        Ok(None)
    }
    /// Runs one sweep step against a ready server. Never panics on server misbehaviour:
    /// failures are counted in the result. Called only for an entry [`Bench::supports`]
    /// accepted.
    fn run(&self, ctx: &BenchContext<'_>) -> BenchOutcome;
}
