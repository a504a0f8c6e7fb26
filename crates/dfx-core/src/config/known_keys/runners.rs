//! The key tables of the entries of upstream's other runners and dfx-perf's own: native
//! duplex, diffusion (the runner's keys besides the script's flags), contract and the
//! `capacity` object of an omni entry.

use super::case::name_chars;
use super::spec::KeyType::{AnyJson, Bool, Integer, Number, Object, String, StringList};
use super::spec::{Bound, EXTERNAL_DIFFUSION, KeySpec, rate_text};
use crate::bounds::MAX_CONCURRENCY;

const DUPLEX: &str = "native bench (native duplex)";

/// `sessions` of a native-duplex entry: the check reads its largest value from this row.
pub(crate) const DUPLEX_SESSIONS: KeySpec = KeySpec::new(
    "sessions",
    Integer,
    "none (the native bench needs it)",
    DUPLEX,
)
.bounded(Bound::Integer {
    min: 1,
    max: MAX_CONCURRENCY,
});

/// `turns` of a native-duplex entry.
pub(crate) const DUPLEX_TURNS: KeySpec =
    KeySpec::new("turns", Integer, "none (the native bench needs it)", DUPLEX).bounded(
        Bound::Integer {
            min: 1,
            max: 10_000,
        },
    );

/// `warmups` of a native-duplex entry.
pub(crate) const DUPLEX_WARMUPS: KeySpec =
    KeySpec::new("warmups", Integer, "none", DUPLEX).bounded(Bound::Integer { min: 1, max: 1_000 });

/// `repeats` of a native-duplex entry (at least 2: upstream's rule).
pub(crate) const DUPLEX_REPEATS: KeySpec =
    KeySpec::new("repeats", Integer, "none", DUPLEX).bounded(Bound::Integer { min: 2, max: 1_000 });

/// `timeout_s` of a native-duplex entry (every wait of a turn): the check reads its
/// longest value from this row.
pub(crate) const DUPLEX_TIMEOUT: KeySpec = KeySpec::new(
    "timeout_s",
    Number,
    "180",
    "native bench (native duplex: every wait of a turn)",
)
.bounded(Bound::Positive {
    max: crate::runner_keys::MAX_DUPLEX_TIMEOUT_S,
    unit: "s",
});

/// Keys of upstream's native-duplex runner entries (`run_native_duplex_benchmark.py`).
pub const NATIVE_DUPLEX: &[KeySpec] = &[
    KeySpec::new("name", String, "none (required)", "trial name").bounded(Bound::Rule(name_chars)),
    KeySpec::new("workload", String, "none", DUPLEX),
    DUPLEX_SESSIONS,
    DUPLEX_TURNS,
    DUPLEX_WARMUPS,
    DUPLEX_REPEATS,
    KeySpec::new("realtime_input", Bool, "true", DUPLEX),
    DUPLEX_TIMEOUT,
    KeySpec::new(
        "profile_stages",
        StringList,
        "[]",
        "native bench: a non-empty list makes it refuse the entry (upstream profiles the \
         first measured trial with it)",
    ),
    KeySpec::new(
        "baseline",
        Object,
        "no thresholds",
        "thresholds (dfx_core::baseline)",
    ),
    KeySpec::new(
        "enabled",
        Bool,
        "true",
        "entry filter (false drops it first)",
    ),
];

/// Keys of diffusion entries besides the script's flags and the runner keys: the
/// runner's own (`dataset`, `task`, `name`, `baseline`, `enabled`) and `warmup-prompt`,
/// which upstream's 2026 fixture passes (the script snapshot has no such option;
/// `docs/research` §3).
pub const DIFFUSION: &[KeySpec] = &[
    KeySpec::new(
        "dataset",
        String,
        "none",
        "trial name; diffusion script `--dataset`",
    )
    .bounded(Bound::Rule(name_chars)),
    KeySpec::new("task", String, "t2i", "endpoint by task; trial name")
        .bounded(Bound::Rule(name_chars)),
    KeySpec::new("name", String, "none", "trial name").bounded(Bound::Rule(name_chars)),
    KeySpec::new(
        "baseline",
        Object,
        "no thresholds",
        "thresholds (a baseline that cannot be read is a warning)",
    ),
    KeySpec::new(
        "enabled",
        Bool,
        "true",
        "entry filter (false drops it first)",
    ),
    KeySpec::new("warmup-prompt", AnyJson, "none", EXTERNAL_DIFFUSION),
];

/// `timeout_s` of a contract entry: the check reads its longest value from this row.
pub(crate) const CONTRACT_TIMEOUT: KeySpec =
    KeySpec::new("timeout_s", Number, "30", "native bench (per request)").bounded(
        Bound::Positive {
            max: crate::config::MAX_CONTRACT_TIMEOUT_S,
            unit: "s",
        },
    );

/// Keys a contract entry may carry (`"benchmark_runner": "contract"`).
pub const CONTRACT: &[KeySpec] = &[
    KeySpec::new("name", String, "none", "trial name"),
    KeySpec::new(
        "scenarios",
        StringList,
        "every scenario",
        "native bench (contract scenarios)",
    )
    .bounded(Bound::Rule(|| {
        format!(
            "scenario names, each once, from: {}",
            crate::contract::accepted_names()
        )
    })),
    KeySpec::new(
        "voice_lifecycle",
        Bool,
        "true",
        "native bench (false drops that scenario)",
    ),
    CONTRACT_TIMEOUT,
    KeySpec::new(
        "enabled",
        Bool,
        "true",
        "entry filter (false drops it first)",
    ),
];

const SEARCH: &str = "capacity search (dfx-harness)";

/// `capacity.max_p99_ttfp_ms`: the check reads its longest value from this row.
pub(crate) const CAP_MAX_P99: KeySpec =
    KeySpec::new("max_p99_ttfp_ms", Number, "none (required)", SEARCH).bounded(Bound::Positive {
        max: 3.6e6,
        unit: "ms",
    });

/// `capacity.min_continuity`: the check reads its range from this row.
pub(crate) const CAP_CONTINUITY: KeySpec = KeySpec::new("min_continuity", Number, "0.95", SEARCH)
    .bounded(Bound::Number {
        min: 0.0,
        max: 1.0,
        unit: "",
    });

/// `capacity.tolerance`: the check reads its range from this row.
pub(crate) const CAP_TOLERANCE: KeySpec =
    KeySpec::new("tolerance", Number, "0.1", SEARCH).bounded(Bound::Number {
        min: 0.01,
        max: 1.0,
        unit: "",
    });

/// `capacity.boundary_repeats`: the check reads its range from this row.
pub(crate) const CAP_BOUNDARY_REPEATS: KeySpec =
    KeySpec::new("boundary_repeats", Integer, "3", SEARCH)
        .bounded(Bound::Integer { min: 1, max: 20 });

/// `capacity.max_probes`: the check reads its range from this row.
pub(crate) const CAP_MAX_PROBES: KeySpec =
    KeySpec::new("max_probes", Integer, "24", SEARCH).bounded(Bound::Integer { min: 4, max: 64 });

/// The keys of an omni entry's `capacity` object (rates: the open-loop rate bounds).
pub const CAPACITY: &[KeySpec] = &[
    CAP_MAX_P99,
    CAP_CONTINUITY,
    KeySpec::new("start_rate", Number, "1", SEARCH).bounded(Bound::Rule(rate_text)),
    KeySpec::new("min_rate", Number, "0.01", SEARCH).bounded(Bound::Rule(rate_text)),
    KeySpec::new("max_rate", Number, "1024", SEARCH).bounded(Bound::Rule(rate_text)),
    CAP_TOLERANCE,
    CAP_BOUNDARY_REPEATS,
    CAP_MAX_PROBES,
];
