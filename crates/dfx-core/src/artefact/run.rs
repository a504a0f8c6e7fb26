//! `run.json`: what ran, where and when. Written once when the run starts and again when
//! it closes (`finished`, `interrupted`, `server_versions`).

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where a flag's value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FlagSource {
    /// The command line.
    Cli,
    /// A `DFX_*` environment variable.
    Env,
    /// The flag's default.
    Default,
}

/// One dfx-perf flag as given: its name, value (JSON) and source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlagRecord {
    /// `--bench`, `--server`, … (without the dashes).
    pub flag: String,
    /// The value as JSON (strings, numbers, booleans, lists).
    pub value: Value,
    /// Where it came from.
    pub source: FlagSource,
}

/// How `--partition` deals server groups to shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PartitionMethod {
    /// Round-robin over the selected groups in plan order.
    Count,
    /// A stable hash of each group's identity.
    Hash,
}

/// The shard a run executes (`partition`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ShardRecord {
    /// `count:1/2`.
    pub spec: String,
    /// How groups were dealt.
    pub method: PartitionMethod,
    /// `K` of `K/N`, 1-based.
    pub shard: u32,
    /// `N` of `K/N`.
    pub total: u32,
    /// Server groups holding a selected trial, in the whole selection.
    pub server_groups: usize,
    /// … and in this shard.
    pub server_groups_in_shard: usize,
}

/// A config file of the run: its path as given (what dfx-perf writes), or an object with
/// the path and a content hash (hand-made or converted run folders).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ConfigFileRef {
    /// The path as given on the command line or found in `perf-configs/`.
    Path(String),
    /// A path with its content hash.
    Described {
        /// The path.
        path: String,
        /// Hex sha256 of the content (`hash` and `digest` are read too).
        #[serde(default, alias = "hash", alias = "digest")]
        sha256: Option<String>,
    },
}

impl ConfigFileRef {
    /// The file's path.
    pub fn path(&self) -> &str {
        match self {
            ConfigFileRef::Path(p) | ConfigFileRef::Described { path: p, .. } => p,
        }
    }

    /// Its file name, plus its content hash (first 12 hex digits) when recorded with it.
    pub fn identity(&self) -> String {
        let name = file_name(self.path());
        match self {
            ConfigFileRef::Described {
                sha256: Some(h), ..
            } => format!("{name} ({})", &h[..h.len().min(12)]),
            _ => name,
        }
    }
}

fn file_name(p: &str) -> String {
    Path::new(p)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.to_string())
}

/// The whole of `run.json`. Every field has a default so that run folders written by an
/// older dfx-perf (or by hand) still load.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct RunInfo {
    /// The run folder's name.
    pub run_id: Option<String>,
    /// dfx-perf's version.
    pub dfx_perf_version: Option<String>,
    /// `git rev-parse HEAD` of the project, when git is available.
    pub git_sha: Option<String>,
    /// The hardware label (`H100`, `SIM`, `na`).
    pub hardware: Option<String>,
    /// Server mode (`auto`, `sim`, `attach`, `fake`).
    pub server: Option<String>,
    /// The launcher's name.
    pub launcher: Option<String>,
    /// `--sim-speed`: results measured on a sped-up simulator are labelled as such.
    pub sim_speed: Option<f64>,
    /// `--bench` (`auto`, `native`, `vllm`).
    pub bench_tool: Option<String>,
    /// `--assert-baseline` was given.
    pub assert_baseline: bool,
    /// Every dfx-perf flag that has a value, with its source (cli, env, default).
    pub flags: Vec<FlagRecord>,
    /// The full argument list.
    pub argv: Vec<String>,
    /// The perf-config files of the run.
    pub config_files: Vec<ConfigFileRef>,
    /// sha256 of each config file as loaded, keyed by its path as in `config_files`.
    pub config_hashes: BTreeMap<String, String>,
    /// `--partition`: the shard this run executed, `null` for a whole run.
    pub partition: Option<ShardRecord>,
    /// The machine's host name.
    pub hostname: Option<String>,
    /// RFC 3339 start time.
    pub started: Option<String>,
    /// RFC 3339 end time (`null` while running).
    pub finished: Option<String>,
    /// The run was interrupted (SIGINT / SIGTERM) before its last trial.
    pub interrupted: bool,
    /// Trials in the plan.
    pub trials_planned: usize,
    /// Trials selected by the filters.
    pub trials_selected: usize,
    /// Config loader warnings and flag notes.
    pub warnings: Vec<String>,
    /// GPU facts from `nvidia-smi` (`name`, `driver`, `memory_mib`, `count`), when present.
    pub gpu: Option<Value>,
    /// Versions the servers reported on `GET /version` (`vllm`, `vllm_omni`,
    /// `dfx-perf-sim`, …), filled in when the run closes.
    pub server_versions: BTreeMap<String, String>,
    /// Only in a folder written by `dfx-perf merge`: the shard runs it was made of, each
    /// with its own flags (the merged run's `flags` are those every shard shares).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<MergedShard>,
    /// Only in a merged folder: the `K`s of the partition that were not merged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shards_missing: Vec<u64>,
}

/// One shard run of a merged run (`merged_from`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct MergedShard {
    /// The shard's run id.
    pub run_id: String,
    /// Its run folder as merged, canonical (a `latest` link resolved to the folder it
    /// pointed to at merge time).
    pub dir: String,
    /// Its `partition` (`spec`, `method`, `shard`, `total`, …) as its `run.json` had it.
    pub partition: Option<Value>,
    /// The host it ran on.
    pub hostname: Option<String>,
    /// When it started (RFC 3339).
    pub started: Option<String>,
    /// When it finished (RFC 3339).
    pub finished: Option<String>,
    /// Trials in its `summary.json`.
    pub trials: usize,
    /// Its flags with their sources, as its `run.json` recorded them.
    pub flags: Vec<FlagRecord>,
    /// Its command line.
    pub argv: Vec<String>,
}

impl RunInfo {
    /// One comparable identity per config file: its file name, plus its content hash
    /// when `run.json` records one, sorted.
    pub fn config_identities(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .config_files
            .iter()
            .map(ConfigFileRef::identity)
            .collect();
        out.sort();
        out
    }
}
