//! The planned offsets of every load shape.

use super::*;
use dfx_core::plan::{Cohort, LoadShape};

fn sorted(v: &[f64]) -> bool {
    v.windows(2).all(|w| w[1] >= w[0])
}

#[test]
fn ramp_rate_moves_linearly_with_the_arrival_index() {
    // Burstiness 100: gaps within a few % of their mean, so 1 / gap is the rate.
    let n = 201;
    let a = ramp_offsets(n, 2.0, 20.0, 100.0, 5).unwrap();
    assert_eq!(a.len(), n);
    assert_eq!(a[0], 0.0);
    assert!(sorted(&a));
    for i in [1, 50, 100, 150, 200] {
        let want = 2.0 + 18.0 * i as f64 / 200.0;
        let got = 1.0 / (a[i] - a[i - 1]);
        assert!(
            (got / want - 1.0).abs() < 0.4,
            "rate at {i}: {got} vs {want}"
        );
    }
    // Averaged over windows of 20 gaps the rate is linear within a few %.
    for start in [1, 91, 181] {
        let mid = start as f64 + 9.5;
        let want = 2.0 + 18.0 * mid / 200.0;
        let got = 20.0 / (a[start + 19] - a[start - 1]);
        assert!(
            (got / want - 1.0).abs() < 0.05,
            "window at {start}: {got} vs {want}"
        );
    }
    // A falling ramp too, and the planned span is the sum of the mean gaps.
    let down = ramp_offsets(n, 20.0, 2.0, 100.0, 5).unwrap();
    assert!(down[1] - down[0] < down[200] - down[199]);
    let mean_span: f64 = (1..n).map(|i| 1.0 / (2.0 + 18.0 * i as f64 / 200.0)).sum();
    assert!((a[n - 1] / mean_span - 1.0).abs() < 0.02, "{}", a[n - 1]);
}

#[test]
fn burst_is_all_at_zero() {
    let b = planned_offsets(&LoadShape::Burst, 7, 3.0, 1.0, 0).unwrap();
    assert_eq!(b, vec![0.0; 7]);
}

#[test]
fn soak_spans_its_duration() {
    let s = soak_offsets(100, 50.0, 1.0, 9).unwrap();
    assert_eq!(s[0], 0.0);
    assert!(sorted(&s));
    assert!((s[99] - 49.5).abs() < 1e-9, "last at {}", s[99]);
    // Mean gap n / duration: half a second.
    let shape = LoadShape::Soak { duration_s: 50.0 };
    assert_eq!(planned_offsets(&shape, 100, 0.001, 1.0, 9).unwrap(), s);
    assert_eq!(soak_offsets(1, 50.0, 1.0, 9).unwrap(), vec![0.0]);
    assert!(soak_offsets(3, 0.0, 1.0, 9).is_err());
}

#[test]
fn cohorts_start_at_their_offsets_and_merge_in_time_order() {
    let cohorts = vec![
        Cohort {
            offset_s: 0.0,
            num_prompts: 30,
            request_rate: None,
        },
        Cohort {
            offset_s: 2.0,
            num_prompts: 20,
            request_rate: Some(50.0),
        },
    ];
    let m = cohort_offsets(&cohorts, 10.0, 1.0, 4).unwrap();
    assert_eq!(m.len(), 50);
    assert!(sorted(&m));
    assert_eq!(m[0], 0.0);
    assert!(
        m.contains(&2.0),
        "the second cohort's first arrival is at its offset"
    );
    // The first cohort alone is upstream's schedule of its own seed stream.
    let first = arrival_offsets(30, 10.0, 1.0, 4 ^ 0x9E37_79B9_7F4A_7C15).unwrap();
    assert!(first.iter().all(|t| m.contains(t)));
    // From 2 s on, the 50 req/s cohort collides with the 10 req/s one: more than half the
    // arrivals of [2, 2.4) s come from it.
    let window = m.iter().filter(|t| (2.0..2.4).contains(*t)).count();
    assert!(window >= 10, "{window} arrivals in [2, 2.4) s");
    assert_eq!(
        planned_offsets(&LoadShape::Cohorts { cohorts }, 50, 10.0, 1.0, 4).unwrap(),
        m
    );
}

#[test]
fn steady_is_upstream_and_shapes_are_seeded() {
    assert_eq!(
        planned_offsets(&LoadShape::Steady, 20, 4.0, 1.0, 3).unwrap(),
        upstream_offsets(20, 4.0, 1.0, 3).unwrap()
    );
    // vllm bench's `get_request` for 20 requests at 4 req/s, seed 3 (NumPy 2.4): the
    // first request waits its own gap, the last is due at n / rate.
    let up = upstream_offsets(20, 4.0, 1.0, 3).unwrap();
    for (got, want) in up
        .iter()
        .zip([0.2796863862666376, 0.7100794387185031, 0.8302201596670805])
    {
        assert!((got - want).abs() < 1e-12, "{up:?}");
    }
    assert!((up[19] - 5.0).abs() < 1e-12, "{up:?}");
    let ramp = LoadShape::Ramp { start_rate: 1.0 };
    assert_eq!(
        planned_offsets(&ramp, 20, 4.0, 1.0, 3),
        planned_offsets(&ramp, 20, 4.0, 1.0, 3)
    );
    assert_ne!(
        planned_offsets(&ramp, 20, 4.0, 1.0, 3),
        planned_offsets(&ramp, 20, 4.0, 1.0, 4)
    );
    assert_eq!(
        ramp_offsets(0, 1.0, 2.0, 1.0, 0).unwrap(),
        Vec::<f64>::new()
    );
    assert_eq!(ramp_offsets(1, 1.0, 2.0, 1.0, 0).unwrap(), vec![0.0]);
}
