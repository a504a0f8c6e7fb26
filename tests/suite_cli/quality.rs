//! Quality capture end to end: a `seed_tts_wer_eval` entry against the simulator keeps
//! every measured request's audio as a WAV with a manifest; `--quality-cmd` receives the
//! manifest and its JSON lands in the result; without it the result says the quality was
//! not evaluated.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use libtest_mimic::Failed;
use serde_json::Value;

use crate::interrupt::Suite;
use crate::support::{SIM_NATIVE, fixture, output_text, perf_spawn, sim_native, write_executable};

/// The hook: records its argument, checks every WAV of the manifest exists, prints a WER.
const HOOK: &str = r#"#!/bin/sh
echo "$1" > "$(dirname "$0")/hook-arg"
n=0
while IFS= read -r line; do
  wav=$(printf '%s' "$line" | sed 's/.*"audio":"\([^"]*\)".*/\1/')
  test -s "$wav" || { echo "missing $wav" >&2; exit 4; }
  n=$((n + 1))
done < "$1"
printf '{"seed_tts_content_evaluated": %d, "seed_tts_content_error_mean": 0.025, "seed_tts_content_metric": "wer"}\n' "$n"
"#;

fn run(env: &[(&str, &str)], extra: &[&str]) -> Result<(Output, tempfile::TempDir), Failed> {
    sim_native("sim_quality.json", extra, env)
}

fn trial_dir(results: &Path) -> Result<PathBuf, Failed> {
    let dirs: Vec<PathBuf> = std::fs::read_dir(results.join("latest/trials"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    match dirs.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(format!("one trial folder expected: {dirs:?}").into()),
    }
}

pub fn quality_capture_keeps_audio_and_runs_the_hook() -> Result<(), Failed> {
    let tools = tempfile::tempdir()?;
    let hook = tools.path().join("hook.sh");
    write_executable(&hook, HOOK)?;
    let hook_cmd = hook.display().to_string();
    let (out, results) = run(&[], &["--quality-cmd", &hook_cmd])?;
    if out.status.code() != Some(0) {
        return Err(format!("suite failed: {}", output_text(&out)).into());
    }
    let dir = trial_dir(results.path())?;
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("result.json"))?)?;
    let manifest_path = dir.join("quality/manifest.jsonl");
    let arg = std::fs::read_to_string(tools.path().join("hook-arg"))?;
    let same = std::fs::canonicalize(arg.trim())? == std::fs::canonicalize(&manifest_path)?;
    if !same {
        return Err(format!("the hook got {arg:?}, not {}", manifest_path.display()).into());
    }
    let manifest = std::fs::read_to_string(&manifest_path)?;
    let rows: Vec<Value> = manifest
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let completed = doc["completed"].as_u64().unwrap_or(0);
    if completed != 5 || rows.len() as u64 != completed {
        return Err(format!("{completed} completed, {} manifest rows", rows.len()).into());
    }
    let mut total = 0.0;
    for row in &rows {
        let wav = row["audio"].as_str().ok_or("no audio path")?;
        let r = hound::WavReader::open(wav).map_err(|e| format!("{wav}: {e}"))?;
        let secs = r.duration() as f64 / r.spec().sample_rate as f64;
        let said = row["audio_duration_s"].as_f64().unwrap_or(-1.0);
        if (secs - said).abs() > 1e-6 || row["text"].as_str().is_none_or(str::is_empty) {
            return Err(format!("{wav}: {secs} s against {row}").into());
        }
        total += secs;
    }
    let reported = doc["total_audio_duration_s"].as_f64().unwrap_or(-1.0);
    let merged = doc["seed_tts_content_evaluated"].as_u64() == Some(completed)
        && doc["seed_tts_content_error_mean"].as_f64() == Some(0.025)
        && doc["seed_tts_saved_audio"].as_u64() == Some(completed)
        && doc["quality_evaluated"] == true;
    if (total - reported).abs() > 1e-3 || !merged {
        return Err(format!("WAVs {total} s, result {reported} s; result {doc:#}").into());
    }
    Ok(())
}

pub fn without_a_hook_the_result_says_not_evaluated() -> Result<(), Failed> {
    let (out, results) = run(&[], &[])?;
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(
        trial_dir(results.path())?.join("result.json"),
    )?)?;
    let why = doc["seed_tts_eval_setup_error"].as_str().unwrap_or("");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(0)
        || doc["quality_evaluated"] != false
        || !why.contains("quality not evaluated")
        || !stderr.contains("quality not evaluated")
    {
        return Err(format!("{}\nresult: {doc:#}", output_text(&out)).into());
    }
    Ok(())
}

/// A hook that never ends: records its pid and its background child's, then waits. The
/// child's pid file appears last (renamed into place), so once it exists both can be read.
const STUCK_HOOK: &str = r#"#!/bin/sh
echo $$ > "$(dirname "$0")/hook-pid"
sleep 300 &
echo $! > "$(dirname "$0")/child.tmp" && mv "$(dirname "$0")/child.tmp" "$(dirname "$0")/child-pid"
wait
"#;

fn alive(pid: i32) -> bool {
    // A zombie has an empty command line; it is gone for our purpose.
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| !c.is_empty())
}

fn wait_for(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + within;
    while Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

/// A hook still running when the suite gets SIGTERM, or SIGKILL (its pid alone), is
/// stopped with its whole process group: by the signal handler's teardown, or by the
/// hook's guard.
pub fn a_running_hook_is_stopped_when_the_suite_is_signalled_or_killed() -> Result<(), Failed> {
    for kill in [false, true] {
        let tools = tempfile::tempdir()?;
        let hook = tools.path().join("hook.sh");
        write_executable(&hook, STUCK_HOOK)?;
        let hook_cmd = hook.display().to_string();
        let mut args = SIM_NATIVE.to_vec();
        args.extend(["--quality-cmd", &hook_cmd]);
        let (child, _results) = perf_spawn(&fixture("sim_quality.json"), &args, &[])?;
        let mut suite = Suite::new(child);
        let pids = tools.path().join("child-pid");
        if !wait_for(Duration::from_secs(120), || {
            pids.is_file() || suite.exited()
        }) {
            return Err("the hook never started".into());
        }
        let read = |f: &str| -> Result<i32, Failed> {
            let text = std::fs::read_to_string(tools.path().join(f))?;
            Ok(text.trim().parse()?)
        };
        let (hook_pid, child_pid) = (read("hook-pid")?, read("child-pid")?);
        if !alive(hook_pid) || !alive(child_pid) {
            return Err("the hook and its child must run before the signal".into());
        }
        if kill {
            suite.child.kill()?;
        } else {
            suite.signal("TERM")?;
        }
        let out = suite.finish()?;
        // The guard's grace (5 s) is the longest either path may take.
        let gone = wait_for(Duration::from_secs(20), || {
            !alive(hook_pid) && !alive(child_pid)
        });
        let how = if kill { "SIGKILL" } else { "SIGTERM" };
        if !gone {
            return Err(format!(
                "after {how} the hook ({hook_pid}) or its child ({child_pid}) still runs\n{}",
                output_text(&out)
            )
            .into());
        }
        // The simulator's group and the hook's, both named.
        let stderr = String::from_utf8_lossy(&out.stderr);
        let said = stderr.contains("stopping 2 process group(s): ")
            && stderr.contains("server (pgid ")
            && stderr.contains("quality hook (pgid ");
        if !kill && (out.status.code() != Some(130) || !said) {
            return Err(format!(
                "SIGTERM: exit 130 and two groups stopped expected\n{}",
                output_text(&out)
            )
            .into());
        }
    }
    Ok(())
}
