//! The metric registry: every result key dfx-perf names, with its [`Direction`], unit and
//! label, in one table (`table`). Everything else is derived from it: the direction
//! table of thresholds ([`direction_of`]), and the ordered selections (`views`) the
//! summary, the reports, the parity comparison and the history use.
//!
//! A key is either an exact name (`audio_throughput`) or a statistic of a family
//! (`median_audio_ttfp_ms` = `median` of `audio_ttfp_ms`; statistics are `mean`, `median`,
//! `std` and percentiles `pNN` / `pNN.N`). Informational keys (`total_audio_duration_s`)
//! have no direction and cannot be thresholds.

mod bound;
mod definitions;
mod direction;
pub(crate) mod table;
pub(crate) mod views;

pub use bound::{bound_accepted, bound_problem, unknown_metric_hint};
pub use definitions::{exact_definition, family_definition};
pub use direction::{ACCEPTED_HINT, Direction, direction_of};
pub use views::{Group, HISTORY_KEYS, HISTORY_TABLE_KEYS, PARITY_KEYS, REPORT_GROUPS};
pub use views::{SOAK_BATCH_KEYS, SUMMARY_KEYS};

/// One registry entry: an exact result key, or a family named with a statistic prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// The result key (exact entries) or the family's stem (`audio_ttfp_ms`).
    pub name: &'static str,
    /// Which way is better; `None` for informational keys (never a threshold).
    pub direction: Option<Direction>,
    /// Unit for axes and headings (empty for ratios and rates without one).
    pub unit: &'static str,
    /// Short human name (`TTFP`, `Audio throughput`).
    pub label: &'static str,
}

/// What the registry knows about a result key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Known<'a> {
    /// An exact entry.
    Exact(&'static Metric),
    /// `stat` (`median`, `p99`) of a family.
    Stat {
        /// The key's prefix before the family stem (`median`, `p99`, `mean`).
        stat: &'a str,
        /// The family's registry entry.
        family: &'static Metric,
    },
}

impl Known<'_> {
    /// The entry (exact) or the family.
    pub fn entry(&self) -> &'static Metric {
        match self {
            Known::Exact(m) => m,
            Known::Stat { family, .. } => family,
        }
    }

    /// Which way is better; `None` for informational keys.
    pub fn direction(&self) -> Option<Direction> {
        self.entry().direction
    }

    /// Unit (empty for ratios).
    pub fn unit(&self) -> &'static str {
        self.entry().unit
    }

    /// Label of the entry or family.
    pub fn label(&self) -> &'static str {
        self.entry().label
    }
}

/// Every exact entry of the registry, in table order (the generated reference lists them).
pub fn exact_entries() -> &'static [Metric] {
    table::EXACT
}

/// Every family of the registry (keys named `<stat>_<family>`), in table order.
pub fn family_entries() -> &'static [Metric] {
    table::FAMILIES
}

/// The registry entry of `key`, or `None` for names it does not know. Exact names win
/// over family members (`peak_memory_mb` is both a key and a family).
pub fn lookup(key: &str) -> Option<Known<'_>> {
    if let Some(m) = table::EXACT.iter().find(|m| m.name == key) {
        return Some(Known::Exact(m));
    }
    let (stat, stem) = key.split_once('_')?;
    if !is_statistic(stat) {
        return None;
    }
    let family = table::FAMILIES.iter().find(|m| m.name == stem)?;
    Some(Known::Stat { stat, family })
}

/// `mean`, `median`, `std`, or a percentile `pNN` / `pNN.N` (0 to 100).
fn is_statistic(stat: &str) -> bool {
    if matches!(stat, "mean" | "median" | "std") {
        return true;
    }
    let Some(num) = stat.strip_prefix('p') else {
        return false;
    };
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (num, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || int.len() > 3 || frac.is_some_and(|f| !digits(f)) {
        return false;
    }
    num.parse::<f64>().is_ok_and(|p| p <= 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_and_family_lookups() {
        let k = lookup("audio_throughput").unwrap();
        assert_eq!((k.label(), k.unit()), ("Audio throughput", "audio s / s"));
        let k = lookup("p99.9_audio_ttfp_ms").unwrap();
        assert_eq!((k.label(), k.unit()), ("TTFP", "ms"));
        assert!(matches!(k, Known::Stat { stat: "p99.9", .. }));
        assert!(matches!(lookup("peak_memory_mb"), Some(Known::Exact(_))));
        assert_eq!(lookup("mean_peak_memory_mb").unwrap().unit(), "MB");
        assert_eq!(lookup("max_e2el_ms"), None);
        assert_eq!(lookup("mean_audio_duration_s").unwrap().direction(), None);
    }

    #[test]
    fn names_are_unique() {
        for list in [table::EXACT, table::FAMILIES] {
            for (i, m) in list.iter().enumerate() {
                assert!(
                    list[i + 1..].iter().all(|o| o.name != m.name),
                    "{} twice",
                    m.name
                );
            }
        }
    }
}
