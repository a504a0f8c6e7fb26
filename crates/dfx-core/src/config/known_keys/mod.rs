//! The names a perf-config may use, and the check that refuses any other with the closest
//! known names: case keys, `server_params` keys and entry keys. An entry key is one of
//! upstream's runner keys (its exclude set, the runners' own keys), a flag of the `vllm
//! bench serve --omni` version the project tracks (a list extracted from its argparse,
//! `assets/vllm_bench_serve_flags.txt`), a flag of upstream's diffusion benchmark script
//! (diffusion entries, `assets/diffusion_benchmark_flags.txt`) or one of dfx-perf's own.
//! A key that argparse (`allow_abbrev`) would read as a longer flag is refused with the
//! flag it would become.

use std::sync::LazyLock;

use serde_json::{Map, Value};

use crate::diag::{Ctx, Errs};
use crate::suggest;

/// Entry keys that are never bench flags (`docs/config.md` ("Exclude set")): upstream's
/// current set (`run_benchmark.py`, 2026), which also holds the accuracy gates, the judge
/// and the warmup keys of the diffusion-style entries, then dfx-perf's own keys that the
/// external bench must not pass.
pub const EXCLUDED_KEYS: &[&str] = &[
    "request_rate",
    "baseline",
    "num_prompts",
    "max_concurrency",
    "num_warmups",
    "task",
    "enabled",
    "eval_phase",
    "trust_remote_code",
    "expected_duplex_audio_turns_per_session",
    "omniinteract_min_ia_qtf1",
    "omniinteract_aggregate_min_ia_qtf1",
    "omniinteract_aggregate_subsets",
    "omniinteract_aggregate_group",
    "judge_server_params",
    "name",
    "enable_negative_prompt",
    "random_request_config",
    "num_input_images",
    "warmup_requests",
    "warmup_concurrency",
    "warmup_num_inference_steps",
    // dfx-perf's own key (native bench only); vllm bench always opens fresh connections.
    "connection",
    // dfx-perf's own key: the harness runs the step that many times.
    "repeats",
    "capacity",
];

/// dfx-perf's own entry keys (omni dialect) besides those in [`EXCLUDED_KEYS`]: the load
/// shape, cap and gate of the native bench (`docs/config.md`).
const OWN_ENTRY_KEYS: &[&str] = crate::load::LOAD_KEYS;

/// Keys of upstream's stability runner entries (`tests/dfx/stability`).
const STABILITY_KEYS: &[&str] = &["duration_sec", "num_prompts_per_batch"];

/// Flags upstream's 2026 configs pass that vllm-omni added after 0.30
/// (`docs/research/upstream-2026.md` §6.1: the `openai-realtime-chat` backend).
const NEWER_FLAGS: &[&str] = &["seed_tts_reference_as_input"];

/// Keys of upstream's native-duplex runner entries (`run_native_duplex_benchmark.py`).
pub(crate) const NATIVE_DUPLEX_KEYS: &[&str] = &[
    "name",
    "workload",
    "sessions",
    "turns",
    "warmups",
    "repeats",
    "realtime_input",
    "baseline",
    "enabled",
];

/// Keys of diffusion entries besides the script's flags: the runner's own (`dataset`,
/// `task`, `name`, `baseline`, `enabled`) and `warmup-prompt`, which upstream's 2026
/// fixture passes (the script snapshot has no such option; `docs/research` §3).
const DIFFUSION_OWN_KEYS: &[&str] = &[
    "dataset",
    "task",
    "name",
    "baseline",
    "enabled",
    "warmup-prompt",
];

/// Case keys: the fields dfx-perf reads, upstream's 2026 case keys and the case-level
/// OmniInteract gate.
pub(crate) const CASE_KEYS: &[&str] = &[
    "test_name",
    "server_params",
    "benchmark_params",
    "mark",
    "server_type",
    "description",
    "benchmark_runner",
    "benchmark_endpoint",
    "benchmark_backend",
    "judge_server_params",
    "omniinteract_aggregate_min_ia_qtf1",
];

/// `server_params` keys (upstream's and dfx-perf's `ready_timeout_s`).
pub(crate) const SERVER_PARAMS_KEYS: &[&str] = &[
    "model",
    "stage_config_name",
    "update",
    "delete",
    "stage_overrides",
    "serve_args",
    "extra_cli_args",
    "use_omni",
    "trust_remote_code",
    "env",
    "ready_timeout_s",
];

/// Every list of names a perf-config may use, as (where the key goes, what the list is,
/// its names): the generated reference (`docs/reference/config-keys.md`) prints them.
pub fn key_scopes() -> Vec<(&'static str, &'static str, &'static [&'static str])> {
    vec![
        (
            "case",
            "the keys of a case (one element of the file's list)",
            CASE_KEYS,
        ),
        (
            "server_params",
            "the server of a case (and of `judge_server_params`)",
            SERVER_PARAMS_KEYS,
        ),
        (
            "entry",
            "runner keys: never passed to a bench as flags (the exclude set)",
            EXCLUDED_KEYS,
        ),
        (
            "entry",
            "dfx-perf's load-shape keys (native bench)",
            OWN_ENTRY_KEYS,
        ),
        ("entry", "stability (soak) entries", STABILITY_KEYS),
        (
            "entry",
            "flags newer than the tracked `vllm bench serve --omni`",
            NEWER_FLAGS,
        ),
        (
            "entry",
            "long options of the tracked `vllm bench serve --omni`, without `--`",
            vllm_bench_flags(),
        ),
        (
            "native-duplex entry",
            "upstream's native-duplex runner",
            NATIVE_DUPLEX_KEYS,
        ),
        (
            "diffusion entry",
            "the diffusion runner's own keys",
            DIFFUSION_OWN_KEYS,
        ),
        (
            "diffusion entry",
            "long options of upstream's diffusion benchmark script, without `--`",
            diffusion_flags(),
        ),
    ]
}

/// The long options (without `--`) of a flag list file: one a line, `#` comments.
fn read_flags(text: &'static str) -> Vec<&'static str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.strip_prefix("--"))
        .collect()
}

/// `vllm bench serve --omni` 0.30's long options, without `--`.
pub fn vllm_bench_flags() -> &'static [&'static str] {
    static FLAGS: LazyLock<Vec<&'static str>> =
        LazyLock::new(|| read_flags(include_str!("../../../assets/vllm_bench_serve_flags.txt")));
    &FLAGS
}

/// Upstream's diffusion benchmark script's long options, without `--`.
pub fn diffusion_flags() -> &'static [&'static str] {
    static FLAGS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
        read_flags(include_str!(
            "../../../assets/diffusion_benchmark_flags.txt"
        ))
    });
    &FLAGS
}

/// A key as the flag it renders to: `_` → `-` (upstream's rule for both benches).
fn as_flag(key: &str) -> String {
    key.replace('_', "-")
}

/// Which set of keys an entry is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    /// Omni dialect and stability entries: `vllm bench serve` flags and runner keys.
    Omni,
    /// Diffusion dialect: the diffusion script's flags.
    Diffusion,
    /// The native-duplex runner's entries.
    NativeDuplex,
    /// Stability entries written for a diffusion server (kebab-case keys): the
    /// stability runner's keys, the diffusion script's flags and the omni ones.
    DiffusionSoak,
}

/// The flags a diffusion soak entry may name: the diffusion script's, then `vllm bench
/// serve`'s.
fn soak_flags() -> &'static [&'static str] {
    static FLAGS: LazyLock<Vec<&'static str>> =
        LazyLock::new(|| [diffusion_flags(), vllm_bench_flags()].concat());
    &FLAGS
}

impl EntryKind {
    /// The flags of the bench that reads this kind's entries upstream.
    fn flags(self) -> &'static [&'static str] {
        match self {
            EntryKind::Omni => vllm_bench_flags(),
            EntryKind::Diffusion => diffusion_flags(),
            EntryKind::NativeDuplex => &[],
            EntryKind::DiffusionSoak => soak_flags(),
        }
    }

    /// The program that reads this kind's entries upstream, for messages.
    fn program(self) -> &'static str {
        match self {
            EntryKind::Omni => "vllm bench serve",
            EntryKind::Diffusion => "the diffusion benchmark script",
            EntryKind::NativeDuplex => "the native-duplex runner",
            EntryKind::DiffusionSoak => "the diffusion stability runner",
        }
    }

    /// The runner's and dfx-perf's own keys of this kind (besides the bench's flags).
    fn own_keys(self) -> Vec<&'static str> {
        match self {
            EntryKind::Omni => {
                [EXCLUDED_KEYS, OWN_ENTRY_KEYS, STABILITY_KEYS, NEWER_FLAGS].concat()
            }
            EntryKind::Diffusion => [EXCLUDED_KEYS, DIFFUSION_OWN_KEYS].concat(),
            EntryKind::NativeDuplex => NATIVE_DUPLEX_KEYS.to_vec(),
            EntryKind::DiffusionSoak => {
                [EXCLUDED_KEYS, DIFFUSION_OWN_KEYS, STABILITY_KEYS].concat()
            }
        }
    }

    /// A flag as configs of this kind write it: kebab-case for diffusion entries,
    /// snake_case otherwise.
    fn spelled(self, flag: &str) -> String {
        match self {
            EntryKind::Diffusion | EntryKind::DiffusionSoak => flag.to_string(),
            _ => flag.replace('-', "_"),
        }
    }

    /// Every name an entry of this kind may use, as configs write it.
    fn names(self) -> Vec<String> {
        let flags = self.flags().iter().map(|f| self.spelled(f));
        self.own_keys()
            .iter()
            .map(|s| s.to_string())
            .chain(flags)
            .collect()
    }

    /// Whether `key` (written with `_` or `-`) is one of this kind's keys.
    fn knows(self, key: &str) -> bool {
        let flag = as_flag(key);
        self.own_keys().iter().any(|k| as_flag(k) == flag) || self.flags().contains(&flag.as_str())
    }
}

/// Pushes an error for every key of `obj` that `kind` does not know, naming the closest
/// known keys, or the flag argparse would read an abbreviated key as.
pub(crate) fn check_entry_keys(
    ctx: &Ctx<'_>,
    obj: &Map<String, Value>,
    kind: EntryKind,
    errs: &mut Errs,
) {
    let mut names: Option<Vec<String>> = None;
    for key in obj.keys().filter(|k| !kind.knows(k)) {
        let names = names.get_or_insert_with(|| kind.names());
        let flag = as_flag(key);
        let longer: Vec<&&str> = kind
            .flags()
            .iter()
            .filter(|f| f.starts_with(&flag))
            .collect();
        let (problem, accepted) = match longer.as_slice() {
            [one] => (
                format!(
                    "`{key}` would be read by {} as `--{one}` (argparse abbreviation); \
                     write the full key",
                    kind.program()
                ),
                kind.spelled(one),
            ),
            [_, _, ..] => (
                format!(
                    "`{key}` is an ambiguous abbreviation for {}",
                    kind.program()
                ),
                longer
                    .iter()
                    .map(|f| format!("--{f}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            [] => (
                "unknown entry key".to_string(),
                suggest::hint(
                    key,
                    names.iter().map(String::as_str),
                    "a key listed in docs/config.md (\"Keys\")",
                ),
            ),
        };
        errs.push(ctx.err(key, problem, &accepted));
    }
}

/// Pushes an error for every key of `obj` not in `known` ("unknown `what` key"), at
/// `prefix.<key>` (or `<key>` when `prefix` is empty), with the closest known keys.
pub(crate) fn check_keys(
    ctx: &Ctx<'_>,
    (prefix, what): (&str, &str),
    obj: &Map<String, Value>,
    known: &[&str],
    errs: &mut Errs,
) {
    for key in obj.keys().filter(|k| !known.contains(&k.as_str())) {
        let at = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        errs.push(ctx.err(
            &at,
            format!("unknown {what} key"),
            &suggest::hint(key, known.iter().copied(), &known.join(", ")),
        ));
    }
}

#[cfg(test)]
mod tests;
