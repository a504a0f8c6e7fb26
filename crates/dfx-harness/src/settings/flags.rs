//! Checks of single suite flags, each pushing a [`FlagError`] that names the flag, its
//! environment variable and what is accepted.

use dfx_core::bounds::{MAX_SIM_SPEED, MAX_TIMEOUT_SECONDS, MIN_SIM_SPEED};

use super::{FlagError, SetupError, err};

/// `--hardware`: a label that names result folders and baseline files.
pub(super) fn check_hardware(h: Option<&str>, errors: &mut Vec<FlagError>) {
    let Some(h) = h else { return };
    if !dfx_core::hardware::label_syntax_ok(h) {
        errors.push(err(
            "--hardware",
            "DFX_HARDWARE",
            h,
            "a label names result folders and baselines/<LABEL>.json",
            dfx_core::hardware::LABEL_SYNTAX,
        ));
    }
}

/// The run's hardware label must be one dfx-perf knows ([`dfx_core::hardware::check_label`]:
/// built in, or named by a loaded config or baseline store): a typo would judge every
/// trial on completion only. `given` says whether it came from `--hardware` /
/// `DFX_HARDWARE` rather than detection.
pub(crate) fn known_hardware(given: bool, label: &str, named: &[String]) -> Result<(), SetupError> {
    dfx_core::hardware::check_label(label, named).map_err(|why| {
        if given {
            SetupError::HardwareGiven(err(
                "--hardware",
                "DFX_HARDWARE",
                label,
                "unknown hardware label",
                &why.to_string(),
            ))
        } else {
            SetupError::HardwareDetected {
                label: label.to_string(),
                why,
            }
        }
    })
}

/// `--sim-speed`: the simulator's speed factor.
pub(super) fn check_sim_speed(k: Option<f64>, errors: &mut Vec<FlagError>) {
    if let Some(k) = k
        && !(MIN_SIM_SPEED..=MAX_SIM_SPEED).contains(&k)
    {
        errors.push(err(
            "--sim-speed",
            "DFX_SIM_SPEED",
            k,
            "not a usable speed factor",
            &format!("a number from {MIN_SIM_SPEED} to {MAX_SIM_SPEED}, e.g. 20"),
        ));
    }
}

/// `--ready-timeout`: whole seconds, bounded.
pub(super) fn check_ready_timeout(secs: u64, errors: &mut Vec<FlagError>) {
    if secs == 0 || secs as f64 > MAX_TIMEOUT_SECONDS {
        errors.push(err(
            "--ready-timeout",
            "DFX_READY_TIMEOUT",
            secs,
            "not a usable readiness timeout",
            &format!("whole seconds from 1 to {MAX_TIMEOUT_SECONDS} (default 1200)"),
        ));
    }
}

/// Largest `--stall-floor`: 1 GiB per window.
const MAX_STALL_FLOOR: u64 = 1 << 30;

/// `--stall-floor`: bytes per stall window, from 1 to [`MAX_STALL_FLOOR`].
pub(super) fn stall_floor(bytes: Option<u64>, errors: &mut Vec<FlagError>) -> Option<u64> {
    let b = bytes?;
    if (1..=MAX_STALL_FLOOR).contains(&b) {
        return Some(b);
    }
    errors.push(err(
        "--stall-floor",
        "DFX_STALL_FLOOR",
        b,
        "not a usable progress floor",
        &format!("whole bytes per stall window from 1 to {MAX_STALL_FLOOR} (default 1024)"),
    ));
    None
}

/// `--history`: a SQLite path or a PostgreSQL URL (shown with its password redacted).
pub(super) fn history_flag(
    h: Option<&str>,
    errors: &mut Vec<FlagError>,
) -> Option<dfx_history::HistorySpec> {
    let h = h?;
    dfx_history::HistorySpec::parse(h)
        .map_err(|e| {
            errors.push(err(
                "--history",
                "DFX_HISTORY",
                dfx_history::store::redact(h),
                &e.to_string(),
                "a SQLite file path (target/dfx-perf/history.sqlite) or postgres://user@host/db",
            ))
        })
        .ok()
}

/// `--mark`: not blank.
pub(super) fn check_mark(mark: Option<&str>, errors: &mut Vec<FlagError>) {
    if mark.is_some_and(|m| m.trim().is_empty()) {
        errors.push(err(
            "--mark",
            "DFX_MARK",
            "",
            "empty expression",
            "a mark such as `tts`, or `tts and not slow`",
        ));
    }
}

/// `--partition`: `count:K/N` or `hash:K/N`.
pub(super) fn partition_flag(
    p: Option<&str>,
    errors: &mut Vec<FlagError>,
) -> Option<crate::partition::Partition> {
    let p = p?;
    p.parse()
        .map_err(|e: crate::partition::PartitionError| {
            errors.push(err(
                "--partition",
                "DFX_PARTITION",
                p,
                &e.to_string(),
                crate::partition::ACCEPTED,
            ))
        })
        .ok()
}

/// `--gpu-hour-price`: a positive, bounded price.
pub(super) fn gpu_price_flag(p: Option<f64>, errors: &mut Vec<FlagError>) -> Option<f64> {
    p.filter(|p| {
        let ok = p.is_finite() && *p > 0.0 && *p <= 1e6;
        if !ok {
            errors.push(err(
                "--gpu-hour-price",
                "DFX_GPU_HOUR_PRICE",
                p,
                "not a usable price",
                "a price above 0 and at most 1000000, e.g. 2.5",
            ));
        }
        ok
    })
}
