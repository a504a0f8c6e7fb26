//! The generated reference pages in `docs/reference/` are current: each is rendered again
//! from the code (`dfx_harness::reference`) and must equal the committed file.
//! `DFX_BLESS=1` rewrites the committed files instead of failing.

use std::path::{Path, PathBuf};

fn reference_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reference")
}

/// Compares (or, under `DFX_BLESS=1`, writes) each page; returns the stale ones.
fn check(pages: &[(&str, String)]) -> Vec<String> {
    let bless = std::env::var("DFX_BLESS").is_ok_and(|v| v == "1");
    let dir = reference_dir();
    let mut stale = Vec::new();
    for (name, text) in pages {
        let path = dir.join(name);
        if bless {
            dfx_core::fsutil::write_atomic(&path, text.as_bytes()).expect("write the page");
            continue;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != *text {
            stale.push(format!("docs/reference/{name}"));
        }
    }
    stale
}

#[test]
fn generated_reference_pages_are_current() {
    let stale = check(&dfx_harness::reference::pages());
    assert!(
        stale.is_empty(),
        "stale generated pages (the code changed): {stale:?}; rewrite them with \
         `DFX_BLESS=1 cargo test -p dfx-harness --test reference_pages` and commit"
    );
}

#[test]
fn pages_name_what_the_code_defines() {
    let flags = dfx_harness::reference::suite_flags_page();
    for needle in [
        "`--assert-baseline`",
        "`DFX_SIM_SPEED`",
        "`--logfile <PATH>`",
    ] {
        assert!(
            flags.contains(needle),
            "docs/reference/suite-flags.md lacks {needle}"
        );
    }
    assert!(
        !flags.contains("`fake`"),
        "a hidden test seam leaked into the page"
    );
    let metrics = dfx_harness::reference::metrics_page();
    assert!(metrics.contains("| `audio_throughput` | audio s / s | higher is better |"));
    let classes = dfx_harness::reference::failure_classes_page();
    let interrupted = classes.find("`interrupted`").expect("interrupted listed");
    let breach = classes
        .find("`breach_within_noise`")
        .expect("breach_within_noise listed");
    assert!(
        interrupted < breach,
        "classes must be listed most causal first"
    );
    let keys = dfx_harness::reference::config_keys_page();
    assert!(keys.contains("`ready_timeout_s`") && keys.contains("`max_concurrency`"));
}
