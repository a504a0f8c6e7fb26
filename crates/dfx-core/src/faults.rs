//! The simulator's fault grammar (`docs/simulator.md` ("Faults")), here so the suite can check
//! `--sim-faults` without linking the simulator. Each fault is switchable by
//! `--sim-fault SPEC`, by `DFX_SIM_FAULTS=SPEC[,SPEC…]`, or by its own variable
//! `DFX_SIM_FAULT_<NAME>=VALUE` (name upper-cased, `-` → `_`; boolean faults take
//! `1/true/yes/on` or `0/false/no/off`).

use crate::lenient::{BoolRule, parse_bool};
use serde::Serialize;

/// Every fault, as parsed. `Default` is "no fault".
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Faults {
    /// `exit-at-startup=N`: exit with status N before listening.
    pub exit_at_startup: Option<u8>,
    /// `never-ready`: `/health` never answers 200.
    pub never_ready: bool,
    /// `ready-after=SECS`: `/health` answers 200 only after SECS wall-clock seconds (not
    /// divided by the speed factor: it models process start-up, not GPU work).
    pub ready_after_s: Option<f64>,
    /// `crash-at-inflight=N`: exit (status 1) when N speech requests are in flight.
    pub crash_at_inflight: Option<usize>,
    /// `error500=P`: answer HTTP 500 to a share P (0–1) of speech requests, chosen by a
    /// seeded draw per request in arrival order.
    pub error500: Option<f64>,
    /// `stall-after-chunks=N`: streams stop sending (connection kept open) after N chunks.
    pub stall_after_chunks: Option<u32>,
    /// `truncate-after-chunks=N`: streams are cut (connection aborted, no terminating
    /// chunk) after N chunks.
    pub truncate_after_chunks: Option<u32>,
    /// `odd-bytes`: every audio body carries one extra byte at its end.
    pub odd_bytes: bool,
    /// `ignore-sigterm`: SIGTERM is logged and ignored (only SIGKILL stops the server).
    pub ignore_sigterm: bool,
    /// `fork-child`: start a `sleep` child in the server's process group and leave it
    /// running at exit, for the launcher's group teardown to clean up.
    pub fork_child: bool,
    /// `slowdown=F`: every service time × F (an injected regression).
    pub slowdown: Option<f64>,
    /// `realtime-exhausted=N`: the first N realtime `session.update`s are answered with an
    /// `error` of code `resource_exhausted` and the socket is closed (no free session slot).
    pub realtime_exhausted: Option<u32>,
    /// `realtime-drop-after-chunks=N`: a realtime session's socket is dropped (no close
    /// frame, no `response.done`) after N audio deltas.
    pub realtime_drop_after_chunks: Option<u32>,
    /// `realtime-event-seq`: every realtime server event carries an increasing
    /// `server_event_seq` (clients acknowledge it with `session.event_ack`).
    pub realtime_event_seq: bool,
    /// `broken-error-envelope`: every error reply (status ≥ 400) carries FastAPI's bare
    /// `{"detail": "<message>"}` instead of the OpenAI envelope (a server that broke its
    /// error contract; the contract runner's scenarios catch it).
    pub broken_error_envelope: bool,
}

/// A fault spec that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid fault `{spec}` (from {origin}): {reason}")]
pub struct FaultError {
    /// The spec as given.
    pub spec: String,
    /// Where it came from (flag or variable).
    pub origin: String,
    /// What is wrong and what is accepted.
    pub reason: FaultReason,
}

/// Why one fault's value is refused; `Display` says what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultReason {
    /// The fault takes a value and has none (what the value is).
    #[error("needs a value ({0})")]
    NeedsValue(&'static str),
    /// The value is not a finite number.
    #[error("`{value}` is not a number ({what})")]
    NotNumber {
        /// The value as given.
        value: String,
        /// What the value is.
        what: &'static str,
    },
    /// The value is not a non-negative integer.
    #[error("`{value}` is not a non-negative integer ({what})")]
    NotCount {
        /// The value as given.
        value: String,
        /// What the value is.
        what: &'static str,
    },
    /// A chunk (or session) count above the largest accepted.
    #[error("chunks must be from 0 to {MAX_COUNT}")]
    ChunksRange,
    /// A boolean fault with a value that is no switch.
    #[error("expects 1/true/yes/on or 0/false/no/off")]
    NotSwitch,
    /// `exit-at-startup` above 255.
    #[error("exit status must be 0–255")]
    ExitStatusRange,
    /// `ready-after` outside its range.
    #[error("seconds must be from 0 to {MAX_READY_AFTER_S}")]
    ReadyAfterRange,
    /// `crash-at-inflight` outside its range.
    #[error("must be from 1 to {MAX_COUNT}")]
    InFlightRange,
    /// `error500` outside `[0, 1]`.
    #[error("share must be between 0 and 1")]
    ShareRange,
    /// `slowdown` outside its range.
    #[error("factor must be from {MIN_SLOWDOWN} to {MAX_SLOWDOWN}")]
    SlowdownRange,
    /// No fault of that name.
    #[error("unknown fault; known: {}", FAULT_NAMES.join(", "))]
    Unknown,
}

/// Longest `ready-after` delay, seconds (a week, like every timeout of the suite).
pub(crate) const MAX_READY_AFTER_S: f64 = 604_800.0;
/// Largest count a fault takes (`crash-at-inflight`, `*-after-chunks`).
pub(crate) const MAX_COUNT: u64 = 1_000_000;
/// `slowdown` factor range.
pub(crate) const MIN_SLOWDOWN: f64 = 0.01;
/// See [`MIN_SLOWDOWN`].
pub(crate) const MAX_SLOWDOWN: f64 = 100.0;

/// Fault names with their value syntax, for messages and `--help`.
pub const FAULT_NAMES: &[&str] = &[
    "exit-at-startup=N",
    "never-ready",
    "ready-after=SECS",
    "crash-at-inflight=N",
    "error500=SHARE",
    "stall-after-chunks=N",
    "truncate-after-chunks=N",
    "odd-bytes",
    "ignore-sigterm",
    "fork-child",
    "slowdown=FACTOR",
    "realtime-exhausted=N",
    "realtime-drop-after-chunks=N",
    "realtime-event-seq",
    "broken-error-envelope",
];

impl Faults {
    /// Applies a comma-separated list of `name[=value]` specs; `origin` names the source
    /// in errors (`--sim-fault`, `DFX_SIM_FAULTS`, …).
    pub fn apply_list(&mut self, list: &str, origin: &str) -> Result<(), FaultError> {
        for spec in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, value) = match spec.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim())),
                None => (spec, None),
            };
            self.apply(name, value, origin)
                .map_err(|reason| FaultError {
                    spec: spec.to_string(),
                    origin: origin.to_string(),
                    reason,
                })?;
        }
        Ok(())
    }

    /// Applies one fault by name.
    pub fn apply(
        &mut self,
        name: &str,
        value: Option<&str>,
        _origin: &str,
    ) -> Result<(), FaultReason> {
        let num = |what: &'static str| -> Result<f64, FaultReason> {
            let v = value.ok_or(FaultReason::NeedsValue(what))?;
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| FaultReason::NotNumber {
                    value: v.to_string(),
                    what,
                })
        };
        let count = |what: &'static str| -> Result<u64, FaultReason> {
            let v = value.ok_or(FaultReason::NeedsValue(what))?;
            v.parse::<u64>().map_err(|_| FaultReason::NotCount {
                value: v.to_string(),
                what,
            })
        };
        let chunks = || -> Result<u32, FaultReason> {
            let n = count("chunks")?;
            u32::try_from(n)
                .ok()
                .filter(|n| u64::from(*n) <= MAX_COUNT)
                .ok_or(FaultReason::ChunksRange)
        };
        let flag = || -> Result<bool, FaultReason> {
            parse_bool(value.unwrap_or(""), BoolRule::SWITCH).ok_or(FaultReason::NotSwitch)
        };
        match name.to_ascii_lowercase().replace('_', "-").as_str() {
            "exit-at-startup" => {
                let n = count("exit status 0–255")?;
                let n = u8::try_from(n).map_err(|_| FaultReason::ExitStatusRange)?;
                self.exit_at_startup = Some(n);
            }
            "never-ready" => self.never_ready = flag()?,
            "ready-after" => {
                let s = num("seconds")?;
                if !(0.0..=MAX_READY_AFTER_S).contains(&s) {
                    return Err(FaultReason::ReadyAfterRange);
                }
                self.ready_after_s = Some(s);
            }
            "crash-at-inflight" => {
                let n = count("in-flight requests ≥ 1")?;
                if !(1..=MAX_COUNT).contains(&n) {
                    return Err(FaultReason::InFlightRange);
                }
                self.crash_at_inflight = usize::try_from(n).ok();
            }
            "error500" => {
                let p = num("share 0–1")?;
                if !(0.0..=1.0).contains(&p) {
                    return Err(FaultReason::ShareRange);
                }
                self.error500 = Some(p);
            }
            "stall-after-chunks" => self.stall_after_chunks = Some(chunks()?),
            "truncate-after-chunks" => self.truncate_after_chunks = Some(chunks()?),
            "odd-bytes" => self.odd_bytes = flag()?,
            "ignore-sigterm" => self.ignore_sigterm = flag()?,
            "fork-child" => self.fork_child = flag()?,
            "slowdown" => {
                let f = num("factor > 0")?;
                if !(MIN_SLOWDOWN..=MAX_SLOWDOWN).contains(&f) {
                    return Err(FaultReason::SlowdownRange);
                }
                self.slowdown = Some(f);
            }
            "realtime-exhausted" => self.realtime_exhausted = Some(chunks()?),
            "realtime-drop-after-chunks" => self.realtime_drop_after_chunks = Some(chunks()?),
            "realtime-event-seq" => self.realtime_event_seq = flag()?,
            "broken-error-envelope" => self.broken_error_envelope = flag()?,
            _ => return Err(FaultReason::Unknown),
        }
        Ok(())
    }

    /// Reads `DFX_SIM_FAULTS` then every `DFX_SIM_FAULT_<NAME>` through `env`.
    pub fn apply_env(&mut self, env: &dyn Fn(&str) -> Option<String>) -> Result<(), FaultError> {
        if let Some(list) = env("DFX_SIM_FAULTS") {
            self.apply_list(&list, "DFX_SIM_FAULTS")?;
        }
        for spec in FAULT_NAMES {
            let name = spec.split('=').next().unwrap_or(spec);
            let var = format!(
                "DFX_SIM_FAULT_{}",
                name.to_ascii_uppercase().replace('-', "_")
            );
            if let Some(v) = env(&var) {
                self.apply(name, Some(&v), &var)
                    .map_err(|reason| FaultError {
                        spec: format!("{var}={v}"),
                        origin: var.clone(),
                        reason,
                    })?;
            }
        }
        Ok(())
    }

    /// The service-time multiplier (1 without the slow-down fault).
    pub fn service_factor(&self) -> f64 {
        self.slowdown.unwrap_or(1.0)
    }

    /// Whether any fault is on.
    pub fn any(&self) -> bool {
        *self != Faults::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn list_parses_every_fault() {
        let mut f = Faults::default();
        f.apply_list(
            "exit-at-startup=3, never-ready, ready-after=1.5, crash-at-inflight=4, error500=0.25, \
             stall-after-chunks=2, truncate-after-chunks=3, odd-bytes, ignore-sigterm, fork-child, slowdown=1.5, \
             realtime-exhausted=2, realtime-drop-after-chunks=5, realtime-event-seq, broken-error-envelope",
            "--sim-fault",
        )
        .unwrap();
        assert_eq!(f.exit_at_startup, Some(3));
        assert!(f.never_ready && f.odd_bytes && f.ignore_sigterm && f.fork_child);
        assert_eq!(f.ready_after_s, Some(1.5));
        assert_eq!(f.crash_at_inflight, Some(4));
        assert_eq!(f.error500, Some(0.25));
        assert_eq!(f.stall_after_chunks, Some(2));
        assert_eq!(f.truncate_after_chunks, Some(3));
        assert_eq!(f.service_factor(), 1.5);
        assert_eq!(f.realtime_exhausted, Some(2));
        assert_eq!(f.realtime_drop_after_chunks, Some(5));
        assert!(f.realtime_event_seq && f.broken_error_envelope);
    }

    #[test]
    fn errors_say_what_and_where() {
        let mut f = Faults::default();
        let e = f.apply_list("slowdown=fast", "--sim-fault").unwrap_err();
        assert!(
            e.to_string().contains("slowdown=fast") && e.to_string().contains("--sim-fault"),
            "{e}"
        );
        let e = f.apply_list("explode", "DFX_SIM_FAULTS").unwrap_err();
        assert!(
            e.to_string().contains("unknown fault") && e.to_string().contains("odd-bytes"),
            "{e}"
        );
        assert!(f.apply_list("error500=2", "x").is_err());
        assert!(f.apply_list("exit-at-startup=300", "x").is_err());
        assert!(f.apply_list("crash-at-inflight=0", "x").is_err());
    }

    #[test]
    fn env_vars_one_per_fault_and_list() {
        let env: HashMap<&str, &str> = [
            ("DFX_SIM_FAULTS", "odd-bytes,slowdown=2"),
            ("DFX_SIM_FAULT_SLOWDOWN", "1.5"),
            ("DFX_SIM_FAULT_IGNORE_SIGTERM", "yes"),
            ("DFX_SIM_FAULT_ODD_BYTES", "0"),
        ]
        .into_iter()
        .collect();
        let mut f = Faults::default();
        f.apply_env(&|k| env.get(k).map(|v| v.to_string())).unwrap();
        assert_eq!(
            f.slowdown,
            Some(1.5),
            "the per-fault variable wins over the list"
        );
        assert!(f.ignore_sigterm);
        assert!(!f.odd_bytes);
        let bad: HashMap<&str, &str> = [("DFX_SIM_FAULT_NEVER_READY", "maybe")]
            .into_iter()
            .collect();
        let e = Faults::default()
            .apply_env(&|k| bad.get(k).map(|v| v.to_string()))
            .unwrap_err();
        assert!(e.to_string().contains("DFX_SIM_FAULT_NEVER_READY"), "{e}");
    }
}
