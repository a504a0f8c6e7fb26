//! The hardware label: selects hardware-nested baselines and names results.
//!
//! Order: the `--hardware` flag, else `SIM` when the simulator is the server (the harness
//! uses [`sim_label`] for `SIMx<K>` when it is sped up), else the GPU 0 name from
//! `nvidia-smi` normalised to the first matching upstream token, else `na`. A GPU that `nvidia-smi` reports but the token list
//! does not know gets a compact form of its name (upstream does the same), e.g.
//! `NVIDIA GeForce RTX 4090` → `GeForceRTX4090`.

mod labels;
pub use labels::{UnknownLabel, check as check_label, is_builtin};

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Upstream's list of GPU/NPU tokens, in matching order (first match wins). `GB200` comes
/// before `B200`: upstream lists `B200` first and so labels a GB200 node B200 (a bug; the
/// word-boundary rule of [`normalise_gpu_name`] keeps them apart in either order).
pub(crate) const KNOWN_TOKENS: &[&str] = &[
    "GB200", "B200", "H100", "H800", "H200", "H20", "L40S", "L40", "L4", "A100", "A800", "A10G",
    "A10", "A30", "MI325", "MI300", "MI250", "B60", "S5000", "910B4", "910B", "910", "310P", "A2",
    "A3",
];

/// The label when nothing identifies the hardware.
pub const UNKNOWN: &str = "na";

/// The label as results write it under `Hardware` (upstream's `hardware_json_value`):
/// `""` for [`UNKNOWN`], else the label.
pub fn result_value(label: &str) -> &str {
    if label == UNKNOWN { "" } else { label }
}

/// The label of the simulated server.
pub const SIM: &str = "SIM";

/// What a hardware label may hold, for error messages ([`label_syntax_ok`]).
pub const LABEL_SYNTAX: &str = "letters, digits, `.`, `_`, `-` (e.g. H100, H20, A3)";

/// Whether `label` is spelled as a label must be: non-empty ASCII letters, digits, `.`,
/// `_`, `-` (it names result folders, `baselines/<LABEL>.json` and CI step keys).
pub fn label_syntax_ok(label: &str) -> bool {
    !label.is_empty()
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

/// How long `nvidia-smi` may take before detection gives up on it.
pub(crate) const NVIDIA_SMI_TIMEOUT: Duration = Duration::from_secs(5);

/// Normalises a GPU name such as `NVIDIA H100 80GB HBM3` to the first matching token of
/// [`KNOWN_TOKENS`], or `None`.
///
/// Unlike upstream's plain substring test, a token ending in a digit must not continue
/// into more digits (`H20` does not match `H200`, `A10` not `A100`, `A3` not `A30`), and a
/// token must start at a word boundary (digit-led tokens such as `910B4` may follow
/// letters: `Ascend910B4`). Letters after a token are allowed (`MI300X` → `MI300`), and
/// so is anything after a letter-final token (`Ascend310P3` → `310P`). Case-insensitive.
pub(crate) fn normalise_gpu_name(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    let bytes = upper.as_bytes();
    KNOWN_TOKENS.iter().copied().find(|token| {
        upper.match_indices(token).any(|(at, _)| {
            let end = at + token.len();
            let ends_in_digit = token.as_bytes()[token.len() - 1].is_ascii_digit();
            let after_ok = !ends_in_digit || bytes.get(end).is_none_or(|b| !b.is_ascii_digit());
            let before_ok = at == 0 || {
                let b = bytes[at - 1];
                !b.is_ascii_alphanumeric()
                    || (token.as_bytes()[0].is_ascii_digit() && b.is_ascii_alphabetic())
            };
            after_ok && before_ok
        })
    })
}

/// Upstream's fallback label for a device name no token matches: the name without
/// non-alphanumerics and without a leading vendor word, at most 48 characters.
pub(crate) fn compact_name(name: &str) -> Option<String> {
    let compact: String = name.chars().filter(char::is_ascii_alphanumeric).collect();
    let upper = compact.to_ascii_uppercase();
    let rest = ["NVIDIA", "AMD", "ASCEND", "HUAWEI"]
        .iter()
        .find(|p| upper.starts_with(*p))
        .map_or(compact.as_str(), |p| &compact[p.len()..]);
    let out: String = rest.chars().take(48).collect();
    (!out.is_empty()).then_some(out)
}

/// The hardware label of a run: the flag if given, else `SIM` when the simulator is the
/// server, else the GPU 0 name reported by `nvidia-smi` (when present) normalised, else
/// `na`.
///
/// The simulator comes before `nvidia-smi` (the original design listed it after; see
/// `docs/architecture.md` ("Hardware label")): a simulated run on a GPU runner measures
/// the simulator, not the GPU, and must never be judged against that GPU's baselines.
pub fn detect(flag: Option<&str>, simulated: bool) -> String {
    detect_with(flag, simulated, query_gpu_name)
}

/// [`detect`] with the GPU query injected (for tests).
pub(crate) fn detect_with(
    flag: Option<&str>,
    simulated: bool,
    query: impl FnOnce() -> Option<String>,
) -> String {
    if let Some(f) = flag.map(str::trim).filter(|f| !f.is_empty()) {
        return f.to_string();
    }
    if simulated {
        return SIM.into();
    }
    if let Some(name) = query() {
        if let Some(token) = normalise_gpu_name(&name) {
            return token.to_string();
        }
        if let Some(c) = compact_name(&name) {
            return c;
        }
    }
    UNKNOWN.into()
}

/// The label of a simulated run whose figures are on the scale of `speed`: `SIM` in real
/// time (and for a time-lapsed run, whose figures are on the real-time scale: pass `None`),
/// `SIMx<K>` when a bench measured the sped-up simulator on the wall clock (`SIMx20`), so
/// baselines measured at one speed are never applied at another.
pub fn sim_label(speed: Option<f64>) -> String {
    match speed {
        Some(k) if k != 1.0 => format!("{SIM}x{k}"),
        _ => SIM.into(),
    }
}

/// GPU 0's name from `nvidia-smi --query-gpu=name --format=csv,noheader -i 0`, when the
/// tool is on `PATH` and answers within [`NVIDIA_SMI_TIMEOUT`]; any failure gives `None`.
pub(crate) fn query_gpu_name() -> Option<String> {
    let out = nvidia_smi(&["--query-gpu=name", "--format=csv,noheader", "-i", "0"])?;
    let first = out.lines().next()?.trim();
    (!first.is_empty()).then(|| first.to_string())
}

/// What `nvidia-smi` tells about the machine's GPUs, for a run's fingerprint.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GpuFacts {
    /// GPU 0's name.
    pub name: String,
    /// Driver version.
    pub driver: Option<String>,
    /// GPU 0's memory in MiB.
    pub memory_mib: Option<f64>,
    /// Number of GPUs listed.
    pub count: usize,
}

/// [`GpuFacts`] from `nvidia-smi --query-gpu=name,driver_version,memory.total
/// --format=csv,noheader,nounits`; `None` without the tool, on a failure or a timeout.
pub fn query_gpu_facts() -> Option<GpuFacts> {
    let out = nvidia_smi(&[
        "--query-gpu=name,driver_version,memory.total",
        "--format=csv,noheader,nounits",
    ])?;
    parse_gpu_facts(&out)
}

/// Parses the CSV lines of [`query_gpu_facts`].
pub(crate) fn parse_gpu_facts(out: &str) -> Option<GpuFacts> {
    let lines: Vec<&str> = out
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut first = lines.first()?.split(',').map(str::trim);
    let name = first.next().filter(|n| !n.is_empty())?.to_string();
    let known = |v: &&str| !v.is_empty() && !v.starts_with('[');
    let driver = first.next().filter(known).map(str::to_string);
    let memory_mib = first.next().filter(known).and_then(|m| m.parse().ok());
    Some(GpuFacts {
        name,
        driver,
        memory_mib,
        count: lines.len(),
    })
}

/// Runs `nvidia-smi args` with a deadline; its stdout when it succeeded.
fn nvidia_smi(args: &[&str]) -> Option<String> {
    run_nvidia_smi(args, NVIDIA_SMI_TIMEOUT)
}

/// Whether `nvidia-smi` is on `PATH`.
pub fn has_nvidia_smi() -> bool {
    find_on_path("nvidia-smi").is_some()
}

/// Runs `nvidia-smi args`, killed after `timeout`; its stdout (at most 1 MiB) when it
/// exited successfully.
pub fn run_nvidia_smi(args: &[&str], timeout: Duration) -> Option<String> {
    let exe = find_on_path("nvidia-smi")?;
    let mut child = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let mut out = String::new();
    child
        .stdout
        .take()?
        .take(1 << 20)
        .read_to_string(&mut out)
        .ok()?;
    status.success().then_some(out)
}

fn find_on_path(exe: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(exe))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_facts_from_nvidia_smi_csv() {
        let two =
            "NVIDIA H100 80GB HBM3, 550.54.15, 81559\nNVIDIA H100 80GB HBM3, 550.54.15, 81559\n";
        let f = parse_gpu_facts(two).unwrap();
        assert_eq!(f.name, "NVIDIA H100 80GB HBM3");
        assert_eq!(f.driver.as_deref(), Some("550.54.15"));
        assert_eq!(f.memory_mib, Some(81559.0));
        assert_eq!(f.count, 2);
        let odd = parse_gpu_facts("NVIDIA GB200, [N/A], [N/A]\n").unwrap();
        assert_eq!((odd.driver, odd.memory_mib, odd.count), (None, None, 1));
        assert_eq!(parse_gpu_facts(""), None);
        assert_eq!(parse_gpu_facts(" , 1, 2"), None);
    }

    #[test]
    fn token_boundaries() {
        let cases = [
            ("NVIDIA H100 80GB HBM3", Some("H100")),
            ("NVIDIA H100 PCIe", Some("H100")),
            ("NVIDIA H200", Some("H200")),
            ("NVIDIA H200 NVL", Some("H200")),
            ("NVIDIA H20", Some("H20")),
            ("NVIDIA H20-3e", Some("H20")),
            ("NVIDIA H800", Some("H800")),
            ("NVIDIA B200", Some("B200")),
            ("NVIDIA GB200", Some("GB200")),
            ("NVIDIA GB200 NVL72", Some("GB200")),
            ("NVIDIA L40S", Some("L40S")),
            ("NVIDIA L40", Some("L40")),
            ("NVIDIA L4", Some("L4")),
            ("NVIDIA A100-SXM4-80GB", Some("A100")),
            ("NVIDIA A10G", Some("A10G")),
            ("NVIDIA A10", Some("A10")),
            ("NVIDIA A30", Some("A30")),
            ("NVIDIA A2", Some("A2")),
            ("AMD Instinct MI300X", Some("MI300")),
            ("AMD Instinct MI325X", Some("MI325")),
            ("Ascend910B4", Some("910B4")),
            ("Ascend 910B", Some("910B")),
            ("Ascend 310P3", Some("310P")),
            ("Ascend310P3", Some("310P")),
            ("nvidia h100", Some("H100")),
            ("NVIDIA RTX A2000", None),
            ("NVIDIA GeForce RTX 4090", None),
            ("", None),
        ];
        for (name, want) in cases {
            assert_eq!(normalise_gpu_name(name), want, "{name}");
        }
    }

    #[test]
    fn detection_order() {
        let never = || -> Option<String> { panic!("must not query when the flag is given") };
        assert_eq!(detect_with(Some("H20"), true, never), "H20");
        assert_eq!(detect_with(Some(" A3 "), false, || None), "A3");
        assert_eq!(
            detect_with(Some(""), false, || Some("NVIDIA H100 80GB HBM3".into())),
            "H100"
        );
        let no_gpu_query = || -> Option<String> { panic!("a simulated run is SIM") };
        assert_eq!(detect_with(None, true, no_gpu_query), SIM);
        assert_eq!(
            detect_with(None, false, || Some("NVIDIA H200".into())),
            "H200"
        );
        assert_eq!(
            detect_with(None, false, || Some("NVIDIA GeForce RTX 4090".into())),
            "GeForceRTX4090"
        );
        assert_eq!(detect_with(None, true, || None), SIM);
        assert_eq!(detect_with(None, false, || None), UNKNOWN);
        assert_eq!(detect_with(None, true, || Some("   ".into())), SIM);
    }

    #[test]
    fn sim_labels_carry_the_speed() {
        assert_eq!(sim_label(None), "SIM");
        assert_eq!(sim_label(Some(1.0)), "SIM");
        assert_eq!(sim_label(Some(20.0)), "SIMx20");
        assert_eq!(sim_label(Some(2.5)), "SIMx2.5");
    }

    #[test]
    fn real_detection_never_fails() {
        // Whatever this machine has, detection answers with a non-empty label.
        assert!(!detect(None, true).is_empty());
    }

    #[test]
    fn label_syntax() {
        for ok in ["H100", "SIMx2.5", "910B4", "my_gpu-1"] {
            assert!(label_syntax_ok(ok), "{ok}");
        }
        for bad in ["", "H 100", "H100/x", "H100$", "Ä100"] {
            assert!(!label_syntax_ok(bad), "{bad:?}");
        }
    }
}
