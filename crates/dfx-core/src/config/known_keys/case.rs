//! The key tables of a case, its `server_params` and its `judge_server_params`.

use super::spec::KeyType::{AnyJson, Bool, Number, Object, ObjectList, String, StringList};
use super::spec::{Bound, KeySpec};
use crate::bounds::{MAX_NAME_CHARS, MAX_TIMEOUT_SECONDS};

/// `test_name`: bounded like every name a trial name is built from.
pub(crate) const TEST_NAME: KeySpec = KeySpec::new(
    "test_name",
    String,
    "none (required)",
    "trial name (dfx_core::config::naming)",
)
.bounded(Bound::Rule(name_chars));

/// The bound of the keys a trial name is built from.
pub(super) fn name_chars() -> std::string::String {
    format!("at most {MAX_NAME_CHARS} characters")
}

/// Case keys: the fields dfx-perf reads, upstream's 2026 case keys and the case-level
/// OmniInteract gate.
pub const CASE: &[KeySpec] = &[
    TEST_NAME,
    KeySpec::new(
        "server_params",
        Object,
        "none (required)",
        "server launcher (dfx-server)",
    ),
    KeySpec::new(
        "benchmark_params",
        ObjectList,
        "none (required); or `{\"$ref\": file}`",
        "entries (dfx_core::config::entry)",
    ),
    KeySpec::new(
        "mark",
        AnyJson,
        "no marks",
        "`--mark` selection (dfx_core::config::marks)",
    ),
    KeySpec::new(
        "server_type",
        String,
        "\"vllm-omni\"",
        "server launcher (dfx-server)",
    ),
    KeySpec::new("description", String, "none", "none (documentation)"),
    KeySpec::new(
        "benchmark_runner",
        String,
        "upstream's `run_benchmark`",
        "runner choice: contract, native-duplex (dfx_core::config::runners)",
    ),
    KeySpec::new(
        "benchmark_endpoint",
        String,
        "by task (diffusion)",
        "diffusion endpoint (dfx_core::config::entry)",
    ),
    KeySpec::new(
        "benchmark_backend",
        String,
        "none",
        "legacy spelling of `benchmark_endpoint`",
    ),
    KeySpec::new(
        "judge_server_params",
        Object,
        "no judge",
        "judge server (dfx_core::config::judge)",
    ),
    KeySpec::new(
        "omniinteract_aggregate_min_ia_qtf1",
        Number,
        "no pooled gate",
        "pooled OmniInteract gate (dfx_core::checks)",
    ),
];

/// `server_params.ready_timeout_s`: the check reads its range from this row.
pub(crate) const READY_TIMEOUT_S: KeySpec = KeySpec::new(
    "ready_timeout_s",
    Number,
    "`--ready-timeout` (1200 s)",
    "server launcher readiness wait",
)
.bounded(Bound::Number {
    min: 1.0,
    max: MAX_TIMEOUT_SECONDS,
    unit: "s",
});

/// `server_params` keys (upstream's and dfx-perf's `ready_timeout_s`).
pub const SERVER_PARAMS: &[KeySpec] = &[
    KeySpec::new(
        "model",
        String,
        "none (required)",
        "server launcher (dfx-server)",
    ),
    KeySpec::new(
        "stage_config_name",
        String,
        "no deploy file",
        "deploy file resolution (dfx_core::deploy)",
    ),
    KeySpec::new(
        "update",
        Object,
        "no edits",
        "deploy file edits (dfx_core::deploy)",
    ),
    KeySpec::new(
        "delete",
        AnyJson,
        "no edits",
        "deploy file edits (dfx_core::deploy)",
    ),
    KeySpec::new(
        "stage_overrides",
        Object,
        "none",
        "server launcher (`--stage-overrides`)",
    ),
    KeySpec::new(
        "serve_args",
        Object,
        "none",
        "server launcher (serve flags)",
    ),
    KeySpec::new(
        "extra_cli_args",
        StringList,
        "none",
        "server launcher (appended arguments)",
    ),
    KeySpec::new("use_omni", Bool, "true", "server launcher (`--omni`)"),
    KeySpec::new(
        "trust_remote_code",
        Bool,
        "false",
        "external bench (`--trust-remote-code`)",
    ),
    KeySpec::new("env", Object, "none", "server launcher (environment)"),
    READY_TIMEOUT_S,
];

/// `judge_server_params` keys (upstream's OmniInteract judge).
pub const JUDGE: &[KeySpec] = &[
    KeySpec::new("model", String, "none (required)", "judge server launcher"),
    KeySpec::new(
        "use_omni",
        Bool,
        "false",
        "judge server launcher (`--omni`)",
    ),
    KeySpec::new(
        "cuda_visible_devices",
        AnyJson,
        "\"1\"",
        "judge server launcher (device indices)",
    ),
    KeySpec::new(
        "extra_cli_args",
        StringList,
        "none",
        "judge server launcher",
    ),
    KeySpec::new(
        "required",
        Bool,
        "true",
        "harness (a judge that fails to start fails the case)",
    ),
];
