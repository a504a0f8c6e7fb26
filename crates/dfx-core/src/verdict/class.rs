//! The class of a failed trial: one word a run summary can count ("2 breach, 1
//! server_start"), written beside the failures as `failure_class` with a one-line
//! `failure_detail` in `verdict.json`, `result.json`'s verdict, `summary.json` and JUnit.
//!
//! A trial that fails for several reasons gets the most causal class: [`FailureClass::ALL`]
//! is in precedence order (a server that died also causes request errors and breaches; it
//! is `server_exit`).

use serde::{Deserialize, Serialize};

use super::Breach;

/// Why a trial failed, as a class. Serialised snake_case (`server_start`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// The run was interrupted (SIGINT / SIGTERM) while the trial ran.
    Interrupted,
    /// The server never became ready: exited at start, port in use, out of memory, model
    /// or weights missing, readiness timeout.
    ServerStart,
    /// The server (or its judge) exited during the trial.
    ServerExit,
    /// The stall rule ended the step: the server stopped streaming.
    Stalled,
    /// The load generator's side: bench exit, argv, tokenizer, dataset, a bench that left
    /// no result, a load it could not offer, a trial no bench can run.
    Client,
    /// The suite itself: a panic, a file it could not write.
    Harness,
    /// Requests failed (HTTP or stream errors): fewer completed than sent.
    ServerErrors,
    /// A gate other than a threshold failed: quality, OmniInteract, fixed length,
    /// capacity search, `--require-thresholds`.
    Check,
    /// An asserted threshold was breached beyond the cell's measured noise (or no noise
    /// is known).
    Breach,
    /// Every asserted breach is inside the cell's measured noise.
    BreachWithinNoise,
}

impl FailureClass {
    /// Every class, most causal first: the precedence when several apply.
    pub const ALL: [FailureClass; 10] = [
        FailureClass::Interrupted,
        FailureClass::ServerStart,
        FailureClass::ServerExit,
        FailureClass::Stalled,
        FailureClass::Client,
        FailureClass::Harness,
        FailureClass::ServerErrors,
        FailureClass::Check,
        FailureClass::Breach,
        FailureClass::BreachWithinNoise,
    ];

    /// The snake_case name written to the artefacts (`server_start`).
    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::Interrupted => "interrupted",
            FailureClass::ServerStart => "server_start",
            FailureClass::ServerExit => "server_exit",
            FailureClass::Stalled => "stalled",
            FailureClass::Client => "client",
            FailureClass::Harness => "harness",
            FailureClass::ServerErrors => "server_errors",
            FailureClass::Check => "check",
            FailureClass::Breach => "breach",
            FailureClass::BreachWithinNoise => "breach_within_noise",
        }
    }

    /// What the class means, in one sentence (the generated reference prints it).
    pub fn meaning(self) -> &'static str {
        match self {
            FailureClass::Interrupted => {
                "The run was interrupted (SIGINT / SIGTERM / SIGHUP) while the trial ran."
            }
            FailureClass::ServerStart => {
                "The server never became ready: exited at start, port in use, out of memory, model or weights missing, readiness timeout."
            }
            FailureClass::ServerExit => "The server (or its judge) exited during the trial.",
            FailureClass::Stalled => "The stall rule ended the step: the server stopped streaming.",
            FailureClass::Client => {
                "The load generator's side: bench exit, argv, tokenizer, dataset, a bench that left no result, a load it could not offer, a trial no bench can run."
            }
            FailureClass::Harness => "The suite itself: a panic, a file it could not write.",
            FailureClass::ServerErrors => {
                "Requests failed (HTTP or stream errors): fewer completed than sent."
            }
            FailureClass::Check => {
                "A gate other than a threshold failed: quality, OmniInteract, fixed length, capacity search, `--require-thresholds`."
            }
            FailureClass::Breach => {
                "An asserted threshold was breached beyond the cell's measured noise (or no noise is known)."
            }
            FailureClass::BreachWithinNoise => {
                "Every asserted breach is inside the cell's measured noise."
            }
        }
    }

    /// The class named `s` (as [`FailureClass::as_str`] writes it).
    pub fn parse(s: &str) -> Option<FailureClass> {
        FailureClass::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// The most causal of `classes` (`None` for none).
    pub fn most_causal(classes: impl IntoIterator<Item = FailureClass>) -> Option<FailureClass> {
        classes.into_iter().min()
    }
}

impl std::fmt::Display for FailureClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a cell's noise was measured, as a breach's detail names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoiseSource {
    /// The trial's own repeats (`--repeats`): half the 95 % interval of their median.
    Repeats,
    /// The cell's healthy runs in the history (`--history`).
    History {
        /// Healthy runs the estimate comes from.
        runs: usize,
    },
}

impl std::fmt::Display for NoiseSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoiseSource::Repeats => f.write_str("repeats"),
            NoiseSource::History { runs } => write!(f, "history of {runs} runs"),
        }
    }
}

/// The relative noise of one metric of a cell, a breach's gap is judged against: the
/// half-width of its 95 % band as a fraction of its level (0.05 for ±5 %), and its source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetricNoise {
    /// Half-width of the 95 % band, relative (0.05 = ±5 %).
    pub rel: f64,
    /// Where it was measured.
    pub source: NoiseSource,
}

impl MetricNoise {
    /// The larger of two estimates (either may be unknown): a breach is within the
    /// cell's noise when it is within the widest band measured.
    pub fn larger(a: Option<MetricNoise>, b: Option<MetricNoise>) -> Option<MetricNoise> {
        let finite = |n: &MetricNoise| n.rel.is_finite();
        match (a.filter(finite), b.filter(finite)) {
            (Some(a), Some(b)) if b.rel.abs() > a.rel.abs() => Some(b),
            (Some(a), _) => Some(a),
            (None, b) => b,
        }
    }
}

/// Whether a breach is inside its cell's measured noise: `|gap| <= noise`, with `noise`
/// the metric's relative noise (a fraction: 0.05 for 5 %). `None` (no noise known) is
/// never "within".
pub fn breach_within_noise(b: &Breach, noise: Option<f64>) -> bool {
    noise.is_some_and(|n| n.is_finite() && b.gap.is_finite() && b.gap.abs() <= n.abs())
}

/// [`FailureClass::BreachWithinNoise`] when every breach of `breaches` (at least one) is
/// within the noise `noise(metric)` gives (the larger of the trial's repeats' and the
/// cell's history's, see [`MetricNoise::larger`]), else [`FailureClass::Breach`].
pub fn classify_breaches(
    breaches: &[Breach],
    noise: impl Fn(&str) -> Option<MetricNoise>,
) -> FailureClass {
    let all_within = !breaches.is_empty()
        && breaches
            .iter()
            .all(|b| breach_within_noise(b, noise(&b.metric).map(|n| n.rel)));
    if all_within {
        FailureClass::BreachWithinNoise
    } else {
        FailureClass::Breach
    }
}

/// `median_audio_ttfp_ms 8.3 > 7 (+18.6 %) beyond noise ±2.1 % (history of 7 runs)`: the
/// breaches as one detail line, each with its noise, on which side of it the gap is and
/// where the noise was measured, when known.
pub fn breach_detail(breaches: &[Breach], noise: impl Fn(&str) -> Option<MetricNoise>) -> String {
    let parts: Vec<String> = breaches
        .iter()
        .map(|b| match noise(&b.metric) {
            Some(n) if n.rel.is_finite() => {
                let side = if breach_within_noise(b, Some(n.rel)) {
                    "within"
                } else {
                    "beyond"
                };
                let pct = n.rel.abs() * 100.0;
                format!("{} {side} noise ±{pct:.1} % ({})", b.line(), n.source)
            }
            _ => b.line(),
        })
        .collect();
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::Direction;

    fn breach(metric: &str, gap: f64) -> Breach {
        Breach {
            metric: metric.into(),
            value: 100.0 * (1.0 + gap),
            threshold: 100.0,
            gap,
            direction: Direction::LowerIsBetter,
        }
    }

    #[test]
    fn names_round_trip_and_precedence_is_the_order_of_all() {
        for c in FailureClass::ALL {
            assert_eq!(FailureClass::parse(c.as_str()), Some(c));
            let json = serde_json::to_value(c).unwrap();
            assert_eq!(json, c.as_str());
        }
        let mut sorted = FailureClass::ALL;
        sorted.sort();
        assert_eq!(sorted, FailureClass::ALL);
        let got = FailureClass::most_causal([
            FailureClass::Breach,
            FailureClass::ServerErrors,
            FailureClass::ServerExit,
        ]);
        assert_eq!(got, Some(FailureClass::ServerExit));
        assert_eq!(FailureClass::parse("nope"), None);
    }

    #[test]
    fn a_breach_is_within_noise_only_when_every_gap_is() {
        let small = breach("median_e2el_ms", 0.02);
        let big = breach("median_audio_ttfp_ms", 0.20);
        let noise = |_: &str| {
            Some(MetricNoise {
                rel: 0.05,
                source: NoiseSource::Repeats,
            })
        };
        assert_eq!(
            classify_breaches(std::slice::from_ref(&small), noise),
            FailureClass::BreachWithinNoise
        );
        assert_eq!(
            classify_breaches(&[small.clone(), big], noise),
            FailureClass::Breach
        );
        assert_eq!(
            classify_breaches(std::slice::from_ref(&small), |_| None),
            FailureClass::Breach
        );
        assert_eq!(classify_breaches(&[], noise), FailureClass::Breach);
        assert_eq!(
            breach_detail(&[small], noise),
            "median_e2el_ms 102 > 100 (+2.0 %) within noise ±5.0 % (repeats)"
        );
    }

    #[test]
    fn the_larger_noise_is_judged_against_and_its_source_named() {
        let repeats = MetricNoise {
            rel: 0.01,
            source: NoiseSource::Repeats,
        };
        let history = MetricNoise {
            rel: 0.08,
            source: NoiseSource::History { runs: 6 },
        };
        assert_eq!(
            MetricNoise::larger(Some(repeats), Some(history)),
            Some(history)
        );
        assert_eq!(
            MetricNoise::larger(Some(history), Some(repeats)),
            Some(history)
        );
        assert_eq!(MetricNoise::larger(None, Some(repeats)), Some(repeats));
        let nan = MetricNoise {
            rel: f64::NAN,
            ..history
        };
        assert_eq!(MetricNoise::larger(Some(nan), Some(repeats)), Some(repeats));
        assert_eq!(MetricNoise::larger(None, None), None);
        let b = [breach("median_e2el_ms", 0.05)];
        let both = |_: &str| MetricNoise::larger(Some(repeats), Some(history));
        assert_eq!(classify_breaches(&b, both), FailureClass::BreachWithinNoise);
        assert_eq!(
            breach_detail(&b, both),
            "median_e2el_ms 105 > 100 (+5.0 %) within noise ±8.0 % (history of 6 runs)"
        );
        let only_repeats = |_: &str| Some(repeats);
        assert_eq!(classify_breaches(&b, only_repeats), FailureClass::Breach);
        assert_eq!(
            breach_detail(&b, only_repeats),
            "median_e2el_ms 105 > 100 (+5.0 %) beyond noise ±1.0 % (repeats)"
        );
    }
}
