//! The key tables of sweep entries: upstream's runner keys (the exclude set, shared by the
//! omni and diffusion dialects), the bench flags dfx-perf reads itself, dfx-perf's load
//! keys and the stability runner's keys.

use super::case::name_chars;
use super::spec::KeyType::{
    AnyJson, Bool, Integer, IntegerList, Number, NumberList, Object, ObjectList, String,
};
use super::spec::{Bound, EXTERNAL_VLLM, KeySpec, UPSTREAM_ONLY, rate_text};
use crate::bounds::{
    MAX_BURSTINESS, MAX_COHORTS, MAX_CONCURRENCY, MAX_PERCENTILES, MAX_PROMPTS, MAX_RATE,
    MAX_REPEATS, MAX_SCHEDULE_SECONDS, MAX_TIMEOUT_SECONDS, MAX_WARMUPS, MIN_BURSTINESS,
};

const SWEEP: &str = "sweep (dfx_core::config::sweep)";
const NAMING: &str = "trial name (dfx_core::config::naming)";
const LOAD: &str = "native bench load shape (dfx_core::config::load_keys)";

/// `num_prompts`: the sweep reads its largest value from this row.
pub(crate) const NUM_PROMPTS: KeySpec = KeySpec::new("num_prompts", IntegerList, "none", SWEEP)
    .bounded(Bound::Integer {
        min: 1,
        max: MAX_PROMPTS,
    });

/// `max_concurrency`: the sweep reads its largest value from this row.
pub(crate) const MAX_CONCURRENCY_KEY: KeySpec = KeySpec::new(
    "max_concurrency",
    IntegerList,
    "none (a step needs it or `request_rate`)",
    SWEEP,
)
.bounded(Bound::Integer {
    min: 1,
    max: MAX_CONCURRENCY,
});

/// `num_warmups`: the entry check reads its largest value from this row.
pub(crate) const NUM_WARMUPS: KeySpec = KeySpec::new(
    "num_warmups",
    Integer,
    "max(2, max_concurrency)",
    "bench warmups (both benches)",
)
.bounded(Bound::Integer {
    min: 0,
    max: MAX_WARMUPS,
});

/// `repeats`: the entry check reads its largest value from this row.
pub(crate) const REPEATS: KeySpec = KeySpec::new(
    "repeats",
    Integer,
    "1 (or `--repeats`)",
    "harness repeats (dfx_core::repeats)",
)
.bounded(Bound::Integer {
    min: 1,
    max: MAX_REPEATS,
});

/// Entry keys that are never bench flags (`docs/config.md` ("Exclude set")): upstream's
/// current set (`run_benchmark.py`, 2026), which also holds the accuracy gates, the judge
/// and the warmup keys of the diffusion-style entries, then dfx-perf's own keys that the
/// external bench must not pass. [`super::EXCLUDED_KEYS`] lists their names.
pub const RUNNER: &[KeySpec] = &[
    KeySpec::new("request_rate", NumberList, "none", SWEEP).bounded(Bound::Rule(|| {
        format!(
            "{}; `(num_prompts − 1) / request_rate` at most {MAX_SCHEDULE_SECONDS} s",
            rate_text()
        )
    })),
    KeySpec::new(
        "baseline",
        Object,
        "no thresholds",
        "thresholds (dfx_core::baseline)",
    ),
    NUM_PROMPTS,
    MAX_CONCURRENCY_KEY,
    NUM_WARMUPS,
    KeySpec::new("task", String, "none", NAMING).bounded(Bound::Rule(name_chars)),
    KeySpec::new(
        "enabled",
        Bool,
        "true",
        "entry filter (false drops it first)",
    ),
    KeySpec::new("eval_phase", String, "none", NAMING).bounded(Bound::Rule(name_chars)),
    KeySpec::new(
        "trust_remote_code",
        AnyJson,
        "false",
        "external bench (`--trust-remote-code` when truthy)",
    ),
    EXPECTED_DUPLEX_TURNS,
    MIN_IA_QTF1,
    KeySpec::new(
        "omniinteract_aggregate_min_ia_qtf1",
        Number,
        "none",
        UPSTREAM_ONLY,
    ),
    KeySpec::new(
        "omniinteract_aggregate_subsets",
        AnyJson,
        "none",
        UPSTREAM_ONLY,
    ),
    KeySpec::new(
        "omniinteract_aggregate_group",
        AnyJson,
        "none",
        UPSTREAM_ONLY,
    ),
    KeySpec::new("judge_server_params", Object, "none", UPSTREAM_ONLY),
    KeySpec::new("name", String, "none", NAMING).bounded(Bound::Rule(name_chars)),
    KeySpec::new("enable_negative_prompt", AnyJson, "none", UPSTREAM_ONLY),
    KeySpec::new("random_request_config", AnyJson, "none", UPSTREAM_ONLY),
    KeySpec::new("num_input_images", AnyJson, "none", UPSTREAM_ONLY),
    KeySpec::new("warmup_requests", AnyJson, "none", UPSTREAM_ONLY),
    KeySpec::new("warmup_concurrency", AnyJson, "none", UPSTREAM_ONLY),
    KeySpec::new("warmup_num_inference_steps", AnyJson, "none", UPSTREAM_ONLY),
    // dfx-perf's own key (native bench only); vllm bench always opens fresh connections.
    KeySpec::new(
        "connection",
        String,
        "\"fresh\" (or `--connection`)",
        "native bench connections",
    )
    .bounded(Bound::Rule(|| "\"fresh\" or \"pooled\"".into())),
    // dfx-perf's own key: the harness runs the step that many times.
    REPEATS,
    KeySpec::new(
        "capacity",
        Object,
        "a sweep",
        "capacity search (dfx_core::config::capacity)",
    ),
];

/// `expected_duplex_audio_turns_per_session` (upstream's runner check of a realtime duplex
/// step): the entry check reads its range from this row.
pub(crate) const EXPECTED_DUPLEX_TURNS: KeySpec = KeySpec::new(
    "expected_duplex_audio_turns_per_session",
    Integer,
    "none",
    "native bench (realtime duplex)",
)
.bounded(Bound::Integer {
    min: 0,
    max: u32::MAX as u64,
});

/// `omniinteract_min_ia_qtf1` (an F1 score): the entry check reads its range from this row.
pub(crate) const MIN_IA_QTF1: KeySpec = KeySpec::new(
    "omniinteract_min_ia_qtf1",
    Number,
    "no gate",
    "OmniInteract gate (dfx_core::checks)",
)
.bounded(Bound::Number {
    min: 0.0,
    max: 1.0,
    unit: "",
});

/// `burstiness`: the entry check reads its range from this row.
pub(crate) const BURSTINESS: KeySpec = KeySpec::new(
    "burstiness",
    Number,
    "1 (Poisson arrivals)",
    "open-loop arrivals (both benches)",
)
.bounded(Bound::Number {
    min: MIN_BURSTINESS,
    max: MAX_BURSTINESS,
    unit: "",
});

/// `seed`: the entry check reads its largest value from this row.
pub(crate) const SEED: KeySpec = KeySpec::new(
    "seed",
    Integer,
    "`--seed` (0)",
    "prompt order and arrivals (both benches)",
)
.bounded(Bound::Integer {
    min: 0,
    max: u64::MAX,
});

/// The `vllm bench serve` flags dfx-perf reads and checks itself (the native bench runs
/// them; the external bench passes them on). Each is also in the generated flag group.
pub const READ_FLAGS: &[KeySpec] = &[
    KeySpec::new(
        "dataset_name",
        String,
        "none",
        "native bench dataset; trial name",
    )
    .bounded(Bound::Rule(name_chars)),
    KeySpec::new("backend", String, "none", "bench choice (`--bench auto`)"),
    KeySpec::new("endpoint", String, "none", "native bench request path"),
    KeySpec::new(
        "dataset_path",
        String,
        "none",
        "native bench dataset lookup",
    ),
    KeySpec::new("seed_tts_locale", String, "\"en\"", "native bench dataset"),
    KeySpec::new(
        "percentile-metrics",
        String,
        "upstream's set",
        "result percentiles (dfx_core::percentiles)",
    ),
    KeySpec::new(
        "metric-percentiles",
        String,
        "99",
        "result percentiles (dfx_core::percentiles)",
    )
    .bounded(Bound::Rule(|| {
        format!("up to {MAX_PERCENTILES} comma-separated numbers from 0 to 100")
    })),
    KeySpec::new("extra_body", Object, "none", "native bench request body"),
    KeySpec::new(
        "goodput",
        AnyJson,
        "none (no `request_goodput`)",
        "goodput and SLO attainment (dfx_core::goodput; native bench, or `--goodput` of the external bench)",
    )
    .bounded(Bound::Rule(|| {
        "`KEY:VALUE` pairs (a string or a list): `ttft`, `tpot`, `e2el` (ms), and for the \
         native bench `audio_ttfp` (ms), `audio_rtf` (ratio), `continuity` (ms); each value a \
         positive finite number, each name once"
            .to_string()
    })),
    KeySpec::new("seed_tts_wer_eval", Bool, "false", EXTERNAL_VLLM),
    BURSTINESS,
    SEED,
];

/// `open_loop_max_concurrency`: the load check reads its largest value from this row.
pub(crate) const OPEN_LOOP_MAX_CONCURRENCY: KeySpec = KeySpec::new(
    "open_loop_max_concurrency",
    Integer,
    "none (uncapped)",
    LOAD,
)
.bounded(Bound::Integer {
    min: 1,
    max: MAX_CONCURRENCY,
});

/// dfx-perf's own entry keys (omni dialect) besides those in [`RUNNER`]: the load
/// shape, cap and gate of the native bench (`docs/config.md`). `LOAD_KEYS`
/// lists their names.
pub const LOAD_SHAPE: &[KeySpec] = &[
    KeySpec::new("ramp_start_rate", Number, "none", LOAD).bounded(Bound::Rule(|| {
        format!(
            "{}; the shaped schedule at most {MAX_SCHEDULE_SECONDS} s",
            rate_text()
        )
    })),
    KeySpec::new("burst", Bool, "false", LOAD),
    KeySpec::new("soak_duration_s", Number, "none", LOAD).bounded(Bound::Rule(|| {
        format!(
            "more than 0, at most {MAX_SCHEDULE_SECONDS} s, and `num_prompts / \
             soak_duration_s` at most {MAX_RATE} req/s"
        )
    })),
    KeySpec::new("cohorts", ObjectList, "none", LOAD).bounded(Bound::Rule(|| {
        format!(
            "1 – {MAX_COHORTS} cohorts; `offset_s` 0 – {MAX_SCHEDULE_SECONDS} s; a cohort's \
             `request_rate` {}; `num_prompts` adding up to the step's",
            rate_text()
        )
    })),
    KeySpec::new("saturation", String, "\"wait\"", LOAD)
        .bounded(Bound::Rule(|| crate::load::Saturation::ACCEPTED.into())),
    OPEN_LOOP_MAX_CONCURRENCY,
];

/// Flags upstream's 2026 configs pass that vllm-omni added after 0.30
/// (`docs/research/upstream-2026.md` §6.1: the `openai-realtime-chat` backend).
pub const NEWER_FLAGS: &[KeySpec] = &[KeySpec::new(
    "seed_tts_reference_as_input",
    Bool,
    "false",
    EXTERNAL_VLLM,
)];

/// `num_prompts_per_batch`: the stability check reads its largest value from this row.
pub(crate) const SOAK_BATCH: KeySpec = KeySpec::new(
    "num_prompts_per_batch",
    Integer,
    "20",
    "soak batches (both benches)",
)
.bounded(Bound::Integer {
    min: 1,
    max: MAX_PROMPTS,
});

/// `duration_sec`: the stability check reads its longest value from this row.
pub(crate) const SOAK_DURATION: KeySpec = KeySpec::new(
    "duration_sec",
    Number,
    "300",
    "soak duration (both benches)",
)
.bounded(Bound::Positive {
    max: MAX_TIMEOUT_SECONDS,
    unit: "s",
});

/// Keys of upstream's stability runner entries (`tests/dfx/stability`).
pub const STABILITY: &[KeySpec] = &[SOAK_DURATION, SOAK_BATCH];
