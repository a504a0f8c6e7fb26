//! Noise per cell on seeded series: a noisy cell is flagged with a fix, a quiet one gives
//! the `min_detectable_change` its spread and headroom imply, repeats are used when they
//! are the larger noise, unhealthy runs are left out.

use std::collections::BTreeMap;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use super::*;
use crate::model::Threshold;

const TRIAL: &str = "t::e::c1";
const TTFP: &str = "median_audio_ttfp_ms";

fn runs(values: &[f64], threshold: f64) -> Vec<RunRecord> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let t = TrialRecord {
                name: TRIAL.into(),
                seq: 0,
                outcome: TrialOutcome::Passed,
                interrupted: false,
                unclean: None,
                failures: vec![],
                failure_class: None,
                metrics: BTreeMap::from([(TTFP.to_string(), *v), ("num_prompts".into(), 8.0)]),
                repeats: BTreeMap::new(),
                thresholds: vec![Threshold {
                    metric: TTFP.into(),
                    value: threshold,
                    direction: "lower_is_better".into(),
                    source: "inline".into(),
                }],
                needs_data: false,
            };
            crate::detect::tests::run(i, t)
        })
        .collect()
}

fn seeded(n: usize, level: f64, rel_sd: f64, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let d = Normal::new(level, level * rel_sd).unwrap();
    (0..n).map(|_| d.sample(&mut rng)).collect()
}

fn ttfp_cell(runs: &[RunRecord]) -> CellNoise {
    cell_noise(runs, TRIAL, TTFP, &NoiseOptions::default()).expect("enough data")
}

#[test]
fn a_quiet_cell_gives_the_min_detectable_change_of_its_spread() {
    let xs = seeded(30, 100.0, 0.01, 1);
    let c = ttfp_cell(&runs(&xs, 105.0));
    let sd = 1.4826 * mad(&xs) / median(&xs);
    assert!((c.noise.rel_sd - sd).abs() < 1e-12, "{c:?}");
    assert!(
        (0.006..0.014).contains(&sd),
        "a 1 % spread estimated as {sd}"
    );
    let h = (105.0 - median(&xs)) / median(&xs);
    let mdc = c.min_detectable_change.unwrap();
    assert!((mdc - (h + 1.645 * sd)).abs() < 1e-12, "{c:?}");
    assert!((0.055..0.08).contains(&mdc), "{mdc}");
    assert!(c.flags.is_empty() && c.fix.is_none(), "{c:?}");
    assert!(c.false_alarm_rate.unwrap() < 1e-4, "{c:?}");
    assert_eq!(c.noise.source, CellNoiseSource::History);
}

#[test]
fn a_noisy_cell_is_flagged_with_the_prompts_that_fix_it() {
    let xs = seeded(30, 100.0, 0.06, 2);
    let c = ttfp_cell(&runs(&xs, 105.0));
    assert_eq!(c.flags, [NoiseFlag::CryWolf, NoiseFlag::WillMiss], "{c:?}");
    assert!(c.false_alarm_rate.unwrap() > 0.1, "{c:?}");
    let fix = c.fix.as_deref().unwrap();
    assert!(fix.contains("prompts (now 8)"), "{fix}");
    // Four times the prompts halve the noise: at least 4 × 8 are needed here.
    let need: u64 = fix.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(need >= 32, "{fix}");
    // Worst first: the noisy cell above a quiet one.
    let mut all = runs(&xs, 105.0);
    let quiet = runs(&seeded(30, 100.0, 0.01, 3), 105.0);
    for (r, q) in all.iter_mut().zip(quiet) {
        let mut t = q.trials[0].clone();
        t.name = "t::e::c16".into();
        r.trials.push(t);
    }
    let table = noise_table(&all, &NoiseOptions::default(), &[]);
    assert_eq!(table[0].trial, TRIAL, "{table:?}");
    let quiet = table
        .iter()
        .find(|c| c.trial == "t::e::c16" && c.metric == TTFP);
    assert!(quiet.unwrap().flags.is_empty());
}

#[test]
fn a_threshold_past_the_level_or_too_far_needs_moving_not_prompts() {
    let xs = seeded(20, 100.0, 0.01, 4);
    let c = ttfp_cell(&runs(&xs, 99.0));
    assert!(c.flags.contains(&NoiseFlag::CryWolf));
    assert!(c.fix.unwrap().contains("recalibrate"));
    let c = ttfp_cell(&runs(&xs, 125.0));
    assert_eq!(c.flags, [NoiseFlag::WillMiss]);
    assert!(c.fix.unwrap().contains("tighten"));
}

#[test]
fn unhealthy_runs_are_not_noise_and_repeats_count_when_larger() {
    let mut rs = runs(&seeded(10, 100.0, 0.01, 5), 110.0);
    rs[3].trials[0].metrics.insert(TTFP.into(), 400.0);
    rs[3].trials[0].outcome = TrialOutcome::Failed;
    rs[5].interrupted = true;
    rs[5].trials[0].metrics.insert(TTFP.into(), 10.0);
    let c = ttfp_cell(&rs);
    assert_eq!(c.runs, 8);
    assert!(c.noise.rel_sd < 0.02, "{c:?}");
    for r in &mut rs {
        let v = r.trials[0].metrics[TTFP];
        r.trials[0]
            .repeats
            .insert(TTFP.into(), vec![v * 0.9, v, v * 1.1]);
    }
    let n = metric_noise(&rs, TRIAL, TTFP, 3).unwrap();
    assert_eq!(n.source, CellNoiseSource::Repeats);
    // sd of (0.9, 1, 1.1) × level is 10 %; a median of 3 repeats: 1.2533 × 10 % / √3.
    assert!(
        (n.rel_sd - 1.2533 * 0.1 / 3f64.sqrt()).abs() < 0.005,
        "{n:?}"
    );
    let band = relative_noise(&rs, TRIAL)[TTFP];
    assert!((band.rel - 1.96 * n.rel_sd).abs() < 1e-12, "{band:?}");
    assert_eq!(band.source, NoiseSource::History { runs: 8 });
}

#[test]
fn a_breach_inside_a_noisy_cell_is_within_its_noise_one_far_outside_is_not() {
    use dfx_core::baseline::Direction;
    use dfx_core::verdict::{Breach, FailureClass, breach_detail, classify_breaches};
    // A cell whose runs spread by 10 %: its 95 % band is about ±20 %.
    let rs = runs(&seeded(12, 100.0, 0.10, 7), 105.0);
    let noise = relative_noise(&rs, TRIAL);
    let band = noise[TTFP];
    assert!((0.10..0.35).contains(&band.rel), "{band:?}");
    let breach = |gap: f64| Breach {
        metric: TTFP.into(),
        value: 105.0 * (1.0 + gap),
        threshold: 105.0,
        gap,
        direction: Direction::LowerIsBetter,
    };
    let of = |m: &str| noise.get(m).copied();
    let inside = [breach(band.rel / 2.0)];
    assert_eq!(
        classify_breaches(&inside, of),
        FailureClass::BreachWithinNoise
    );
    assert!(
        breach_detail(&inside, of).ends_with("(history of 12 runs)"),
        "{}",
        breach_detail(&inside, of)
    );
    let far = [breach(band.rel * 3.0)];
    assert_eq!(classify_breaches(&far, of), FailureClass::Breach);
    assert!(breach_detail(&far, of).contains(" beyond noise ±"));
    // A quiet cell's band is far narrower: the same gap is beyond it.
    let quiet = relative_noise(&runs(&seeded(12, 100.0, 0.005, 7), 105.0), TRIAL);
    let q = |m: &str| quiet.get(m).copied();
    assert_eq!(classify_breaches(&inside, q), FailureClass::Breach);
}

#[test]
fn the_normal_tail_is_right() {
    assert!((judge::upper_tail(0.0) - 0.5).abs() < 1e-7);
    assert!((judge::upper_tail(1.645) - 0.05).abs() < 1e-3);
    assert!((judge::upper_tail(-2.0) - 0.977_25).abs() < 1e-4);
}
