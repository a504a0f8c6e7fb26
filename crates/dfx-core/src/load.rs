//! Load shapes of open-loop (request-rate) steps and the open-loop in-flight cap with its
//! saturation gate: dfx-perf's own entry keys, native bench only (`docs/bench.md`
//! ("Load shapes"), `docs/config.md`). Parsed and bounded at load by
//! `config::load_keys`; the native bench turns them into send offsets.

use std::num::NonZeroU32;

use serde::Serialize;

use crate::step::{StepKind, SweepStep};

/// How the arrivals of an entry's request-rate steps are spread in time.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
#[serde(tag = "shape", rename_all = "snake_case")]
pub enum LoadShape {
    /// Upstream's schedule: Gamma gaps (shape `burstiness`) at the step's `request_rate`.
    #[default]
    Steady,
    /// `ramp_start_rate`: the rate of the i-th arrival moves linearly with i from
    /// `start_rate` to the step's `request_rate` (as `vllm bench serve
    /// --ramp-up-strategy linear`), each gap Gamma-drawn at its rate.
    Ramp {
        /// `ramp_start_rate`: the first arrival's rate, requests per second.
        start_rate: f64,
    },
    /// `burst: true`: every arrival at offset 0.
    Burst,
    /// `soak_duration_s`: the step's requests spread over the duration, Gamma gaps at
    /// `num_prompts / duration_s` requests per second.
    Soak {
        /// `soak_duration_s`: the span of the step's arrivals, seconds.
        duration_s: f64,
    },
    /// `cohorts`: several workloads colliding, each starting at its own offset.
    Cohorts {
        /// The workloads, in config order.
        cohorts: Vec<Cohort>,
    },
}

/// One workload of a [`LoadShape::Cohorts`] step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cohort {
    /// When its first arrival is due, seconds from the step's start.
    pub offset_s: f64,
    /// Its requests (the cohorts' counts add up to the step's `num_prompts`).
    pub num_prompts: u64,
    /// Its rate; `None` = the step's `request_rate`.
    pub request_rate: Option<f64>,
}

/// What an arrival does when the open-loop cap is full (`saturation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Saturation {
    /// Wait for a slot (upstream `vllm bench serve`'s semaphore); the wait is recorded as
    /// `queue_s`.
    #[default]
    Wait,
    /// The saturation gate: the arrival is not sent and is recorded as a failed request
    /// ("load generator saturated").
    Fail,
}

impl Saturation {
    /// Accepted spellings, for error messages.
    pub const ACCEPTED: &str =
        "\"wait\" (default, as vllm bench serve) or \"fail\" (the saturation gate)";

    /// Parses `wait` / `fail` (exactly, lowercase).
    pub fn parse(s: &str) -> Option<Saturation> {
        match s {
            "wait" => Some(Saturation::Wait),
            "fail" => Some(Saturation::Fail),
            _ => None,
        }
    }

    /// The spelling of the key's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Saturation::Wait => "wait",
            Saturation::Fail => "fail",
        }
    }
}

/// An entry's open-loop load: its shape, its in-flight cap and what a full cap does.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct LoadSpec {
    /// How the arrivals of the entry's request-rate steps are spread in time.
    pub shape: LoadShape,
    /// `open_loop_max_concurrency`: at most this many requests of a rate step in flight.
    /// `None`: the key is absent, and rate steps run uncapped as upstream's do.
    pub open_loop_max_concurrency: Option<NonZeroU32>,
    /// `saturation`: what an arrival does when the cap is full.
    pub saturation: Saturation,
}

impl LoadSpec {
    /// Whether the entry uses none of the load keys (upstream's schedule, no cap).
    pub fn is_upstream(&self) -> bool {
        *self == LoadSpec::default()
    }

    /// The in-flight cap of `step`: `max_concurrency` of a concurrency step, the
    /// entry's `open_loop_max_concurrency` of a rate step.
    pub fn in_flight_cap(&self, step: &SweepStep) -> Option<NonZeroU32> {
        match step.kind {
            StepKind::Concurrency { max_concurrency } => Some(max_concurrency),
            StepKind::RequestRate { .. } => self.open_loop_max_concurrency,
        }
    }
}

impl LoadShape {
    /// The `load_shape` result value: `steady`, `ramp`, `burst`, `soak`, `cohorts`.
    pub fn name(&self) -> &'static str {
        match self {
            LoadShape::Steady => "steady",
            LoadShape::Ramp { .. } => "ramp",
            LoadShape::Burst => "burst",
            LoadShape::Soak { .. } => "soak",
            LoadShape::Cohorts { .. } => "cohorts",
        }
    }

    /// The expected span of the planned arrivals of `n` requests at the step's `rate`,
    /// seconds (for the schedule bound; Gamma draws scatter around it): steady
    /// `(n-1)/rate`, ramp at most `(n-1)/min(start, end)`, burst 0, soak its duration,
    /// cohorts the latest cohort end.
    pub(crate) fn expected_span(&self, n: u64, rate: f64) -> f64 {
        let gaps = |n: u64| n.saturating_sub(1) as f64;
        match self {
            LoadShape::Steady => gaps(n) / rate,
            LoadShape::Ramp { start_rate } => gaps(n) / start_rate.min(rate),
            LoadShape::Burst => 0.0,
            LoadShape::Soak { duration_s } => *duration_s,
            LoadShape::Cohorts { cohorts } => cohorts
                .iter()
                .map(|c| c.offset_s + gaps(c.num_prompts) / c.request_rate.unwrap_or(rate))
                .fold(0.0, f64::max),
        }
    }

    /// One line for bench.log and listings: what the shape does at the step's `rate`.
    pub fn describe(&self, n: u64, rate: f64) -> String {
        match self {
            LoadShape::Steady => format!("{rate} req/s"),
            LoadShape::Ramp { start_rate } => format!("a ramp from {start_rate} to {rate} req/s"),
            LoadShape::Burst => format!("a burst: all {n} at offset 0"),
            LoadShape::Soak { duration_s } => format!(
                "a soak: {n} over {duration_s} s ({} req/s; request_rate only names the step)",
                n as f64 / duration_s
            ),
            LoadShape::Cohorts { cohorts } => {
                let each: Vec<String> = cohorts
                    .iter()
                    .map(|c| {
                        format!(
                            "{} at {} s, {} req/s",
                            c.num_prompts,
                            c.offset_s,
                            c.request_rate.unwrap_or(rate)
                        )
                    })
                    .collect();
                format!("{} cohorts ({})", cohorts.len(), each.join("; "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(kind: StepKind) -> SweepStep {
        SweepStep {
            kind,
            index: 0,
            num_prompts: std::num::NonZeroU64::new(10).unwrap(),
            label: String::new(),
        }
    }

    #[test]
    fn the_cap_of_a_rate_step_is_the_open_loop_key() {
        let spec = LoadSpec {
            open_loop_max_concurrency: NonZeroU32::new(3),
            ..LoadSpec::default()
        };
        let rate = step(StepKind::RequestRate { request_rate: 2.0 });
        let conc = step(StepKind::Concurrency {
            max_concurrency: NonZeroU32::new(8).unwrap(),
        });
        assert_eq!(spec.in_flight_cap(&rate), NonZeroU32::new(3));
        assert_eq!(spec.in_flight_cap(&conc), NonZeroU32::new(8));
        assert_eq!(LoadSpec::default().in_flight_cap(&rate), None);
        assert!(LoadSpec::default().is_upstream());
        assert!(!spec.is_upstream());
    }

    #[test]
    fn expected_spans() {
        assert_eq!(LoadShape::Steady.expected_span(11, 2.0), 5.0);
        assert_eq!(
            LoadShape::Ramp { start_rate: 1.0 }.expected_span(11, 4.0),
            10.0
        );
        assert_eq!(LoadShape::Burst.expected_span(11, 4.0), 0.0);
        assert_eq!(
            LoadShape::Soak { duration_s: 30.0 }.expected_span(11, 4.0),
            30.0
        );
        let cohorts = LoadShape::Cohorts {
            cohorts: vec![
                Cohort {
                    offset_s: 0.0,
                    num_prompts: 5,
                    request_rate: None,
                },
                Cohort {
                    offset_s: 3.0,
                    num_prompts: 3,
                    request_rate: Some(1.0),
                },
            ],
        };
        assert_eq!(cohorts.expected_span(8, 2.0), 5.0);
        assert_eq!(Saturation::parse("fail"), Some(Saturation::Fail));
        assert_eq!(Saturation::parse("Fail"), None);
    }
}
