//! `summary.json`: the types live in [`dfx_core::artefact::summary`] (one definition for
//! the writer here and the readers in dfx-report and dfx-history).

pub(crate) use dfx_core::artefact::summary::{Interruption, Outcome, Summary, SummaryEntry};

#[cfg(test)]
mod tests {
    use dfx_core::baseline::Direction;

    use super::*;
    use crate::test_support::{concurrency_trial, threshold};

    #[test]
    fn a_trial_that_ran_without_thresholds_needs_data_and_is_counted() {
        let bare = concurrency_trial("t", "s", 1, 2);
        let mut judged = concurrency_trial("t", "s", 2, 2);
        judged.thresholds.items = vec![threshold("median_e2el_ms", 10.0, Direction::LowerIsBetter)];
        let entries = vec![
            SummaryEntry::new(&bare, Outcome::Passed),
            SummaryEntry::new(&judged, Outcome::Passed),
            SummaryEntry::new(&bare, Outcome::Failed),
            SummaryEntry::ignored(&bare, "no bench"),
        ];
        let flags: Vec<bool> = entries.iter().map(|e| e.needs_data()).collect();
        assert_eq!(flags, [true, false, true, false]);
        let s = Summary::new("r", "H20", false, 0, 0, vec![], entries);
        assert_eq!(s.needs_data, 2);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["needs_data"], 2);
        assert_eq!(json["trials"][0]["needs_data"], true);
    }
}
