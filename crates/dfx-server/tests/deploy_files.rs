//! The project's deploy files: every file opens with a `# dfx-perf:` header, and the
//! changes a header lists are exactly the differences between the file and its stock file.

use std::path::{Path, PathBuf};

use dfx_core::deploy::{self, DeployHeader, TreeChange, tree_diff};

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}

fn tree(path: &Path) -> yaml_serde::Value {
    yaml_serde::from_str(&std::fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn key(c: &TreeChange) -> String {
    c.to_string()
}

/// Every disagreement between headers and contents in `dir`, one message each.
fn problems(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for name in deploy::list(dir) {
        let path = deploy::resolve(dir, &name).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        match DeployHeader::parse(&text) {
            Ok(None) => out.push(format!("{name}: no `# dfx-perf:` header on the first line")),
            Err(e) => out.push(format!("{name}: {e}")),
            Ok(Some(DeployHeader::Stock { note })) => {
                if !note.starts_with("stock file of ") || !note.ends_with("no changes") {
                    out.push(format!(
                        "{name}: stock header must read `stock file of <release>, no changes`"
                    ));
                }
            }
            Ok(Some(DeployHeader::Changes { base, changes })) => {
                let Ok(base_path) = deploy::resolve(dir, &base) else {
                    out.push(format!("{name}: stock file {base} is not in the folder"));
                    continue;
                };
                let base_text = std::fs::read_to_string(&base_path).unwrap();
                if !matches!(
                    DeployHeader::parse(&base_text),
                    Ok(Some(DeployHeader::Stock { .. }))
                ) {
                    out.push(format!("{name}: {base} is not marked as a stock file"));
                }
                let mut said: Vec<String> = changes.iter().map(key).collect();
                let mut actual: Vec<String> = tree_diff(&tree(&base_path), &tree(&path))
                    .iter()
                    .map(key)
                    .collect();
                said.sort();
                actual.sort();
                for missing in actual.iter().filter(|a| !said.contains(a)) {
                    out.push(format!("{name}: header does not list `{missing}`"));
                }
                for extra in said.iter().filter(|s| !actual.contains(s)) {
                    out.push(format!(
                        "{name}: header lists `{extra}`, which is not an actual difference"
                    ));
                }
            }
        }
    }
    out
}

#[test]
fn headers_agree_with_the_actual_differences() {
    let names = deploy::list(&deploy_dir());
    for expected in [
        "qwen3_tts",
        "qwen3_tts_tuned",
        "sgl_qwen3_tts_1_7b",
        "voxcpm2",
    ] {
        assert!(names.contains(&expected.to_string()), "{names:?}");
    }
    assert_eq!(problems(&deploy_dir()), Vec::<String>::new());
}

#[test]
fn the_tuned_file_changes_what_it_promises() {
    let tuned = tree(&deploy_dir().join("qwen3_tts_tuned.yaml"));
    let extra = &tuned["connectors"]["connector_of_shared_memory"]["extra"];
    assert_eq!(extra["initial_codec_chunk_frames"].as_i64(), Some(16));
    assert_eq!(extra["codec_chunk_frames"].as_i64(), Some(75));
    assert_eq!(tuned["stages"][1]["stage_id"].as_i64(), Some(1));
    assert_eq!(tuned["stages"][1]["max_num_seqs"].as_i64(), Some(128));
}

#[test]
fn a_header_that_lies_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["qwen3_tts.yaml", "qwen3_tts_tuned.yaml"] {
        std::fs::copy(deploy_dir().join(f), dir.path().join(f)).unwrap();
    }
    let p = dir.path().join("qwen3_tts_tuned.yaml");
    let text = std::fs::read_to_string(&p).unwrap();
    // An undeclared change, and a declared change that is not made.
    let text = text.replace(
        "  - stage_id: 0\n    max_num_seqs: 64\n",
        "  - stage_id: 0\n    max_num_seqs: 32\n",
    );
    let text = text.replace(
        "      codec_chunk_frames: 75\n",
        "      codec_chunk_frames: 25\n",
    );
    std::fs::write(&p, text).unwrap();
    assert_eq!(
        problems(dir.path()),
        vec![
            "qwen3_tts_tuned: header does not list `stages.0.max_num_seqs: 64 -> 32`",
            "qwen3_tts_tuned: header lists `connectors.connector_of_shared_memory.extra.codec_chunk_frames: 25 -> 75`, which is not an actual difference",
        ]
    );
}

/// The upstream reference data (see `dfx_core::reference`); missing data fails the test.
fn reference_dir() -> PathBuf {
    dfx_core::reference::reference_dir().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn stock_files_equal_the_upstream_reference() {
    let reference = reference_dir();
    for name in ["qwen3_tts.yaml", "voxcpm2.yaml", "sgl_qwen3_tts_1_7b.yaml"] {
        let ours = tree(&deploy_dir().join(name));
        let upstream = tree(&reference.join("upstream/deploy").join(name));
        assert_eq!(
            tree_diff(&upstream, &ours),
            Vec::new(),
            "{name} differs from the stock file"
        );
    }
}
