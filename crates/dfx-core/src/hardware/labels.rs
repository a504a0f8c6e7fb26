//! Which hardware labels a run may use: the GPU/NPU tokens of [`KNOWN_TOKENS`], `SIM` and
//! `SIMx<K>` (the simulator at speed K), `na` (nothing identified the hardware), plus every
//! label a loaded config (hardware-nested baselines, `hardware_marks`) or a baseline store
//! (`baselines/<label>.json`) names. Anything else is most likely a typo that would judge
//! every trial on completion only, so the suite refuses it before anything starts.

use super::{KNOWN_TOKENS, SIM, UNKNOWN};
use crate::suggest;

/// Whether `label` is one of the built-in labels: a token, `SIM`, `SIMx<K>` or `na`.
pub fn is_builtin(label: &str) -> bool {
    KNOWN_TOKENS.contains(&label)
        || label == SIM
        || label == UNKNOWN
        || label
            .strip_prefix("SIMx")
            .and_then(|k| k.parse::<f64>().ok())
            .is_some_and(|k| k.is_finite() && k > 0.0)
}

/// `Ok` when `label` is built in or among `named` (the labels the loaded configs and
/// baseline stores name); otherwise what is accepted: the closest labels, then all.
pub fn check(label: &str, named: &[String]) -> Result<(), UnknownLabel> {
    if is_builtin(label) || named.iter().any(|n| n == label) {
        return Ok(());
    }
    let known = KNOWN_TOKENS
        .iter()
        .copied()
        .chain([SIM, UNKNOWN])
        .chain(named.iter().map(String::as_str));
    let near = suggest::closest(label, known);
    Err(UnknownLabel {
        label: label.into(),
        closest: near.iter().map(|s| s.to_string()).collect(),
        named: named.to_vec(),
    })
}

/// A hardware label that is neither built in nor named by a loaded config or store. Its
/// message is what is accepted: the closest labels, then all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{}known: {}, {SIM}, SIMx<K>, {UNKNOWN}, and the labels the loaded configs or \
     baselines/<label>.json name{}",
    if closest.is_empty() { String::new() } else { format!("closest: {}; ", closest.join(", ")) },
    KNOWN_TOKENS.join(", "),
    if named.is_empty() { String::new() } else { format!(": {}", named.join(", ")) }
)]
pub struct UnknownLabel {
    /// The label as given.
    pub label: String,
    /// The known labels closest to it.
    pub closest: Vec<String>,
    /// The labels the loaded configs and baseline stores name.
    pub named: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_labels() {
        for l in [
            "H20", "H100", "B200", "A3", "910B4", "SIM", "SIMx20", "SIMx2.5", "na",
        ] {
            assert!(is_builtin(l), "{l}");
        }
        for l in ["H2O", "h100", "SIMx", "SIMx0", "SIMx-1", "SIMxinf", ""] {
            assert!(!is_builtin(l), "{l}");
        }
    }

    #[test]
    fn a_typo_is_refused_with_the_closest_labels() {
        let why = check("H2O", &[]).unwrap_err().to_string();
        assert!(why.starts_with("closest: H20"), "{why}");
        assert!(why.contains("known: GB200, B200"), "{why}");
    }

    #[test]
    fn labels_the_configs_name_are_known() {
        assert!(check("GeForceRTX4090", &["GeForceRTX4090".into()]).is_ok());
        let why = check("GeForceRTX409", &["GeForceRTX4090".into()])
            .unwrap_err()
            .to_string();
        assert!(why.contains("closest: GeForceRTX4090"), "{why}");
    }
}
