//! `summary.json`: the types live in [`dfx_core::artefact::summary`] (one definition for
//! the writer here and the readers in dfx-report and dfx-history).

pub(crate) use dfx_core::artefact::summary::{Interruption, Outcome, Summary, SummaryEntry};

#[cfg(test)]
mod tests {
    use dfx_core::baseline::Direction;

    use super::*;
    use dfx_testkit::trials::{concurrency_trial, threshold};

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

    #[test]
    fn failures_are_counted_and_grouped_by_class() {
        use dfx_core::artefact::summary::failed_by_class;
        use dfx_core::verdict::FailureClass;
        let entry = |step: u32, class: Option<FailureClass>| {
            let mut e =
                SummaryEntry::new(&concurrency_trial("t", "voice", step, 2), Outcome::Failed);
            e.failure_class = class;
            e
        };
        let entries = vec![
            entry(16, Some(FailureClass::Breach)),
            entry(1, Some(FailureClass::ServerStart)),
            entry(64, Some(FailureClass::Breach)),
            SummaryEntry::new(&concurrency_trial("t", "voice", 2, 2), Outcome::Passed),
        ];
        assert_eq!(
            failed_by_class(&entries).unwrap(),
            "3 failed: 1 server_start (voice::c1), 2 breach (voice::c16, voice::c64)"
        );
        let s = Summary::new("r", "SIM", true, 0, 0, vec![], entries);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(
            json["failure_classes"],
            serde_json::json!({"server_start": 1, "breach": 2})
        );
        assert_eq!(json["trials"][0]["failure_class"], "breach");
        assert!(json["trials"][3].get("failure_class").is_none());
        assert_eq!(failed_by_class(&s.trials[3..]), None);
    }
}
