//! Which way is better for each metric. Upstream guessed by substring (`throughput` →
//! higher); dfx-perf uses an explicit table and refuses names it does not know.

use serde::Serialize;

/// Whether larger or smaller values are better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Throughputs, `rtfx`, goodput, `completed`, continuity rates.
    HigherIsBetter,
    /// Latencies, RTF, TTFP/TTFT/TPOT/ITL, durations of waiting, memory.
    LowerIsBetter,
}

/// The direction of a result key, or `None` for names the table does not know (a config
/// error).
pub fn direction_of(metric: &str) -> Option<Direction> {
    let _ = metric;
    None
}
