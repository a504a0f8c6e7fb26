//! Shared helpers of the dfx-core integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use dfx_core::config::{ConfigErrors, LoadOptions, load_plan};
use dfx_core::plan::Plan;

/// The repository root (two levels above this crate).
pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root exists")
}

/// `tests/reference/upstream/tests` (see `dfx_core::reference`); panics with where it
/// looked when missing: these tests must not silently skip.
pub(crate) fn upstream_dir() -> PathBuf {
    dfx_core::reference::reference_dir()
        .unwrap_or_else(|e| panic!("{e}"))
        .join("upstream/tests")
}

/// Every `*.json` directly in `dir`, sorted.
pub(crate) fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

/// A scratch folder with `deploy/` and `baselines/` for building configs in tests.
pub(crate) struct Fx {
    pub dir: tempfile::TempDir,
}

impl Fx {
    pub(crate) fn new() -> Fx {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("deploy")).unwrap();
        std::fs::create_dir_all(dir.path().join("baselines")).unwrap();
        Fx { dir }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `text` to `<dir>/<name>` and returns the path.
    pub(crate) fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    pub(crate) fn opts(&self, files: &[PathBuf], hardware: &str) -> LoadOptions {
        LoadOptions {
            files: files.to_vec(),
            hardware: hardware.into(),
            deploy_dir: self.dir.path().join("deploy"),
            baselines_dir: self.dir.path().join("baselines"),
            mark: None,
        }
    }

    /// Loads `text` as one config file `cfg.json` with hardware `H100`.
    pub(crate) fn load(&self, text: &str) -> Result<Plan, ConfigErrors> {
        let f = self.write("cfg.json", text);
        load_plan(&self.opts(&[f], "H100"))
    }

    /// Replaces this folder's path with `$TMP` so messages are stable.
    pub(crate) fn scrub(&self, s: &str) -> String {
        s.replace(&self.dir.path().display().to_string(), "$TMP")
    }

    /// The error report of loading `text`, scrubbed; panics if it loads.
    pub(crate) fn errors(&self, text: &str) -> String {
        match self.load(text) {
            Ok(p) => panic!(
                "expected config errors, got a plan of {} trial(s)",
                p.trials.len()
            ),
            Err(e) => self.scrub(&e.to_string()),
        }
    }
}

/// A minimal valid TTS case with one entry; `entry` is merged over the default entry.
pub(crate) fn tts_case(test_name: &str, entry: serde_json::Value) -> serde_json::Value {
    let mut e = serde_json::json!({
        "task": "voice_clone",
        "eval_phase": "latency",
        "dataset_name": "seed-tts",
        "backend": "openai-audio-speech",
        "endpoint": "/v1/audio/speech",
        "num_prompts": [4],
        "max_concurrency": [1]
    });
    for (k, v) in entry.as_object().unwrap() {
        if v.is_null() {
            e.as_object_mut().unwrap().remove(k);
        } else {
            e[k] = v.clone();
        }
    }
    serde_json::json!({
        "test_name": test_name,
        "mark": [{"hardware_marks": {"res": {"cuda": "H100"}, "num_cards": 1}}, "tts"],
        "server_params": {"model": "Qwen/Qwen3-TTS-12Hz-1.7B-Base"},
        "benchmark_params": [e]
    })
}
