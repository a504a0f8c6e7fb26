//! `bin()` hands out what cargo builds for this package's own tests (`CARGO_BIN_EXE_*`,
//! which makes every `cargo test --workspace` build the test executables up front), once
//! per process, and the executables run.

use std::path::Path;
use std::process::Command;

#[test]
fn bin_finds_the_executables_cargo_built_for_this_test() {
    for (name, built) in [
        ("dfx-fake-server", env!("CARGO_BIN_EXE_dfx-fake-server")),
        ("dfx-launch-helper", env!("CARGO_BIN_EXE_dfx-launch-helper")),
        ("dfx-fake-vllm", env!("CARGO_BIN_EXE_dfx-fake-vllm")),
    ] {
        let found = dfx_testkit::bin(name);
        assert_eq!(
            found.canonicalize().unwrap(),
            Path::new(built).canonicalize().unwrap(),
            "{name}"
        );
        assert!(
            std::ptr::eq(found, dfx_testkit::bin(name)),
            "built once: {name}"
        );
    }
}

#[test]
fn the_guard_is_the_suites_and_refuses_a_bad_command_line() {
    let guard = dfx_testkit::bin("dfx-perf-guard");
    assert_eq!(guard.file_name().unwrap(), "dfx-perf-guard");
    let out = Command::new(guard).arg("--no-such-flag").output().unwrap();
    assert!(!out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("dfx-perf guard: "), "{stderr}");
}

#[test]
fn the_fake_vllm_refuses_anything_but_bench_serve() {
    let out = Command::new(dfx_testkit::bin("dfx-fake-vllm"))
        .arg("serve")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("expected `bench serve --omni"), "{stderr}");
}
