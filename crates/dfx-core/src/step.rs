//! One sweep step (a trial's load: closed loop at a concurrency or open loop at a rate)
//! and Python's `str(float)`, which names rate steps and keys dict baselines. Shared by
//! the plan, the load shapes and the baseline shapes, and depending on none of them.

use std::num::{NonZeroU32, NonZeroU64};

use serde::Serialize;

/// Whether a sweep step is a closed-loop concurrency step or an open-loop rate step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StepKind {
    /// `max_concurrency` requests in flight, request rate infinite.
    Concurrency {
        /// The `max_concurrency` sweep value: requests kept in flight (validated at load,
        /// never zero).
        max_concurrency: NonZeroU32,
    },
    /// Open loop at `request_rate` requests per second. Upstream's runner gives these
    /// steps no concurrency cap; the entry's `open_loop_max_concurrency` can
    /// ([`crate::load::LoadSpec::in_flight_cap`]).
    RequestRate {
        /// The `request_rate` sweep value: arrivals per second.
        request_rate: f64,
    },
}

/// One sweep step: one trial's load.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepStep {
    /// Closed loop at a concurrency, or open loop at a rate.
    pub kind: StepKind,
    /// Index within its own sweep (request-rate steps and concurrency steps count
    /// separately, as upstream does); selects list baselines.
    pub index: usize,
    /// Requests measured in this step (warmups excluded; validated at load, never zero).
    pub num_prompts: NonZeroU64,
    /// The step part of the trial name: `c16`, `qps2.0` (with `_<index>` only when
    /// needed for uniqueness).
    pub label: String,
}

impl SweepStep {
    /// `max_concurrency` of a concurrency step.
    pub fn max_concurrency(&self) -> Option<NonZeroU32> {
        match self.kind {
            StepKind::Concurrency { max_concurrency } => Some(max_concurrency),
            StepKind::RequestRate { .. } => None,
        }
    }

    /// `request_rate` of a rate step; `None` means infinite (concurrency steps).
    pub fn request_rate(&self) -> Option<f64> {
        match self.kind {
            StepKind::Concurrency { .. } => None,
            StepKind::RequestRate { request_rate } => Some(request_rate),
        }
    }

    /// The key a dict baseline uses for this step: `str(max_concurrency)` or
    /// Python's `str(request_rate)` (`"2.0"` for 2.0).
    pub fn baseline_key(&self) -> String {
        match self.kind {
            StepKind::Concurrency { max_concurrency } => max_concurrency.to_string(),
            StepKind::RequestRate { request_rate } => python_float_str(request_rate),
        }
    }
}

/// Python's `str(float)`: the shortest round-trip digits, positional with a `.0` for
/// whole numbers when the decimal exponent is in `-4..16` (`2.0`, `0.5`, `0.0001`),
/// scientific with a signed two-digit exponent otherwise (`1e-05`, `1e+16`, `1.5e-07`).
pub fn python_float_str(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "nan".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` has an exponent");
    let exp: i32 = exp.parse().expect("`{:e}` exponent is an integer");
    if (-4..16).contains(&exp) {
        let s = format!("{x}");
        if s.contains('.') { s } else { format!("{s}.0") }
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_str_of_floats() {
        for (x, want) in [
            (2.0, "2.0"),
            (0.5, "0.5"),
            (10.0, "10.0"),
            (0.1, "0.1"),
            (0.25, "0.25"),
            (1.0 / 3.0, "0.3333333333333333"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.25e20, "1.25e+20"),
            (0.0, "0.0"),
            (f64::INFINITY, "inf"),
        ] {
            assert_eq!(python_float_str(x), want, "{x}");
        }
    }

    /// Python's `repr(float)` on the cases the `vllm bench` command line needs (moved
    /// here with the formatter from dfx-bench's `pyfmt`).
    #[test]
    fn floats_print_like_python_repr() {
        let cases = [
            (0.1, "0.1"),
            (2.0, "2.0"),
            (100.0, "100.0"),
            (0.34, "0.34"),
            (1.5, "1.5"),
            (-2.5, "-2.5"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (0.000123, "0.000123"),
            (0.0000123, "1.23e-05"),
            (1e15, "1000000000000000.0"),
            (1234567890123456.0, "1234567890123456.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (1e22, "1e+22"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (0.1 + 0.2, "0.30000000000000004"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (f64::INFINITY, "inf"),
        ];
        for (x, want) in cases {
            assert_eq!(python_float_str(x), want, "repr({x:?})");
        }
    }

    fn nz(n: u32) -> NonZeroU32 {
        NonZeroU32::new(n).unwrap()
    }

    #[test]
    fn baseline_keys() {
        let step = |kind| SweepStep {
            kind,
            index: 0,
            num_prompts: std::num::NonZeroU64::new(1).unwrap(),
            label: String::new(),
        };
        assert_eq!(
            step(StepKind::Concurrency {
                max_concurrency: nz(16)
            })
            .baseline_key(),
            "16"
        );
        assert_eq!(
            step(StepKind::RequestRate { request_rate: 2.0 }).baseline_key(),
            "2.0"
        );
        assert_eq!(
            step(StepKind::RequestRate { request_rate: 0.5 }).request_rate(),
            Some(0.5)
        );
        assert_eq!(
            step(StepKind::Concurrency {
                max_concurrency: nz(4)
            })
            .max_concurrency(),
            Some(nz(4))
        );
    }
}
