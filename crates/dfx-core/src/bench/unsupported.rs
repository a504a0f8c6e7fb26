//! Why a bench cannot run an entry ([`Unsupported`]) and why its program cannot be found
//! ([`MissingProgram`]): values with the data of each case, rendered (`Display`) only
//! where a reason is shown (listings, the summary, `verdict.json`).

use std::fmt;
use std::path::PathBuf;

use crate::config::known_keys::LOAD_KEYS;
use crate::config::{CONTRACT_EXTERNAL, NATIVE_DUPLEX_EXTERNAL};
use crate::plan::Dialect;

/// Why a bench cannot run an entry. Each variant carries what its message names; the
/// lists (`accepted`, `implemented`) are the bench's own constants.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unsupported {
    /// External bench: `load` keys are dfx-perf's own.
    #[error(
        "the load keys ({}) are dfx-perf's own, run by the native bench only \
         (`--bench native`): vllm bench serve --omni has no load shapes or saturation gate \
         of that meaning",
        LOAD_KEYS.join(", ")
    )]
    LoadKeysExternal,
    /// Native bench: a stability soak for another backend.
    #[error(
        "native bench runs stability soak entries for backend {implemented} only; got {}",
        none(.backend)
    )]
    SoakBackend {
        /// The entry's `backend`, if it sets one.
        backend: Option<String>,
        /// The one backend the native soak supports.
        implemented: &'static str,
    },
    /// Native bench: an entry of a dialect it has no runner for.
    #[error("native bench runs sweep entries of the omni dialect, not {dialect:?} entries")]
    NativeDialect {
        /// The entry's dialect.
        dialect: Dialect,
    },
    /// Native bench: a backend / dataset pair it does not implement.
    #[error(
        "native bench implements backend {implemented} with datasets {}; got backend {} dataset {}",
        .accepted.join(", "), none(.backend), none(.dataset)
    )]
    BackendDataset {
        /// The entry's `backend`, if it sets one.
        backend: Option<String>,
        /// The entry's `dataset`, if it sets one.
        dataset: Option<String>,
        /// The backend the native bench implements for this kind of entry.
        implemented: &'static str,
        /// The datasets it implements with that backend.
        accepted: &'static [&'static str],
    },
    /// Native bench, `openai-chat-omni`: a dataset it does not implement.
    #[error(
        "native bench runs openai-chat-omni with datasets {} only; got dataset {}",
        .accepted.join(", "), none(.dataset)
    )]
    ChatDataset {
        /// The entry's `dataset`, if it sets one.
        dataset: Option<String>,
        /// The datasets the native chat runner implements.
        accepted: &'static [&'static str],
    },
    /// Native bench, `openai-chat-omni`: another endpoint.
    #[error(
        "native bench runs openai-chat-omni on endpoint {expected} only; got {}",
        .endpoint.as_deref().unwrap_or("(none: upstream's default /v1/completions)")
    )]
    ChatEndpoint {
        /// The entry's `endpoint`; `None` means upstream's default `/v1/completions`.
        endpoint: Option<String>,
        /// The one endpoint the native chat runner sends to.
        expected: &'static str,
    },
    /// Native bench: a realtime backend whose protocol is newer than what it knows.
    #[error(
        "backend {backend} is newer than vllm-omni 0.30.0 and its protocol is not available \
         to dfx-perf (how realtime_trigger explicit/vad start a turn: the commit event, the \
         server-VAD session keys, the events it answers with); the native bench implements \
         {} only",
        .implemented.join(", ")
    )]
    RealtimeProtocol {
        /// The entry's backend, as the bench names it.
        backend: &'static str,
        /// The realtime backends whose protocol the native bench implements.
        implemented: &'static [&'static str],
    },
    /// Native bench: a realtime backend outside an omni-dialect sweep.
    #[error("native bench runs {backend} sweep entries of the omni dialect only")]
    RealtimeDialect {
        /// The entry's realtime backend.
        backend: String,
    },
    /// Native bench: a realtime backend on another endpoint.
    #[error("backend {backend} needs endpoint {expected}; got {}", none(.endpoint))]
    RealtimeEndpoint {
        /// The entry's `backend`.
        backend: String,
        /// The entry's `endpoint`, if it sets one.
        endpoint: Option<String>,
        /// The endpoint that backend needs.
        expected: &'static str,
    },
    /// Native bench: the OmniInteract variant of the realtime duplex backend.
    #[error(
        "the OmniInteract variant of openai-realtime-duplex (the dataset's 16 kHz clips with \
         1 fps JPEG video_frames, --omniinteract-ref-audio, the explicit final commit and the \
         judge's accuracy scoring) is not implemented by the native bench"
    )]
    RealtimeOmniInteract,
    /// Native bench: a realtime backend with a dataset it does not implement.
    #[error(
        "native bench runs {backend} with datasets {}; got dataset {}",
        .accepted.join(", "), none(.dataset)
    )]
    RealtimeDataset {
        /// The entry's `backend`.
        backend: String,
        /// The entry's `dataset`, if it sets one.
        dataset: Option<String>,
        /// The datasets the native bench implements for that backend.
        accepted: &'static [&'static str],
    },
    /// Native-duplex runner: not a native-duplex entry.
    #[error("not a native-duplex entry")]
    NotNativeDuplex,
    /// Native-duplex runner: another workload.
    #[error(
        "native-duplex runner implements workload {implemented} only (upstream's rule); got {}",
        none(.workload)
    )]
    DuplexWorkload {
        /// The entry's `workload`, if it sets one.
        workload: Option<String>,
        /// The one workload the native-duplex runner implements.
        implemented: &'static str,
    },
    /// Native-duplex runner: `profile_stages`.
    #[error(
        "profile_stages (upstream's /start_profile and /stop_profile around the first measured \
         trial) is not implemented by the native bench"
    )]
    ProfileStages,
    /// An entry key the bench reads has a value it cannot use (the key's own message).
    #[error("{0}")]
    InvalidEntry(String),
    /// External bench: native-duplex entries.
    #[error("{}", NATIVE_DUPLEX_EXTERNAL)]
    NativeDuplexExternal,
    /// External bench: contract entries.
    #[error("{}", CONTRACT_EXTERNAL)]
    ContractExternal,
    /// Both benches: diffusion stability entries ([`crate::plan::BenchEntry::is_diffusion_soak`]).
    #[error(
        "diffusion stability entries: upstream soaks them with diffusion_benchmark_serving.py \
         batches; dfx-perf does not run those yet"
    )]
    DiffusionSoak,
    /// External bench: diffusion-dialect entries.
    #[error(
        "diffusion-dialect entries are run upstream by run_diffusion_benchmark.py \
         (diffusion_benchmark_serving.py), not by `vllm bench serve --omni`"
    )]
    DiffusionOnVllm,
    /// Diffusion driver: an entry of another dialect.
    #[error("the diffusion driver runs diffusion-dialect entries only, not {dialect:?} entries")]
    DiffusionDialect {
        /// The entry's dialect.
        dialect: Dialect,
    },
    /// Diffusion driver: no endpoint to send to.
    #[error(
        "no diffusion endpoint: the entry's task has no default endpoint and the case sets no \
         `benchmark_endpoint`"
    )]
    NoDiffusionEndpoint,
    /// The fake bench (tests, `--bench fake`): only audio steps.
    #[error("the fake bench models audio steps only ({dialect:?} dialect)")]
    FakeDialect {
        /// The entry's dialect.
        dialect: Dialect,
    },
    /// The bench's program (or script, or interpreter) cannot be used.
    #[error(transparent)]
    Program(#[from] MissingProgram),
}

/// Why an external bench's program, script or interpreter cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MissingProgram {
    /// An explicit path that `which` refuses: `what` (`vllm executable`), `check` (the
    /// flag and variable to look at).
    #[error("{what} {} cannot be used ({error}); check {check}", .path.display())]
    Unusable {
        /// What cannot be used, for the message (`vllm executable`, `Python interpreter`).
        what: &'static str,
        /// The configured path.
        path: PathBuf,
        /// Why `which` refused it.
        error: String,
        /// The flag and environment variable that set the path (`--vllm-bin / DFX_VLLM_BIN`).
        check: String,
    },
    /// Nothing configured and nothing on `PATH`.
    #[error("{what} is not on PATH; {hint}")]
    NotOnPath {
        /// What is missing, for the message (`` `vllm` (vllm-omni's bench) ``).
        what: &'static str,
        /// How to provide it (the install hint and the flag / variable to set).
        hint: String,
    },
    /// Neither a script nor a checkout configured.
    #[error("no {what}: {hint}")]
    NotConfigured {
        /// What is missing, for the message (`diffusion benchmark script`).
        what: &'static str,
        /// The flags and variables that configure it.
        hint: String,
    },
    /// A configured file that is not a file.
    #[error("{what} {} is not a file; check {check}", .path.display())]
    NotAFile {
        /// What the file should be (`diffusion benchmark script`).
        what: &'static str,
        /// The configured path.
        path: PathBuf,
        /// The flags that set the path.
        check: &'static str,
    },
    /// The path cannot be made absolute (the I/O error's text).
    #[error("{0}")]
    Path(String),
}

/// `(none)` for a missing value.
fn none(v: &Option<String>) -> NoneOr<'_> {
    NoneOr(v.as_deref())
}

struct NoneOr<'a>(Option<&'a str>);

impl fmt::Display for NoneOr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.unwrap_or("(none)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_todays_texts() {
        let u = Unsupported::BackendDataset {
            backend: Some("openai-chat".into()),
            dataset: None,
            implemented: "openai-audio-speech",
            accepted: &["seed-tts", "seed-tts-text"],
        };
        assert_eq!(
            u.to_string(),
            "native bench implements backend openai-audio-speech with datasets seed-tts, \
             seed-tts-text; got backend openai-chat dataset (none)"
        );
        let u = Unsupported::ChatEndpoint {
            endpoint: None,
            expected: "/v1/chat/completions",
        };
        assert!(
            u.to_string()
                .ends_with("got (none: upstream's default /v1/completions)")
        );
        let p = MissingProgram::NotOnPath {
            what: "`vllm` (vllm-omni's bench)",
            hint: "install it".into(),
        };
        assert_eq!(
            Unsupported::from(p).to_string(),
            "`vllm` (vllm-omni's bench) is not on PATH; install it"
        );
        assert_eq!(
            Unsupported::NativeDialect {
                dialect: Dialect::Diffusion
            }
            .to_string(),
            "native bench runs sweep entries of the omni dialect, not Diffusion entries"
        );
    }

    #[test]
    fn fixed_texts_are_the_former_literals() {
        let cases: [(Unsupported, &str); 7] = [
            (
                Unsupported::RealtimeProtocol {
                    backend: "openai-realtime-chat",
                    implemented: &["a", "b"],
                },
                "backend openai-realtime-chat is newer than vllm-omni 0.30.0 and its protocol is not available to dfx-perf (how realtime_trigger explicit/vad start a turn: the commit event, the server-VAD session keys, the events it answers with); the native bench implements a, b only",
            ),
            (
                Unsupported::RealtimeOmniInteract,
                "the OmniInteract variant of openai-realtime-duplex (the dataset's 16 kHz clips with 1 fps JPEG video_frames, --omniinteract-ref-audio, the explicit final commit and the judge's accuracy scoring) is not implemented by the native bench",
            ),
            (
                Unsupported::ProfileStages,
                "profile_stages (upstream's /start_profile and /stop_profile around the first measured trial) is not implemented by the native bench",
            ),
            (
                Unsupported::DiffusionSoak,
                "diffusion stability entries: upstream soaks them with diffusion_benchmark_serving.py batches; dfx-perf does not run those yet",
            ),
            (
                Unsupported::LoadKeysExternal,
                &format!(
                    "the load keys ({}) are dfx-perf's own, run by the native bench only (`--bench native`): vllm bench serve --omni has no load shapes or saturation gate of that meaning",
                    LOAD_KEYS.join(", ")
                ),
            ),
            (
                Unsupported::DiffusionOnVllm,
                "diffusion-dialect entries are run upstream by run_diffusion_benchmark.py (diffusion_benchmark_serving.py), not by `vllm bench serve --omni`",
            ),
            (
                Unsupported::NoDiffusionEndpoint,
                "no diffusion endpoint: the entry's task has no default endpoint and the case sets no `benchmark_endpoint`",
            ),
        ];
        for (u, want) in cases {
            assert_eq!(u.to_string(), want);
        }
        assert_eq!(
            Unsupported::NativeDuplexExternal.to_string(),
            NATIVE_DUPLEX_EXTERNAL
        );
        let script = MissingProgram::NotConfigured {
            what: "diffusion benchmark script",
            hint: "pass --diffusion-script PATH (S) or --vllm-omni-dir DIR (D)".into(),
        };
        assert_eq!(
            script.to_string(),
            "no diffusion benchmark script: pass --diffusion-script PATH (S) or --vllm-omni-dir DIR (D)"
        );
    }

    #[test]
    fn compared_as_values() {
        let a = Unsupported::DuplexWorkload {
            workload: Some("x".into()),
            implemented: "w",
        };
        assert_eq!(a.clone(), a);
        assert_ne!(a, Unsupported::ProfileStages);
    }
}
