//! The README and the book against the binary: `docs/reference/dfx-perf-cli.md` is what
//! `dfx-perf reference-page` prints from the clap definitions (`DFX_BLESS=1` rewrites
//! it), and the README's literal commands are the ones the literal checks run.

use libtest_mimic::Failed;

use crate::support::{check, dfx_perf_tool, output_text, perf, root};

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

/// The trials recipe 3 of the README names.
const RECIPE_TRIALS: [&str; 2] = [
    "test_my_tts::default_voice_throughput_seed-tts-text::c1",
    "test_my_tts::default_voice_throughput_seed-tts-text::c8",
];

/// The README's recipe 3 config, as written (the first JSON block after its heading),
/// loads, lists the trials the README names without thresholds, and runs on the
/// simulator with a stock-headed deploy file of the name it picks.
pub fn readme_recipe_config_lists_and_runs() -> Result<(), Failed> {
    let readme = std::fs::read_to_string(root().join("README.md")).map_err(|e| e.to_string())?;
    let recipe = readme
        .split("## Recipe 3")
        .nth(1)
        .ok_or("README.md has no recipe 3")?;
    let block = recipe
        .split("```json\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .ok_or("recipe 3 has no JSON block")?;
    let json: String = block
        .lines()
        .map(|l| l.trim_start().to_owned() + "\n")
        .collect();
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let config = dir.path().join("test_my_tts.json");
    std::fs::write(&config, json).map_err(|e| e.to_string())?;
    let deploy = dir.path().join("deploy");
    std::fs::create_dir(&deploy).map_err(|e| e.to_string())?;
    std::fs::copy(
        root().join("deploy/qwen3_tts.yaml"),
        deploy.join("my_tts.yaml"),
    )
    .map_err(|e| e.to_string())?;
    let config = config.to_string_lossy().into_owned();
    let deploy = deploy.to_string_lossy().into_owned();
    let base = ["--deploy-dir", deploy.as_str()];
    let list = perf(
        &config,
        &[&base[..], &["--list-verbose", "test_my_tts::"]].concat(),
        &[],
    )?;
    check(list.code() == Some(0), "the listing must succeed", &list)?;
    let out = list.stdout();
    for t in RECIPE_TRIALS {
        check(
            out.contains(&format!("{t}: test")),
            &format!("README names {t}"),
            &list,
        )?;
    }
    check(
        out.matches("threshold  none").count() == 2,
        "no thresholds yet",
        &list,
    )?;
    let sim = [
        ("DFX_SERVER", "sim"),
        ("DFX_BENCH", "native"),
        ("DFX_SIM_SPEED", "20"),
    ];
    let run = perf(&config, &[&base[..], &["test_my_tts::"]].concat(), &sim)?;
    check(
        run.code() == Some(0),
        "the recipe's trials must pass on the simulator",
        &run,
    )?;
    let passed: Vec<(String, String)> = RECIPE_TRIALS
        .iter()
        .map(|t| (t.to_string(), "passed".to_string()))
        .collect();
    check(
        run.outcomes()? == passed,
        "both trials ran and passed",
        &run,
    )
}
