//! Flag validation: every bad flag named with what is accepted; defaults found.

use super::*;
use crate::cli::try_parse_from;

fn project(dir: &Path) -> Project {
    Project {
        root: dir.to_path_buf(),
        sim_bin: dir.join("sim"),
        guard_bin: dir.join("guard"),
        test_seams: None,
    }
}

fn config(dir: &Path, argv: &[&str]) -> Result<SuiteConfig, FlagErrors> {
    let parsed = try_parse_from(std::iter::once("perf").chain(argv.iter().copied())).unwrap();
    SuiteConfig::from_parsed(parsed, &project(dir))
}

fn with_configs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("perf-configs")).unwrap();
    for f in ["b.json", "a.json", "notes.txt"] {
        std::fs::write(dir.path().join("perf-configs").join(f), "[]").unwrap();
    }
    dir
}

#[test]
fn default_config_files_are_sorted_json_files() {
    let dir = with_configs();
    let cfg = config(dir.path(), &[]).unwrap();
    let names: Vec<_> = cfg
        .config_files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["a.json", "b.json"]);
    assert_eq!(cfg.libtest.test_threads, Some(1));
    assert_eq!(cfg.server, ServerChoice::Auto { server_bin: None });
}

#[test]
fn missing_default_configs_is_a_flag_error() {
    let dir = tempfile::tempdir().unwrap();
    let e = config(dir.path(), &[]).unwrap_err().to_string();
    assert!(
        e.contains("--test-config-file") && e.contains("perf-configs"),
        "{e}"
    );
}

#[test]
fn colon_lists_are_split() {
    let dir = with_configs();
    let cfg = config(dir.path(), &["--test-config-file", "x.json:y.json,z.json"]).unwrap();
    assert_eq!(
        cfg.config_files,
        [PathBuf::from("x.json"), "y.json".into(), "z.json".into()]
    );
}

#[test]
fn every_bad_flag_is_reported_with_its_name_and_accepted_values() {
    let dir = with_configs();
    let e = config(
        dir.path(),
        &[
            "--sim-speed",
            "0",
            "--server-bin",
            "/nonexistent/vllm-omni",
            "--hardware",
            "../x",
            "--ready-timeout",
            "0",
        ],
    )
    .unwrap_err();
    let flags: Vec<_> = e.0.iter().map(|e| e.flag).collect();
    assert_eq!(
        flags,
        [
            "--hardware",
            "--server-bin",
            "--sim-speed",
            "--ready-timeout"
        ]
    );
    let text = e.to_string();
    assert!(
        text.contains("DFX_SIM_SPEED") && text.contains("accepted: a number from 0.01 to 1000"),
        "{text}"
    );
}

#[test]
fn partition_is_validated_naming_the_flag_and_what_is_accepted() {
    let dir = with_configs();
    let cfg = config(dir.path(), &["--partition", "hash:2/3"]).unwrap();
    assert_eq!(
        cfg.partition.map(|p| p.to_string()).as_deref(),
        Some("hash:2/3")
    );
    assert_eq!(config(dir.path(), &[]).unwrap().partition, None);
    for bad in [
        "count:0/2",
        "count:3/2",
        "count:1/0",
        "count:1/2000",
        "slice:1/2",
        "1/2",
    ] {
        let e = config(dir.path(), &["--partition", bad])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--partition (DFX_PARTITION)")
                && e.contains(&format!("`{bad}`"))
                && e.contains("accepted: count:K/N or hash:K/N"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn repeats_is_bounded() {
    let dir = with_configs();
    assert_eq!(
        config(dir.path(), &["--repeats", "5"]).unwrap().repeats,
        std::num::NonZeroU32::new(5)
    );
    for bad in ["0", "101"] {
        let e = config(dir.path(), &["--repeats", bad])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--repeats (DFX_REPEATS)") && e.contains("an integer from 1 to 100"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn attach_mode_conflicts_with_sim() {
    let dir = with_configs();
    let e = config(
        dir.path(),
        &["--server", "sim", "--server-url", "http://127.0.0.1:1"],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("--server-url") && e.contains("--server sim"),
        "{e}"
    );
    let cfg = config(dir.path(), &["--server-url", "http://127.0.0.1:8091/"]).unwrap();
    assert_eq!(
        cfg.server,
        ServerChoice::Attach {
            url: "http://127.0.0.1:8091".into()
        }
    );
    let e = config(dir.path(), &["--server-url", "127.0.0.1:8091"]).unwrap_err();
    assert!(e.to_string().contains("http://host:port"));
}

#[test]
fn sim_options_and_notes() {
    let dir = with_configs();
    let cfg = config(
        dir.path(),
        &[
            "--server",
            "sim",
            "--sim-speed",
            "20",
            "--sim-faults",
            "crash-at-inflight=4",
        ],
    )
    .unwrap();
    assert_eq!(
        cfg.server,
        ServerChoice::Sim {
            speed: Some(20.0),
            faults: Some("crash-at-inflight=4".into())
        }
    );
    // a bad spec is a flag error, found with the simulator's own parser
    for bad in [
        "crash_at=4",
        "ready-after=1e300",
        "stall-after-chunks=99999999999",
    ] {
        let e = config(dir.path(), &["--server", "sim", "--sim-faults", bad]).unwrap_err();
        assert!(e.to_string().contains("--sim-faults"), "{bad}: {e}");
    }
    let cfg = config(dir.path(), &["--sim-speed", "20", "--test-threads", "4"]).unwrap();
    assert_eq!(cfg.notes.len(), 2, "{:?}", cfg.notes);
    assert_eq!(cfg.libtest.test_threads, Some(1));
}

#[test]
fn a_root_without_perf_configs_is_named_once() {
    let dir = tempfile::tempdir().unwrap();
    let e = config(dir.path(), &[]).unwrap_err().0;
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!((e[0].flag, e[0].env), ("--root", "DFX_ROOT"));
    let looked_for = dir.path().join("perf-configs").display().to_string();
    assert!(e[0].problem.contains(&looked_for), "{e:?}");
    assert!(e[0].accepted.contains("--test-config-file"), "{e:?}");

    let gone = dir.path().join("gone");
    let gone = gone.to_str().unwrap();
    let e = config(dir.path(), &["--root", gone]).unwrap_err().0;
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(
        (e[0].value.as_str(), e[0].problem.as_str()),
        (gone, "no such folder")
    );
    // Config files named explicitly need no perf-configs/.
    let file = dir.path().join("a.json");
    std::fs::write(&file, "[]").unwrap();
    config(dir.path(), &["--test-config-file", file.to_str().unwrap()]).unwrap();
}
