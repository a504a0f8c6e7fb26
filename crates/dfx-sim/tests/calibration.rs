//! Calibration (`docs/simulator.md` ("Calibration"), issue 4) in three layers:
//!
//! 1. [`model_matches_the_h20_table`] — the CI gate. The default Qwen3-TTS profiles, with
//!    the exact jobs the server builds for the bench's voice-clone / voice-design bodies,
//!    run through the virtual closed-loop bench (`dfx_sim::vbench`, virtual time: no HTTP,
//!    no wall clock, cannot flake) and land within ±25 % of the H20 table.
//! 2. [`http_server_realises_the_model_sped_up`] — the server over HTTP, at 2×, measured
//!    by the streaming client, matches the model's own answer for the load the client
//!    actually produced (`vbench::replay` of its recorded sends, see [`model_band`]) within
//!    a tolerance that budgets for client/server overhead (see [`realised`]);
//!    [`http_check_catches_a_server_off_its_model`] shows that check fails for a server
//!    slowed down by 1.5×.
//! 3. [`http_matches_the_h20_table_real_time`] (`#[ignore]`d, about 65 s) — the full
//!    measurement against the table at 1×: `cargo test --release -p dfx-sim --test
//!    calibration -- --ignored`.

mod common;

use common::calibration::{
    Point, Run, Task, median, rel, server_jobs, server_jobs_for, sweep, sweep_runs, table,
};
use common::orders::{ORDERS, Prompts, median_point, predict_orders};
use dfx_sim::SimOptions;
use dfx_sim::engine::Job;
use dfx_sim::vbench;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `docs/simulator.md` ("Calibration"): within ±25 % of the H20 table.
const TABLE_TOLERANCE: f64 = 0.25;
const CONCURRENCY: [usize; 4] = [1, 4, 8, 32];
/// Client turnaround between a completion and the next send in the virtual bench
/// (simulated seconds): the streaming client sends the next prompt at once.
const TURNAROUND_S: f64 = 0.001;

/// `docs/simulator.md` ("Calibration"): saturated audio throughput, audio-s/s ("about
/// 14–15" for voice clone, "about 33" for voice design).
fn saturated_throughput(task: Task) -> f64 {
    match task {
        Task::VoiceClone => 14.5,
        Task::VoiceDesign => 33.0,
    }
}

/// Misses of `points` against the table of `task` (RTF and TTFP, ± `tolerance`).
fn table_misses(task: Task, points: &[Point], label: &str, tolerance: f64) -> Vec<String> {
    let mut misses = Vec::new();
    for (p, (c, rtf, ttfp)) in points.iter().zip(task.targets()) {
        assert_eq!(p.concurrency, c);
        if p.failures > 0 {
            misses.push(format!(
                "{} {label} c={c}: {} failed",
                task.name(),
                p.failures
            ));
        }
        for (what, got, want) in [("RTF", p.median_rtf, rtf), ("TTFP", p.median_ttfp_ms, ttfp)] {
            if rel(got, want).abs() > tolerance {
                misses.push(format!(
                    "{} {label} c={c} {what}: {got:.3} vs {want} ({:+.0}%)",
                    task.name(),
                    rel(got, want) * 100.0
                ));
            }
        }
    }
    misses
}

/// Misses of the throughput shape: the plateau (best of c = 4, 8) within ±25 % of the
/// saturated figure of `docs/simulator.md` ("Calibration"); c = 32 adds at most 15 % over
/// it (saturated); c = 1 is at most 75 % of it (throughput does grow with concurrency
/// before it saturates).
fn throughput_misses(task: Task, points: &[Point], label: &str) -> Vec<String> {
    let thr = |c: usize| {
        points
            .iter()
            .find(|p| p.concurrency == c)
            .map(|p| p.audio_throughput)
            .expect("sweep point")
    };
    let plateau = thr(4).max(thr(8));
    let want = saturated_throughput(task);
    let mut misses = Vec::new();
    let mut miss = |what: String| misses.push(format!("{} {label}: {what}", task.name()));
    if rel(plateau, want).abs() > TABLE_TOLERANCE {
        miss(format!(
            "saturated throughput {plateau:.1} audio-s/s vs {want} ({:+.0}%)",
            rel(plateau, want) * 100.0
        ));
    }
    if thr(32) > 1.15 * plateau {
        miss(format!(
            "not saturated at c=4–8: c=32 gives {:.1} vs {plateau:.1}",
            thr(32)
        ));
    }
    if thr(1) > 0.75 * plateau {
        miss(format!(
            "no gain from concurrency: c=1 gives {:.1} vs {plateau:.1}",
            thr(1)
        ));
    }
    misses
}

/// One closed-loop run is one draw of the client's arrival order (`common::orders`);
/// each single order must still land within this band.
const SINGLE_ORDER_TOLERANCE: f64 = 0.40;

/// The CI calibration gate, on the model in virtual time (exact, cannot flake). For
/// both prompt sets (the tests' prompts and the rows the suite's own calibration config
/// sends), the default seed and three more audio-length draws, and arrival spreads of 0,
/// 5 and 20 ms between the first sends: the median over [`ORDERS`] arrival orders of
/// RTF and TTFP lands within ±25 % of the table at c = 1, 4, 8, 32 (20 prompts) with the
/// throughput shape of [`throughput_misses`], and every single order within ±40 %.
#[test]
fn model_matches_the_h20_table() {
    let mut misses = Vec::new();
    let mut report = String::new();
    for task in [Task::VoiceClone, Task::VoiceDesign] {
        for seed in [0, 1, 2, 3] {
            let cfg = SimOptions::new(task.model())
                .seed(seed)
                .resolve()
                .expect("default profile");
            check_jobs_are_the_servers(task, &cfg);
            for prompts in Prompts::ALL {
                let jobs = server_jobs_for(task, &cfg, &prompts.texts(task));
                for spread_s in [0.0, 0.005, 0.02] {
                    let label = format!(
                        "seed {seed}, {}, spread {} ms",
                        prompts.name(),
                        spread_s * 1000.0
                    );
                    let per_order: Vec<Vec<Point>> = CONCURRENCY
                        .iter()
                        .map(|&c| predict_orders(&cfg, &jobs, c, spread_s, TURNAROUND_S))
                        .collect();
                    let medians: Vec<Point> = per_order.iter().map(|v| median_point(v)).collect();
                    let l = format!("{label}, median of {ORDERS} orders");
                    misses.extend(table_misses(task, &medians, &l, TABLE_TOLERANCE));
                    misses.extend(throughput_misses(task, &medians, &l));
                    for o in 0..ORDERS as usize {
                        let single: Vec<Point> = per_order.iter().map(|v| v[o]).collect();
                        let l = format!("{label}, order {o}");
                        misses.extend(table_misses(task, &single, &l, SINGLE_ORDER_TOLERANCE));
                    }
                    if seed == 0 && spread_s == 0.0 {
                        report
                            .push_str(&format!("{}, median of {ORDERS} orders\n", prompts.name()));
                        report.push_str(&table(task, &medians));
                        report.push_str(&order_ranges(&per_order));
                    }
                }
            }
        }
    }
    println!("{report}");
    assert!(
        misses.is_empty(),
        "the model is outside the calibration of docs/simulator.md:\n{}\n\n{report}",
        misses.join("\n")
    );
}

/// `c = 4: TTFP 141–190 ms over orders, …` lines under a report table.
fn order_ranges(per_order: &[Vec<Point>]) -> String {
    let mut s = String::new();
    for v in per_order {
        let range = |f: fn(&Point) -> f64| {
            let lo = v.iter().map(f).fold(f64::INFINITY, f64::min);
            let hi = v.iter().map(f).fold(f64::NEG_INFINITY, f64::max);
            (lo, hi)
        };
        let (r0, r1) = range(|p| p.median_rtf);
        let (t0, t1) = range(|p| p.median_ttfp_ms);
        s.push_str(&format!(
            "c = {}: over orders RTF {r0:.3}–{r1:.3}, TTFP {t0:.0}–{t1:.0} ms\n",
            v[0].concurrency
        ));
    }
    s.push('\n');
    s
}

/// The replayed jobs carry the task's parameters the way the server resolves them:
/// voice clone pays the clone prefill and carries the reference context; voice design
/// neither.
fn check_jobs_are_the_servers(task: Task, cfg: &dfx_sim::SimConfig) {
    let jobs = server_jobs(task, cfg);
    let p = &cfg.profile;
    let (prefill, context) = match task {
        Task::VoiceClone => (p.prefill_clone_s, p.clone_context_frames),
        Task::VoiceDesign => (p.prefill_plain_s, 0),
    };
    assert_eq!(jobs.len(), 20);
    for j in &jobs {
        assert_eq!((j.prefill_s, j.ref_context_frames), (prefill, context));
        assert!(j.frames > 20, "{} frames", j.frames);
    }
}

/// The HTTP tests measure time: one at a time, so that they do not load each other.
static HTTP_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn http_lock() -> std::sync::MutexGuard<'static, ()> {
    HTTP_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Speed of the HTTP check. The smallest figure it compares is the voice-design first
/// packet at c = 1: 53 ms simulated, 28 ms of wall time at 2×, still several times what
/// the client and the server of a debug build add to a request (1–8 ms, see
/// [`OVERHEAD_BUDGET_MS`]). At 3× it would be 18 ms, where ±25 % is ±4.5 ms: the size of
/// one scheduling delay on 2 busy cores (the old 3× test flaked there). 1× is the
/// `#[ignore]`d test (65 s); 2× takes about 30 s.
const HTTP_SPEED: f64 = 2.0;
/// Relative part of the HTTP tolerance (the table's own ±25 %).
const REALISE_REL: f64 = 0.25;
/// Absolute part of the HTTP tolerance, wall-clock ms: what the client and the server may
/// add to a median beyond the model — the request's way in (client write, server read
/// and parse; at c > 1 the model band already spans it) and the chunks' way out (engine
/// thread wake-up, hand-over to the response task, hyper, the client's read). It only
/// matters where 25 % is less, i.e. the voice-design first packet at c = 1 (28 ms wall).
/// Observed there in a debug build (`cargo test -p dfx-sim --test calibration http_ --
/// --nocapture` prints every point): +1 to +4 ms on a quiet machine, up to +8.3 ms with
/// both cores busy (two `yes` loops, a `cargo build --release -j1` and other work, load
/// average 5–6). A 1.5× slower server is 14 ms over at that point and far more elsewhere.
const OVERHEAD_BUDGET_MS: f64 = 10.0;
/// Random arrival draws per sweep point (c > 1), on top of the two extremes.
const ARRIVAL_DRAWS: usize = 16;

/// The model's medians (TTFP, E2EL; simulated ms from the client's send) for the
/// arrival times the client's observations allow: each request reached the server after
/// it was sent and before its response headers came back (the server sends them right
/// after queueing it). Returns the (lowest, highest) median over arrivals at the sends,
/// at the headers, and [`ARRIVAL_DRAWS`] seeded draws in between.
///
/// Why a band: at c ≥ 4 the requests share the stages, and which one is ahead in a queue
/// depends on arrival jitter the client cannot see; a first chunk that lands just behind
/// another stream's chunk in the code2wav queue waits a whole decode, so a millisecond of
/// jitter moves the c = 4 first-packet median by up to 20 simulated ms. At c = 1 a
/// request is alone in the engine and jitter changes nothing but its transit, so the
/// band is the sends alone (and drawing there would be wrong: an arrival drawn late could
/// overlap the next request, which the client only sent after this one had finished).
fn model_band(cfg: &dfx_sim::SimConfig, jobs: &[Job], run: &Run) -> [(f64, f64); 2] {
    let seen = run.seen();
    let mut rng = ChaCha8Rng::seed_from_u64(run.concurrency as u64);
    let patterns = if run.concurrency == 1 {
        1
    } else {
        ARRIVAL_DRAWS + 2
    };
    let mut band = [(f64::MAX, f64::MIN); 2];
    for pattern in 0..patterns {
        let arrivals: Vec<f64> = seen
            .iter()
            .map(|r| {
                let u = match pattern {
                    0 => 0.0,
                    1 => 1.0,
                    _ => rng.random::<f64>(),
                };
                r.send + u * (r.headers - r.send)
            })
            .collect();
        let o = vbench::replay(&cfg.engine, jobs, &arrivals);
        let from_send = |latency: &[f64]| {
            let mut v: Vec<f64> = latency
                .iter()
                .zip(&arrivals)
                .zip(&seen)
                .map(|((l, a), r)| (l + a - r.send) * 1000.0)
                .collect();
            median(&mut v)
        };
        for (b, m) in band
            .iter_mut()
            .zip([from_send(&o.ttfp_s), from_send(&o.e2el_s)])
        {
            *b = (b.0.min(m), b.1.max(m));
        }
    }
    band
}

/// How far a measured median (simulated ms at [`HTTP_SPEED`]) lies outside the model band,
/// and how far it may: (distance, allowance) in wall-clock ms, the distance negative inside
/// the band, the allowance max(25 % of the band's near end, [`OVERHEAD_BUDGET_MS`]).
fn realised(measured: f64, (lo, hi): (f64, f64)) -> (f64, f64) {
    let wall = |v: f64| v / HTTP_SPEED;
    let near = if measured < lo { lo } else { hi };
    let distance = (wall(lo) - wall(measured)).max(wall(measured) - wall(hi));
    (distance, (REALISE_REL * wall(near)).max(OVERHEAD_BUDGET_MS))
}

/// Measures `task` over HTTP on a simulator started with `server` (at [`HTTP_SPEED`]) and
/// checks every point against the band of the `model` configuration: the misses and a
/// report (wall ms: model band → measured median, distance outside the band / allowed).
fn realisation(
    task: Task,
    server: SimOptions,
    model: &dfx_sim::SimConfig,
    concurrency: &[usize],
) -> (Vec<String>, String) {
    let mut misses = Vec::new();
    let mut report = String::new();
    let jobs = server_jobs(task, model);
    for run in sweep_runs(task, server, concurrency) {
        let m = run.point();
        let name = format!("{} c={}", task.name(), m.concurrency);
        let mut row = name.clone();
        if m.failures > 0 {
            misses.push(format!("{name}: {} failed requests", m.failures));
        }
        for r in &run.requests {
            let served = r.measured.header("x-dfx-sim-audio-frames");
            let replayed = jobs[r.prompt].frames.to_string();
            if r.measured.status == 200 && served.as_deref() != Some(replayed.as_str()) {
                misses.push(format!(
                    "{name} prompt {}: the server planned {served:?} frames, the replay {replayed}",
                    r.prompt
                ));
            }
        }
        let band = model_band(model, &jobs, &run);
        for ((what, got), (lo, hi)) in [("TTFP", m.median_ttfp_ms), ("E2EL", m.median_e2el_ms)]
            .into_iter()
            .zip(band)
        {
            let (distance, allowed) = realised(got, (lo, hi));
            let w = |v: f64| v / HTTP_SPEED;
            row.push_str(&format!(
                " | {what} {:.1}–{:.1} → {:.1} ({distance:+.1} / {allowed:.1})",
                w(lo),
                w(hi),
                w(got)
            ));
            if distance > allowed {
                misses.push(format!(
                    "{name} {what}: measured {:.1} ms, model {:.1}–{:.1} ms (wall, {HTTP_SPEED}x): {distance:.1} ms outside, allowed {allowed:.1}",
                    w(got),
                    w(lo),
                    w(hi)
                ));
            }
        }
        report.push_str(&row);
        report.push('\n');
    }
    (misses, report)
}

/// The server over HTTP at [`HTTP_SPEED`] realises its model: for every sweep point of
/// both tasks, the measured median first packet and end-to-end latency are within
/// [`realised`]'s tolerance of the model's band for the same sends ([`model_band`]), and
/// no request fails. (The table itself is the job of [`model_matches_the_h20_table`].)
#[test]
fn http_server_realises_the_model_sped_up() {
    let _one_at_a_time = http_lock();
    let mut misses = Vec::new();
    let mut report = String::from(
        "wall ms: model band → measured median (distance outside the band / allowed)\n",
    );
    for task in [Task::VoiceClone, Task::VoiceDesign] {
        let opts = SimOptions::new(task.model()).speed(HTTP_SPEED);
        let model = opts.resolve().expect("default profile");
        let (m, r) = realisation(task, opts, &model, &CONCURRENCY);
        misses.extend(m);
        report.push_str(&r);
    }
    println!("{report}");
    assert!(
        misses.is_empty(),
        "the server over HTTP does not realise its model:\n{}\n\n{report}",
        misses.join("\n")
    );
}

/// The HTTP check is not vacuous: a server slowed down by 1.5× (the regression the
/// suite's baselines must catch) is reported off its model already at c = 1.
#[test]
fn http_check_catches_a_server_off_its_model() {
    let _one_at_a_time = http_lock();
    let task = Task::VoiceDesign;
    let model = SimOptions::new(task.model())
        .speed(HTTP_SPEED)
        .resolve()
        .expect("default profile");
    let slow = SimOptions::new(task.model())
        .speed(HTTP_SPEED)
        .fault("slowdown=1.5")
        .expect("fault spec");
    let (misses, report) = realisation(task, slow, &model, &[1]);
    println!("{report}");
    assert!(
        misses.iter().any(|m| m.contains("E2EL")),
        "a 1.5x slower server passed the realisation check:\n{report}"
    );
}

/// The full measurement at 1× against the table (±25 %, RTF and TTFP), as issue 4 asks
/// for BENCHMARKS.md; `#[ignore]`d because it takes a minute of wall time.
#[test]
#[ignore = "real time: about 65 s"]
fn http_matches_the_h20_table_real_time() {
    let _one_at_a_time = http_lock();
    let mut misses = Vec::new();
    let mut report = String::new();
    for task in [Task::VoiceClone, Task::VoiceDesign] {
        let points = sweep(task, SimOptions::new(task.model()), &CONCURRENCY);
        report.push_str(&table(task, &points));
        misses.extend(table_misses(task, &points, "HTTP 1x", TABLE_TOLERANCE));
    }
    println!("{report}");
    assert!(
        misses.is_empty(),
        "outside ±25 %:\n{}\n\n{report}",
        misses.join("\n")
    );
}
