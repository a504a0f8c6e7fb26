//! The peer benchmark's scale mode (`-- scale`): the most concurrent streams each client
//! sustains on one core with TTFP overhead p99 ≤ 5 ms and no failure, against the raw
//! server at zero delay (every chunk as soon as the request is read), so a client is busy
//! all the time and its overhead grows with the streams it juggles; the same for realtime
//! sessions against `support/raw_realtime.rs` (`support/peer_realtime.rs`: the native
//! client, and `vllm bench`'s `openai-realtime-tts`, whose turn also waits out its own
//! 200 ms silence chunk, so its sessions last ≥ 200 ms however fast the server). The client
//! child is pinned to one CPU, the server to the others, both at a raised priority
//! (`support/pin.rs`). Per client the concurrency doubles from 1 until a probe fails, then
//! bisects between the last pass and the first failure, in at most [`Limits::probes`]
//! probes and [`Limits::budget`] of wall time.

use std::path::Path;
use std::time::{Duration, Instant};

use dfx_bench::native::stats::Sorted;
use dfx_core::plan::StepKind;

use super::peer_plan::{Client, Scenario};
use super::peer_realtime::{run_native_realtime, run_vllm_realtime};
use super::server_child::ServerChild;
use super::{RunOut, Vllm, VllmLoad, run_native, run_vllm};

/// The TTFP overhead p99 a sustained concurrency may reach.
const CEILING_MS: f64 = 5.0;

/// How far one client's search may go.
#[derive(Clone, Copy)]
pub(crate) struct Limits {
    /// The largest concurrency probed.
    pub(crate) max_c: u32,
    /// The most probes per client.
    pub(crate) probes: u32,
    /// No probe starts after this much wall time of the client's search.
    pub(crate) budget: Duration,
    /// The fewest measured requests of a probe.
    pub(crate) min_requests: u64,
    /// Measured requests per stream of a probe (at `c`: at least `per_stream × c`). One
    /// stall of the client's core (a preemption, the VM's steal) delays the next response
    /// of every stream at once, `c` of the probe's requests; at 200 per stream that is
    /// 0.5 %, under the p99, so a probe fails on sustained overload rather than on one
    /// hiccup of a shared machine.
    pub(crate) per_stream: u64,
}

impl Limits {
    /// `cargo bench -- scale`.
    pub(crate) const FULL: Limits = Limits {
        max_c: 1024,
        probes: 16,
        budget: Duration::from_secs(1200),
        min_requests: 1000,
        per_stream: 200,
    };
    /// Under `cargo test --all-targets`: c = 1 and 2, a few requests each.
    pub(crate) const SMOKE: Limits = Limits {
        max_c: 2,
        probes: 2,
        budget: Duration::from_secs(60),
        min_requests: 8,
        per_stream: 4,
    };
}

/// One probe: a closed loop at `c` streams.
struct Probe {
    c: u32,
    p50: f64,
    p99: f64,
    failed: u64,
    wall_s: f64,
}

impl Probe {
    fn passes(&self) -> bool {
        self.failed == 0 && self.p99 <= CEILING_MS
    }
}

/// The largest `c` in 1..=`max_c` for which `passes(c)` holds, assuming it holds below
/// some threshold and fails above it: doubling from 1, then bisecting to within 1/8 of the
/// last pass. 0 when `c = 1` fails. `passes` returns `None` when the search must stop
/// (out of probes or time); the answer is then the largest pass seen.
pub(crate) fn search(max_c: u32, mut passes: impl FnMut(u32) -> Option<bool>) -> u32 {
    let (mut lo, mut hi) = (0u32, None::<u32>);
    let mut c = 1;
    while hi.is_none() && c <= max_c {
        match passes(c) {
            Some(true) => lo = c,
            Some(false) => hi = Some(c),
            None => return lo,
        }
        c = c.saturating_mul(2);
    }
    if let Some(mut hi) = hi {
        while hi - lo > (lo / 8).max(1) {
            let mid = lo + (hi - lo) / 2;
            match passes(mid) {
                Some(true) => lo = mid,
                Some(false) => hi = mid,
                None => break,
            }
        }
    }
    lo
}

fn probe(
    run: &mut dyn FnMut(&Scenario, u64, &Path) -> RunOut,
    c: u32,
    lim: &Limits,
    dir: &Path,
) -> Probe {
    let s = Scenario {
        name: format!("scale c={c}"),
        kind: StepKind::Concurrency {
            max_concurrency: std::num::NonZeroU32::new(c).expect("c >= 1"),
        },
        n: (0, 0),
        warmups: c,
        pin: Some(super::pin::split().0),
    };
    let n = lim.min_requests.max(lim.per_stream * u64::from(c));
    let out = run(&s, n, dir);
    let o = Sorted::new(out.overhead_ms);
    Probe {
        c,
        p50: o.median(),
        p99: o.percentile(99.0),
        failed: out.failed,
        wall_s: out.wall_s,
    }
}

/// One client's search; prints each probe, returns the sustained concurrency.
fn search_client(
    label: &str,
    lim: &Limits,
    root: &Path,
    mut run: impl FnMut(&Scenario, u64, &Path) -> RunOut,
) -> (u32, Vec<Probe>) {
    let t0 = Instant::now();
    let mut probes = Vec::new();
    let best = search(lim.max_c, |c| {
        if probes.len() as u32 >= lim.probes || t0.elapsed() > lim.budget {
            eprintln!("  {label}: search stopped (probe or time limit)");
            return None;
        }
        let dir = root.join(format!("{}-c{c}", label.replace([' ', ','], "")));
        let p = probe(&mut run, c, lim, &dir);
        eprintln!(
            "  {label} c={c}: overhead p50 {:.2} / p99 {:.2} ms, {} failed, {:.1} s wall: {}",
            p.p50,
            p.p99,
            p.failed,
            p.wall_s,
            if p.passes() { "pass" } else { "fail" }
        );
        let ok = p.passes();
        probes.push(p);
        Some(ok)
    });
    (best, probes)
}

/// One client's result: its label, its sustained concurrency, every probe.
struct Row {
    label: &'static str,
    best: u32,
    probes: Vec<Probe>,
}

/// The realtime rows' labels (the ratio is taken between them).
const NATIVE_REALTIME: &str = "native realtime (a session per turn)";
const VLLM_REALTIME: &str = "vllm bench realtime (a session per turn)";

/// Runs the scale search for the native speech client (fresh and pooled connections),
/// `vllm bench` when given, the native realtime client and `vllm bench`'s realtime backend
/// when given; prints the table. `only`: the clients whose label contains it.
pub(crate) fn run(vllm: Option<&Vllm>, root: &Path, lim: Limits, only: Option<&str>) {
    let chosen = |label: &str| only.is_none_or(|o| label.contains(o));
    let (client_cpu, server_cpus) = super::pin::split();
    eprintln!("scale: client on CPU {client_cpu}, zero-delay servers on CPUs {server_cpus:?}");
    let start =
        |arg: &str| ServerChild::start_with(arg, |cmd| super::pin::to_cpus(cmd, &server_cpus));
    let mut rows = Vec::new();
    let speech = start("--serve-raw-zero");
    let mut clients = vec![Client::NativeFresh, Client::NativePooled];
    if vllm.is_some() {
        clients.push(Client::Vllm);
    }
    clients.retain(|c| chosen(c.label()));
    for client in clients {
        let mut tag = 0;
        let (best, probes) = search_client(client.label(), &lim, root, |s, n, dir| {
            tag += 1;
            match (client, vllm) {
                (Client::Vllm, Some(v)) => {
                    let load = VllmLoad::speech();
                    run_vllm(v, &speech, (s, &load), n, dir, &format!("s{tag}"))
                }
                (Client::NativePooled, _) => run_native(&speech, s, n, (true, false), dir),
                _ => run_native(&speech, s, n, (false, false), dir),
            }
        });
        let label = client.label();
        rows.push(Row {
            label,
            best,
            probes,
        });
    }
    drop(speech);
    let realtime = start("--serve-realtime-zero");
    let mut labels = vec![NATIVE_REALTIME];
    if vllm.is_some() {
        labels.push(VLLM_REALTIME);
    }
    labels.retain(|l| chosen(l));
    for label in labels {
        let mut tag = 0;
        let (best, probes) = search_client(label, &lim, root, |s, n, dir| {
            tag += 1;
            match vllm.filter(|_| label == VLLM_REALTIME) {
                Some(v) => run_vllm_realtime(v, &realtime, s, n, (dir, &format!("r{tag}"))),
                None => run_native_realtime(&realtime, s, n, dir),
            }
        });
        rows.push(Row {
            label,
            best,
            probes,
        });
    }
    drop(realtime);
    print_table(&rows);
}

fn print_table(rows: &[Row]) {
    eprintln!(
        "\n| client (one core) | streams sustained (p99 ≤ {CEILING_MS} ms, 0 failed) | overhead p50 / p99 there (ms) | first failing c: p99 (ms), failed | probes |"
    );
    eprintln!("|---|---|---|---|---|");
    for r in rows {
        let at = r.probes.iter().find(|p| p.c == r.best);
        let fail = r
            .probes
            .iter()
            .filter(|p| !p.passes() && p.c > r.best)
            .min_by_key(|p| p.c);
        eprintln!(
            "| {} | {} | {} | {} | {} |",
            r.label,
            r.best,
            at.map_or("—".into(), |p| format!("{:.2} / {:.2}", p.p50, p.p99)),
            fail.map_or("none within the limits".into(), |p| format!(
                "{}: {:.2}, {}",
                p.c, p.p99, p.failed
            )),
            r.probes.len()
        );
    }
    let find = |label: &str| rows.iter().find(|r| r.label == label);
    if let Some(v) = find(Client::Vllm.label()) {
        for r in rows.iter().filter(|r| r.label.starts_with("native, ")) {
            print_ratio(r, v);
        }
    }
    if let (Some(r), Some(v)) = (find(NATIVE_REALTIME), find(VLLM_REALTIME)) {
        print_ratio(r, v);
    }
}

/// Native's sustained streams over vllm bench's.
fn print_ratio(native: &Row, vllm: &Row) {
    let ratio = if vllm.best == 0 {
        "vllm bench sustains none".to_string()
    } else {
        format!("{:.1}×", f64::from(native.best) / f64::from(vllm.best))
    };
    eprintln!("{} / {}: {ratio}", native.label, vllm.label);
}

/// The search against a known threshold: finds it within its resolution, stops when told.
pub(crate) fn check_search() {
    for threshold in [0u32, 1, 2, 3, 37, 100, 1000, 4096] {
        let mut probes = 0;
        let got = search(4096, |c| {
            probes += 1;
            Some(c <= threshold)
        });
        assert!(got <= threshold, "{got} > {threshold}");
        assert!(
            threshold - got <= (got / 8).max(1),
            "{got} too far below {threshold}"
        );
        assert!(probes <= 20, "{probes} probes for {threshold}");
    }
    let mut left = 3;
    let got = search(4096, |c| {
        left -= 1;
        (left >= 0).then_some(c <= 100)
    });
    assert_eq!(got, 4, "stops after three probes with the largest pass");
}
