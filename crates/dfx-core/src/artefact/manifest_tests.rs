use super::*;

fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("trials/t__e__c1");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(dir.path().join("run.json"), b"{\"run_id\": \"r\"}\n").unwrap();
    std::fs::write(t.join("result.json"), b"{\"completed\": 4}\n").unwrap();
    std::fs::write(t.join("bench.log"), b"").unwrap();
    dir
}

fn problems(dir: &Path) -> Vec<Discrepancy> {
    match verify(dir) {
        Err(ManifestError::Mismatch { problems, .. }) => problems,
        other => panic!("expected a mismatch, got {other:?}"),
    }
}

#[test]
fn a_written_manifest_lists_every_file_but_itself_and_verifies() {
    let dir = folder();
    let m = write(dir.path()).unwrap();
    let paths: Vec<&str> = m.files.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "run.json",
            "trials/t__e__c1/bench.log",
            "trials/t__e__c1/result.json"
        ]
    );
    assert_eq!(m.files[2].size, 17);
    assert_eq!(read(dir.path()).unwrap(), m);
    assert_eq!(verify(dir.path()).unwrap(), 3);
}

#[test]
fn edits_truncations_deletions_and_extra_files_are_named() {
    let dir = folder();
    write(dir.path()).unwrap();
    let result = dir.path().join("trials/t__e__c1/result.json");
    std::fs::write(&result, b"{\"completed\": 5}\n").unwrap();
    assert_eq!(
        problems(dir.path()),
        [Discrepancy::Edited("trials/t__e__c1/result.json".into())]
    );
    std::fs::write(&result, b"{\"comp").unwrap();
    let err = verify(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("trials/t__e__c1/result.json: truncated (6 of 17 bytes)"),
        "{err}"
    );
    std::fs::remove_dir_all(dir.path().join("trials")).unwrap();
    std::fs::write(dir.path().join("extra.txt"), b"x").unwrap();
    assert_eq!(
        problems(dir.path()),
        [
            Discrepancy::Extra("extra.txt".into()),
            Discrepancy::Missing("trials/t__e__c1/bench.log".into()),
            Discrepancy::Missing("trials/t__e__c1/result.json".into()),
        ]
    );
}

#[test]
fn a_folder_without_a_manifest_says_so() {
    let dir = folder();
    let err = verify(dir.path()).unwrap_err();
    assert!(matches!(err, ManifestError::NoManifest { .. }), "{err}");
    assert!(err.to_string().contains("no manifest.json"), "{err}");
    assert!(!update(dir.path(), &["run.json"]).unwrap());
    assert!(!dir.path().join(MANIFEST_FILE).exists());
}

#[test]
fn hostile_manifests_are_invalid_and_read_nothing_outside() {
    let dir = folder();
    for (text, want) in [
        (
            r#"{"manifest_version": 1, "files": [{"path": "../x", "size": 0, "sha256": ""}]}"#,
            "../x",
        ),
        (
            r#"{"manifest_version": 1, "files": [{"path": "/etc/passwd", "size": 0, "sha256": ""}]}"#,
            "/etc/passwd",
        ),
        (r#"{"manifest_version": 2, "files": []}"#, "accepted: 1"),
        (
            r#"{"manifest_version": 1, "files": [], "extra": 1}"#,
            "unknown field",
        ),
        ("[", "EOF"),
    ] {
        std::fs::write(dir.path().join(MANIFEST_FILE), text).unwrap();
        let err = verify(dir.path()).unwrap_err();
        assert!(matches!(err, ManifestError::Invalid { .. }), "{err}");
        assert!(err.to_string().contains(want), "{want}: {err}");
    }
}

#[test]
fn an_update_refreshes_the_rewritten_files_only() {
    let dir = folder();
    write(dir.path()).unwrap();
    std::fs::write(dir.path().join("report.md"), b"# new report\n").unwrap();
    std::fs::write(dir.path().join("run.json"), b"{\"run_id\": \"X\"}\n").unwrap();
    assert!(update(dir.path(), &["report.md"]).unwrap());
    assert_eq!(
        problems(dir.path()),
        [Discrepancy::Edited("run.json".into())],
        "the report is listed now; the tampered file is still caught"
    );
}

#[test]
fn a_server_log_may_grow_but_not_change() {
    let dir = folder();
    let log = dir.path().join("servers/01-t/server.log");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    std::fs::write(&log, b"ready\n").unwrap();
    let m = write(dir.path()).unwrap();
    assert!(
        m.files
            .iter()
            .any(|e| e.appendable && e.path == "servers/01-t/server.log")
    );
    std::fs::write(&log, b"ready\ndfx-perf guard: stopped\n").unwrap();
    assert_eq!(
        verify(dir.path()).unwrap(),
        4,
        "appended after the close: accepted"
    );
    std::fs::write(&log, b"READY\ndfx-perf guard: stopped\n").unwrap();
    assert_eq!(
        problems(dir.path()),
        [Discrepancy::Edited("servers/01-t/server.log".into())]
    );
    std::fs::write(dir.path().join("run.json"), b"{\"run_id\": \"r\"}\nmore\n").unwrap();
    assert_eq!(problems(dir.path()).len(), 2, "other files may not grow");
}

#[test]
fn a_fifo_in_the_folder_or_as_the_manifest_is_refused_not_waited_on() {
    let dir = folder();
    write(dir.path()).unwrap();
    let fifo = dir.path().join("trials/t__e__c1/result.json");
    std::fs::remove_file(&fifo).unwrap();
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.unwrap().success());
    let e = verify(dir.path()).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    assert!(write(dir.path()).is_err(), "a FIFO cannot be listed");
    let manifest = dir.path().join(MANIFEST_FILE);
    std::fs::remove_file(&manifest).unwrap();
    let made = std::process::Command::new("mkfifo").arg(&manifest).status();
    assert!(made.unwrap().success());
    let e = read(dir.path()).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
}
