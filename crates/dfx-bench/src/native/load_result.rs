//! What load a step planned and what it offered, as result keys (`docs/results.md`):
//! `load_shape`, `offered_request_rate`, `achieved_request_rate`, `saturated_requests`,
//! and the failure line of a tripped saturation gate.

use dfx_core::plan::{StepKind, Trial};
use dfx_core::result::ResultDoc;
use serde_json::Value;

use super::keys::num;
use super::record::PhaseRecord;

/// Arrivals per second between the first and the last of `times` (`(k - 1) / span`);
/// `None` with fewer than two or a zero span (a burst: infinite).
pub(crate) fn rate_of(times: impl Iterator<Item = f64>) -> Option<f64> {
    let (mut k, mut lo, mut hi) = (0usize, f64::INFINITY, f64::NEG_INFINITY);
    for t in times {
        k += 1;
        lo = lo.min(t);
        hi = hi.max(t);
    }
    let span = hi - lo;
    (k >= 2 && span > 0.0).then(|| (k - 1) as f64 / span)
}

/// Measured requests the saturation gate did not send.
pub(crate) fn saturated<R: PhaseRecord>(measured: &[R]) -> usize {
    measured.iter().filter(|r| r.saturated()).count()
}

/// Adds the load keys of `trial`'s step: the shape that ran (`closed_loop` for a
/// concurrency step), the offered rate of the planned sends (open loop only), the
/// achieved rate of the actual sends, and the saturated arrivals.
pub(crate) fn insert<R: PhaseRecord>(doc: &mut ResultDoc, trial: &Trial, measured: &[R]) {
    let open = matches!(trial.step.kind, StepKind::RequestRate { .. });
    let shape = if open {
        trial.entry.load.shape.name()
    } else {
        "closed_loop"
    };
    let offered = open
        .then(|| rate_of(measured.iter().map(|r| r.planned_send_s())))
        .flatten();
    let achieved = rate_of(
        measured
            .iter()
            .filter(|r| !r.saturated())
            .map(|r| r.actual_send_s()),
    );
    let rate = |r: Option<f64>| r.map_or(Value::Null, num);
    doc.insert("load_shape".into(), Value::from(shape));
    doc.insert("offered_request_rate".into(), rate(offered));
    doc.insert("achieved_request_rate".into(), rate(achieved));
    doc.insert(
        "saturated_requests".into(),
        Value::from(saturated(measured)),
    );
}

/// A measured step's failure lines: the saturation gate's line (the refused arrivals
/// counted once), then each distinct error of the requests that were sent.
pub(crate) fn step_errors<R: PhaseRecord>(trial: &Trial, measured: &[R]) -> Vec<String> {
    let mut errors: Vec<String> = saturation_error(trial, measured).into_iter().collect();
    let sent = measured.iter().filter(|r| !r.saturated());
    errors.extend(super::distinct_errors(sent.filter_map(|r| r.error())));
    errors
}

/// The failure line of a step whose gate refused arrivals: "load generator saturated: N
/// arrivals found max_concurrency=M requests in flight".
pub(crate) fn saturation_error<R: PhaseRecord>(trial: &Trial, measured: &[R]) -> Option<String> {
    let n = saturated(measured);
    let cap = trial.entry.load.in_flight_cap(&trial.step)?;
    (n > 0).then(|| {
        format!(
            "load generator saturated: {n} arrivals found max_concurrency={cap} requests in flight"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_count_gaps_over_the_span() {
        assert_eq!(rate_of([0.0, 0.5, 1.0].into_iter()), Some(2.0));
        assert_eq!(rate_of([3.0, 1.0, 2.0, 0.0].into_iter()), Some(1.0));
        assert_eq!(rate_of([0.0, 0.0, 0.0].into_iter()), None);
        assert_eq!(rate_of([1.0].into_iter()), None);
        assert_eq!(rate_of(std::iter::empty()), None);
    }
}
