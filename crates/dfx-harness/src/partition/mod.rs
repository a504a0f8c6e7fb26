//! `--partition count:K/N | hash:K/N` (cargo-nextest's spelling): one shard of the plan,
//! so a nightly that outgrows one runner runs on a CI matrix and `dfx-perf merge`
//! combines the shards' run folders.
//!
//! The unit is the **server group** (`PlannedTrial::server_group`: a run of consecutive
//! trials sharing one server configuration), never a single trial, so a shard starts each
//! of its servers once and no server's trials are split across runners.
//!
//! - `count:K/N`: the groups that hold at least one selected trial (after the name filter,
//!   `--skip`, `--ignored`), dealt round-robin in plan order, as nextest deals tests: the
//!   1st, (N+1)th, … to shard 1. Balanced; it moves groups between shards when the
//!   selection changes.
//! - `hash:K/N`: a group goes to shard `FNV-1a-64(identity) mod N + 1`, the identity being
//!   the compact JSON of the test name and the server parameters (`group_identity`).
//!   The same group always lands in the same shard, on every machine and Rust version,
//!   whatever else the plan or the filter holds; shards may be uneven (or empty).
//!
//! Trials outside the shard are filtered out (not listed as ignored): `--list` shows the
//! shard's trials only, they do not count as ignored in `summary.json`, and
//! `--assert-baseline` does not fail them as trials that cannot run.

use std::fmt;
use std::str::FromStr;

use dfx_core::plan::Trial;
use serde_json::json;

use crate::select::PlannedTrial;
/// The server group of every trial, numbered as the suite's planning numbers them: what
/// [`deal`] deals.
pub use crate::select::server_groups;

/// Largest shard count accepted.
pub const MAX_SHARDS: u32 = 1024;

/// What `--partition` accepts, for error messages.
pub(crate) const ACCEPTED: &str =
    "count:K/N or hash:K/N with N from 1 to 1024 and K from 1 to N (e.g. count:1/4)";

/// How groups are dealt to shards (the type run.json records).
pub(crate) use dfx_core::artefact::PartitionMethod as Method;

/// One shard: `K` of `N` by a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Partition {
    pub method: Method,
    /// `K`, 1-based.
    pub shard: u32,
    /// `N`.
    pub total: u32,
}

/// Why a `--partition` value is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PartitionError {
    #[error("not of the form METHOD:K/N")]
    Syntax,
    #[error("unknown method `{0}`")]
    Method(String),
    #[error("`{0}` is not a whole number")]
    Number(String),
    #[error("N = {0} shards is out of range")]
    Total(u32),
    #[error("shard K = {shard} is not one of 1 to N = {total}")]
    Shard { shard: u32, total: u32 },
}

impl FromStr for Partition {
    type Err = PartitionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (method, rest) = s.trim().split_once(':').ok_or(PartitionError::Syntax)?;
        let method = match method.trim().to_ascii_lowercase().as_str() {
            "count" => Method::Count,
            "hash" => Method::Hash,
            other => return Err(PartitionError::Method(other.into())),
        };
        let (k, n) = rest.split_once('/').ok_or(PartitionError::Syntax)?;
        let number = |t: &str| {
            t.trim()
                .parse::<u32>()
                .map_err(|_| PartitionError::Number(t.trim().into()))
        };
        let (shard, total) = (number(k)?, number(n)?);
        if !(1..=MAX_SHARDS).contains(&total) {
            return Err(PartitionError::Total(total));
        }
        if !(1..=total).contains(&shard) {
            return Err(PartitionError::Shard { shard, total });
        }
        Ok(Partition {
            method,
            shard,
            total,
        })
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = match self.method {
            Method::Count => "count",
            Method::Hash => "hash",
        };
        write!(f, "{m}:{}/{}", self.shard, self.total)
    }
}

/// The shard a run executes, as `run.json` records it (`partition`).
pub(crate) use dfx_core::artefact::ShardRecord;

/// The outcome of applying a partition (or none) to a selection.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sharded {
    /// Plan indices of the selected trials in the shard, in plan order.
    pub selected: Vec<usize>,
    /// Per plan index: whether its server group belongs to the shard (what libtest-mimic
    /// is given; the rest is left out entirely).
    pub in_shard: Vec<bool>,
    /// `None` without `--partition`.
    pub record: Option<ShardRecord>,
}

/// Applies `partition` to the `selected` plan indices (in plan order).
pub(crate) fn apply(
    partition: Option<&Partition>,
    planned: &[PlannedTrial],
    selected: &[usize],
) -> Sharded {
    let Some(p) = partition else {
        return Sharded {
            selected: selected.to_vec(),
            in_shard: vec![true; planned.len()],
            record: None,
        };
    };
    let shards = assign(p, planned, selected);
    let mine = |g: usize| shards.iter().any(|&(group, s)| group == g && s == p.shard);
    let in_shard: Vec<bool> = planned.iter().map(|t| mine(t.server_group)).collect();
    Sharded {
        selected: selected.iter().copied().filter(|&i| in_shard[i]).collect(),
        record: Some(ShardRecord {
            spec: p.to_string(),
            method: p.method,
            shard: p.shard,
            total: p.total,
            server_groups: shards.len(),
            server_groups_in_shard: shards.iter().filter(|(_, s)| *s == p.shard).count(),
        }),
        in_shard,
    }
}

/// `(server group, shard)` for every group holding a selected trial, in plan order.
pub(crate) fn assign(
    p: &Partition,
    planned: &[PlannedTrial],
    selected: &[usize],
) -> Vec<(usize, u32)> {
    let groups: Vec<usize> = planned.iter().map(|t| t.server_group).collect();
    assign_groups(p, &groups, |i| &planned[i].trial, selected)
}

/// [`assign`] over the server group of every plan index (`groups`) and a trial lookup.
fn assign_groups<'a>(
    p: &Partition,
    groups: &[usize],
    trial: impl Fn(usize) -> &'a Trial,
    selected: &[usize],
) -> Vec<(usize, u32)> {
    let mut dealt: Vec<usize> = selected.iter().map(|&i| groups[i]).collect();
    dealt.dedup();
    dealt
        .iter()
        .enumerate()
        .map(|(pos, &g)| {
            let shard = match p.method {
                Method::Count => pos as u64 % u64::from(p.total),
                Method::Hash => {
                    let first = groups.iter().position(|&x| x == g);
                    let identity = first.map(|i| group_identity(trial(i))).unwrap_or_default();
                    dfx_core::hash::fnv1a64(identity.as_bytes()) % u64::from(p.total)
                }
            };
            (g, shard as u32 + 1)
        })
        .collect()
}

/// The `selected` plan indices (in plan order) of every shard of `METHOD:K/total`, dealt
/// exactly as the suite's `--partition` deals them; element `K - 1` is shard `K`.
/// `total` is clamped to 1 to [`MAX_SHARDS`].
pub fn deal(
    method: dfx_core::artefact::PartitionMethod,
    total: u32,
    trials: &[Trial],
    selected: &[usize],
) -> Vec<Vec<usize>> {
    let total = total.clamp(1, MAX_SHARDS);
    let p = Partition {
        method,
        shard: 1,
        total,
    };
    let groups = server_groups(trials);
    let shard_of: Vec<(usize, u32)> = assign_groups(&p, &groups, |i| &trials[i], selected);
    let mut out = vec![Vec::new(); total as usize];
    for &i in selected {
        if let Some(&(_, k)) = shard_of.iter().find(|(g, _)| *g == groups[i]) {
            out[k as usize - 1].push(i);
        }
    }
    out
}

/// The identity a group is hashed by: the compact JSON of the test name and the server
/// parameters of its first trial (type, model, deploy name, stage overrides, serve args,
/// extra CLI args, `use_omni`, env). No paths or file contents: equal on every machine.
pub(crate) fn group_identity(trial: &Trial) -> String {
    let s = &trial.server;
    json!({
        "test_name": trial.test_name,
        "server_type": s.server_type,
        "model": s.model,
        "deploy": s.deploy.as_ref().map(|d| (&d.name, d.edited)),
        "stage_overrides": s.stage_overrides,
        "serve_args": s.serve_args,
        "extra_cli_args": s.extra_cli_args,
        "use_omni": s.use_omni,
        "env": s.env,
    })
    .to_string()
}

#[cfg(test)]
mod tests;
