//! Calibration (SIM.md): the default Qwen3-TTS profiles, measured with a streaming client
//! in a closed-loop sweep (c = 1, 4, 8, 32; 20 prompts), land within ±25 % of the H20
//! table. Runs sped up for CI; the real-time variant is `#[ignore]`d (run it with
//! `cargo test --release -p dfx-sim --test calibration -- --ignored`).

mod common;

use common::calibration::{Task, rel, sweep, table};
use dfx_sim::SimOptions;

const TOLERANCE: f64 = 0.25;

fn check(speed: f64) {
    let mut report = String::new();
    let mut misses = Vec::new();
    for task in [Task::VoiceClone, Task::VoiceDesign] {
        let targets = task.targets();
        let conc: Vec<usize> = targets.iter().map(|t| t.0).collect();
        let points = sweep(task, SimOptions::new(task.model()).speed(speed), &conc);
        report.push_str(&table(task, &points));
        for (p, (c, rtf, ttfp)) in points.iter().zip(targets) {
            assert_eq!(p.failures, 0, "{} c={c}: failed requests", task.name());
            for (what, got, want) in [("RTF", p.median_rtf, rtf), ("TTFP", p.median_ttfp_ms, ttfp)]
            {
                if rel(got, want).abs() > TOLERANCE {
                    misses.push(format!(
                        "{} c={c} {what}: {got:.3} vs {want} ({:+.0}%)",
                        task.name(),
                        rel(got, want) * 100.0
                    ));
                }
            }
        }
    }
    println!("{report}");
    assert!(
        misses.is_empty(),
        "outside ±25 %:\n{}\n\n{report}",
        misses.join("\n")
    );
}

#[test]
fn qwen3_tts_profiles_match_the_h20_table_sped_up() {
    check(3.0);
}

#[test]
#[ignore = "real time: about 65 s"]
fn qwen3_tts_profiles_match_the_h20_table_real_time() {
    check(1.0);
}
