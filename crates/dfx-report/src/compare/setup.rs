//! What differs in the setup of the two sides, listed above the verdict: hardware label,
//! simulator speed, bench tool, server and launcher, dfx-perf version, GPU, host, the
//! versions the servers reported, each server's command line, config files and every
//! flag that can change a measurement (`--sim-faults`, `--connection`, `--repeats`, …).
//! A comparison whose sides were set up differently measures that difference too.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::run::Run;

/// Flags that only say where output goes, or are shown as a run fact of their own.
const NOT_SETUP_FLAGS: &[&str] = &[
    "--results-dir",
    "--history",
    "--upstream-results-dir",
    "--verbose",
    "--list-verbose",
    "--test-config-file",
    "--hardware",
    "--sim-speed",
    "--bench",
    "--server",
];
/// Stands for a fact a run does not record.
const ABSENT: &str = "(not set)";

/// One aspect of the setup whose values differ between the sides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SetupDifference {
    /// `sim speed`, `flag --sim-faults`, `server version vllm`, `server command 01-test_x`.
    pub aspect: String,
    /// Side A's distinct values (one per run setup, sorted).
    pub a: Vec<String>,
    /// Side B's distinct values.
    pub b: Vec<String>,
}

/// Every aspect whose set of values differs between side A and side B, in a stable
/// order (run facts first, then server versions and commands, then flags).
pub(super) fn differences(a: &[Run], b: &[Run]) -> Vec<SetupDifference> {
    let (fa, fb): (Vec<_>, Vec<_>) = (a.iter().map(facts).collect(), b.iter().map(facts).collect());
    let mut aspects: Vec<String> = Vec::new();
    for f in fa.iter().chain(&fb) {
        for k in f.keys() {
            if !aspects.contains(k) {
                aspects.push(k.clone());
            }
        }
    }
    aspects.sort_by_key(|k| order(k));
    let values = |side: &[BTreeMap<String, String>], k: &str| -> Vec<String> {
        let set: BTreeSet<String> = side
            .iter()
            .map(|f| f.get(k).cloned().unwrap_or_else(|| ABSENT.to_string()))
            .collect();
        set.into_iter().collect()
    };
    aspects
        .into_iter()
        .filter_map(|k| {
            let (va, vb) = (values(&fa, &k), values(&fb, &k));
            (va != vb).then_some(SetupDifference {
                aspect: k,
                a: va,
                b: vb,
            })
        })
        .collect()
}

/// Run facts first, then versions and server commands, then flags (stable sort).
fn order(aspect: &str) -> u8 {
    if aspect.starts_with("flag ") {
        3
    } else if aspect.starts_with("server ") {
        2
    } else {
        1
    }
}

/// The setup of one run as `aspect -> value` (facts it does not record are left out).
fn facts(run: &Run) -> BTreeMap<String, String> {
    let i = &run.info;
    let mut f = BTreeMap::new();
    let mut put = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            f.insert(k.to_string(), v);
        }
    };
    put("hardware label", Some(run.hardware.clone()));
    put("sim speed", i.sim_speed.map(crate::fmt::num));
    put("bench tool", i.bench_tool.clone());
    put("server", i.server.clone());
    put("launcher", i.launcher.clone());
    put("dfx-perf", crate::report::dfx_perf_identity(i));
    put("GPU", i.gpu.as_ref().map(|g| g.to_string()));
    put("host", i.hostname.clone());
    put("--assert-baseline", Some(i.assert_baseline.to_string()));
    put("config files", Some(i.config_identities().join(", ")));
    for (k, v) in &i.server_versions {
        f.insert(format!("server version {k}"), v.clone());
    }
    for (name, cmd) in server_commands(run) {
        f.insert(format!("server command {name}"), cmd);
    }
    for r in &i.flags {
        if NOT_SETUP_FLAGS.contains(&r.flag.as_str()) {
            continue;
        }
        let v = match &r.value {
            serde_json::Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        f.insert(format!("flag {}", r.flag), v);
    }
    f
}

/// `servers/NN-<name>/command.txt` per server folder: the command line with its port
/// (picked per run) masked, and the environment it added, without lines naming the run
/// itself (its storage folder).
fn server_commands(run: &Run) -> Vec<(String, String)> {
    let Ok(rd) = std::fs::read_dir(run.dir.join("servers")) else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = rd
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let text = dfx_core::fsutil::read_text_bounded(
                &e.path().join("command.txt"),
                dfx_core::bounds::MAX_RUN_FILE_BYTES,
            )
            .ok()?;
            let lines: Vec<String> = text
                .lines()
                .filter(|l| !l.contains(&run.run_id) && !l.starts_with("# environment"))
                .map(|l| mask_port(l.trim_start_matches('#').trim()))
                .filter(|l| !l.is_empty())
                .collect();
            Some((name, lines.join(" ")))
        })
        .collect();
    out.sort();
    out
}

/// `--port 35261` -> `--port N`: the port is picked free per run.
fn mask_port(line: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut after_port = false;
    for w in line.split(' ') {
        if after_port && w.chars().all(|c| c.is_ascii_digit()) && !w.is_empty() {
            out.push("N");
        } else {
            out.push(w);
        }
        after_port = w == "--port";
    }
    out.join(" ")
}

/// `aspect: A a-values | B b-values`, for the terminal and markdown.
pub(super) fn line(d: &SetupDifference) -> String {
    format!(
        "{}: A {} | B {}",
        d.aspect,
        d.a.join(" / "),
        d.b.join(" / ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_masked() {
        assert_eq!(
            mask_port("sim serve m --host 127.0.0.1 --port 35261 --omni"),
            "sim serve m --host 127.0.0.1 --port N --omni"
        );
    }
}
