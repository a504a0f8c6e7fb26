//! The defaults measured on seeded synthetic series (the numbers in
//! `crates/dfx-history/README.md`, "Detection delay and false alarms"): nightly checks of
//! a growing history, as CI runs `history check` after each run. Reproduce with
//! `cargo test -p dfx-history --lib detection_rates -- --nocapture`.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use super::tests::points;
use super::*;

const SEEDS: u64 = 60;
/// Clean nights before the shift.
const BEFORE: usize = 8;
/// Nights checked after it.
const AFTER: usize = 4;

fn series(seed: u64, cv: f64, shift: f64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let d = Normal::new(0.0, cv).unwrap();
    (0..BEFORE + AFTER)
        .map(|i| {
            let level = if i >= BEFORE { 1.0 + shift } else { 1.0 };
            100.0 * level * (1.0 + d.sample(&mut rng))
        })
        .collect()
}

/// What the check after night `n` (the first `n` values) newly raises: a suspicion or a
/// regression at one of the last two runs.
fn raised(xs: &[f64], n: usize) -> (bool, bool) {
    let found = detect(
        &points(&xs[..n]),
        Direction::LowerIsBetter,
        &DetectOptions::default(),
    );
    let new = |c: &&Change| c.is_regression() && c.index + 2 >= n;
    let suspected = found.iter().filter(new).any(|c| c.suspected);
    let regression = found.iter().filter(new).any(|c| !c.suspected);
    (suspected, regression)
}

/// Nights after the shift until the first suspicion and the first regression (1 = the
/// first shifted night), averaged over seeds; `None` counts as not found in `AFTER`.
fn delays(cv: f64, shift: f64) -> (f64, f64, f64) {
    let (mut sus, mut reg, mut missed) = (0.0, 0.0, 0.0);
    for seed in 0..SEEDS {
        let xs = series(seed, cv, shift);
        let mut first_s = None;
        let mut first_r = None;
        for night in 1..=AFTER {
            let (s, r) = raised(&xs, BEFORE + night);
            if (s || r) && first_s.is_none() {
                first_s = Some(night);
            }
            if r && first_r.is_none() {
                first_r = Some(night);
            }
        }
        sus += first_s.unwrap_or(AFTER + 1) as f64;
        reg += first_r.unwrap_or(AFTER + 1) as f64;
        missed += f64::from(u8::from(first_r.is_none()));
    }
    let n = SEEDS as f64;
    (sus / n, reg / n, missed / n)
}

/// Share of nightly checks of clean series that newly raise a suspicion / a regression.
fn false_alarms(cv: f64) -> (f64, f64) {
    let (mut sus, mut reg, mut nights) = (0.0, 0.0, 0.0);
    for seed in 1000..1000 + SEEDS {
        let xs = series(seed, cv, 0.0);
        for n in 4..=xs.len() {
            let (s, r) = raised(&xs, n);
            sus += f64::from(u8::from(s));
            reg += f64::from(u8::from(r));
            nights += 1.0;
        }
    }
    (sus / nights, reg / nights)
}

#[test]
fn detection_rates_of_the_defaults() {
    for cv in [0.01, 0.03] {
        let (s, r) = false_alarms(cv);
        println!(
            "cv {cv}: clean nights: suspected {:.2} %, regression {:.2} %",
            s * 100.0,
            r * 100.0
        );
        assert!(r <= 0.02, "cv {cv}: {r} of clean nights raise a regression");
        for shift in [0.10, 0.30] {
            let (ds, dr, missed) = delays(cv, shift);
            println!(
                "cv {cv}, shift +{:.0} %: first report after {ds:.2} night(s), regression after {dr:.2}, missed in {AFTER} nights {:.0} %",
                shift * 100.0,
                missed * 100.0
            );
            if shift >= 0.3 {
                assert!(ds <= 1.05 && dr <= 2.05, "cv {cv}: {ds} / {dr}");
            }
        }
    }
}
