//! The peer benchmark's tallies and tables: every run of one client on one scenario, its
//! row (TTFP overhead percentiles, marginal CPU, peak RSS, send lag), and the ratio table
//! against `vllm bench`.

use dfx_bench::native::stats::Sorted;

use super::RunOut;
use super::peer_plan::Client;

/// Every run of one client on one scenario.
#[derive(Default)]
pub(crate) struct Tally {
    overhead_ms: Vec<f64>,
    lag_ms: Vec<f64>,
    /// (cpu at n_small, cpu at n_large) per round.
    cpu: Vec<(f64, f64)>,
    n: (u64, u64),
    maxrss_kib: u64,
    failed: u64,
    requests: u64,
    connections: u64,
    wall_s: f64,
}

impl Tally {
    pub(crate) fn add(&mut self, small: RunOut, large: RunOut) {
        self.n = (small.n, large.n);
        self.cpu.push((small.cpu_s, large.cpu_s));
        for r in [small, large] {
            self.overhead_ms.extend(r.overhead_ms);
            self.lag_ms.extend(r.lag_ms);
            self.maxrss_kib = self.maxrss_kib.max(r.maxrss_kib);
            self.failed += r.failed;
            self.requests += r.n;
            self.connections += r.connections;
            self.wall_s += r.wall_s;
        }
    }

    /// Marginal CPU seconds per 1000 requests: mean over rounds of
    /// (cpu(n_large) − cpu(n_small)) / (n_large − n_small) × 1000.
    pub(crate) fn marginal_cpu(&self) -> f64 {
        let dn = (self.n.1 - self.n.0) as f64;
        let per: f64 = self.cpu.iter().map(|(a, b)| (b - a) / dn * 1000.0).sum();
        per / self.cpu.len() as f64
    }
}

pub(crate) struct Row {
    pub(crate) scenario: String,
    pub(crate) client: Client,
    pub(crate) p50: f64,
    pub(crate) p99: f64,
    pub(crate) cpu: f64,
    pub(crate) rss_mib: f64,
    pub(crate) lag: Option<(f64, f64)>,
    pub(crate) failed: u64,
    pub(crate) requests: u64,
    pub(crate) connections: u64,
}

pub(crate) fn row(scenario: &str, client: Client, t: &Tally) -> Row {
    let o = Sorted::new(t.overhead_ms.clone());
    let lag = (!t.lag_ms.is_empty()).then(|| {
        let l = Sorted::new(t.lag_ms.clone());
        (l.percentile(99.0), l.percentile(100.0))
    });
    Row {
        scenario: scenario.to_string(),
        client,
        p50: o.median(),
        p99: o.percentile(99.0),
        cpu: t.marginal_cpu(),
        rss_mib: t.maxrss_kib as f64 / 1024.0,
        lag,
        failed: t.failed,
        requests: t.requests,
        connections: t.connections,
    }
}

pub(crate) fn print_row(r: &Row) {
    let lag = match r.lag {
        Some((p99, max)) => format!("{p99:.2} / {max:.2}"),
        None => "—".into(),
    };
    eprintln!(
        "| {} | {} | {} | {:.2} / {:.2} | {:.3} | {:.1} | {lag} | {} | {} |",
        r.scenario,
        r.client.label(),
        r.requests,
        r.p50,
        r.p99,
        r.cpu,
        r.rss_mib,
        r.connections,
        r.failed
    );
}

pub(crate) fn print_ratios(rows: &[Row]) {
    eprintln!(
        "\n| scenario | native mode | TTFP overhead p99 native / vllm | marginal CPU native / vllm | peak RSS native / vllm |"
    );
    eprintln!("|---|---|---|---|---|");
    for v in rows.iter().filter(|r| r.client == Client::Vllm) {
        for n in rows
            .iter()
            .filter(|r| r.scenario == v.scenario && r.client != Client::Vllm)
        {
            eprintln!(
                "| {} | {} | {:.3} | {:.3} | {:.3} |",
                v.scenario,
                n.client.label(),
                n.p99 / v.p99,
                n.cpu / v.cpu,
                n.rss_mib / v.rss_mib
            );
        }
    }
}
