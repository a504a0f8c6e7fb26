//! The README and the book against the binary: `docs/reference/dfx-perf-cli.md` is what
//! `dfx-perf reference-page` prints from the clap definitions (`DFX_BLESS=1` rewrites
//! it), and the README's literal commands are the ones the literal checks run.

use libtest_mimic::Failed;

use crate::support::{dfx_perf_tool, output_text, root};

const PAGE: &str = "docs/reference/dfx-perf-cli.md";

/// The committed page equals the generator's output.
pub fn dfx_perf_cli_page_is_current() -> Result<(), Failed> {
    let out = dfx_perf_tool(&["reference-page"])?;
    if !out.status.success() {
        return Err(format!("dfx-perf reference-page failed\n{}", output_text(&out)).into());
    }
    let got = String::from_utf8(out.stdout).map_err(|e| e.to_string())?;
    let path = root().join(PAGE);
    if std::env::var("DFX_BLESS").is_ok_and(|v| v == "1") {
        dfx_core::fsutil::write_atomic(&path, got.as_bytes()).map_err(|e| e.to_string())?;
        return Ok(());
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    if got != want {
        return Err(format!(
            "{PAGE} is stale (a dfx-perf flag changed); rewrite it with\n  \
             DFX_BLESS=1 cargo test --test suite_cli reference_page"
        )
        .into());
    }
    for needle in [
        "## `dfx-perf recalibrate`",
        "`--fail-on-regression`",
        "`DFX_HISTORY`",
    ] {
        if !got.contains(needle) {
            return Err(format!("{PAGE} lacks {needle}").into());
        }
    }
    Ok(())
}

/// The commands the literal checks run (`cargo test -- --assert-baseline
/// test_qwen3_tts_base::`) and the main job are the README's, word for word.
pub fn readme_holds_the_literal_commands() -> Result<(), Failed> {
    let readme = std::fs::read_to_string(root().join("README.md")).map_err(|e| e.to_string())?;
    for cmd in [
        "cargo test --release -- --server sim",
        "cargo test --release -- --assert-baseline test_qwen3_tts_base::",
        "cargo test --workspace --all-targets",
    ] {
        if !readme.contains(cmd) {
            return Err(format!("README.md no longer shows `{cmd}`").into());
        }
    }
    Ok(())
}
