use std::path::Path;

use serde_json::json;

use super::*;

const STOCK: &str = "\
# a comment
async_chunk: true
connectors:
  shm:
    extra:
      codec_chunk_frames: 25
      initial_codec_chunk_frames: 1
stages:
  - stage_id: 0
    max_num_seqs: 64
    devices: \"0\"
  - stage_id: 1
    max_num_seqs: 1
    default_sampling_params:
      temperature: 0.0
";

fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tts.yaml"), STOCK).unwrap();
    std::fs::write(dir.path().join("other.yml"), "a: 1\n").unwrap();
    dir
}

fn edited(
    dir: &Path,
    update: Option<serde_json::Value>,
    delete: Option<serde_json::Value>,
) -> yaml_serde::Value {
    let r = resolve_with_edits(dir, "tts", update.as_ref(), delete.as_ref()).unwrap();
    assert!(r.edited);
    assert!(
        r.contents.starts_with("# dfx-perf: edited copy of "),
        "{}",
        r.contents
    );
    yaml_serde::from_str(&r.contents).unwrap()
}

fn stock() -> yaml_serde::Value {
    yaml_serde::from_str(STOCK).unwrap()
}

#[test]
fn resolves_plain_names_with_or_without_extension() {
    let dir = folder();
    let canon = dir.path().canonicalize().unwrap();
    assert_eq!(resolve(dir.path(), "tts").unwrap(), canon.join("tts.yaml"));
    assert_eq!(
        resolve(dir.path(), "tts.yaml").unwrap(),
        canon.join("tts.yaml")
    );
    assert_eq!(
        resolve(dir.path(), "other").unwrap(),
        canon.join("other.yml")
    );
    assert_eq!(list(dir.path()), vec!["other", "tts"]);
}

#[test]
fn refuses_paths_and_escaping_symlinks() {
    let dir = folder();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("evil.yaml"), "a: 1\n").unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("evil.yaml"),
        dir.path().join("evil.yaml"),
    )
    .unwrap();
    std::os::unix::fs::symlink(dir.path().join("tts.yaml"), dir.path().join("alias.yaml")).unwrap();
    for name in ["../tts", "sub/tts", "/etc/passwd", "..", ".", "", "evil"] {
        let err = resolve(dir.path(), name).unwrap_err();
        assert!(matches!(err, DeployError::NotAName { .. }), "{name}: {err}");
        assert!(err.to_string().contains("not a plain file name"), "{err}");
    }
    // A symlink that stays inside the folder is fine.
    assert!(resolve(dir.path(), "alias").unwrap().ends_with("tts.yaml"));
}

#[test]
fn unknown_name_lists_what_exists() {
    let dir = folder();
    let err = resolve(dir.path(), "nope").unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "no deploy file `nope` under {} (available: other, tts)",
            dir.path().display()
        )
    );
}

#[test]
fn no_edits_keep_the_file_verbatim() {
    let dir = folder();
    let r = resolve_with_edits(dir.path(), "tts", Some(&json!({})), None).unwrap();
    assert!(!r.edited);
    assert_eq!(r.contents, STOCK);
}

#[test]
fn updates_top_level_dotted_and_stage_args() {
    let dir = folder();
    let tree = edited(
        dir.path(),
        Some(json!({
            "async_chunk": false,
            "connectors.shm.extra.codec_chunk_frames": 75,
            "connectors.shm.extra.new_key.deep": [1, 2],
            "stage_args": {"1": {"max_num_seqs": 8, "engine_args.max_model_len": 5800}}
        })),
        None,
    );
    let diff: Vec<String> = tree_diff(&stock(), &tree)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        diff,
        vec![
            "async_chunk: true -> false",
            "connectors.shm.extra.codec_chunk_frames: 25 -> 75",
            "connectors.shm.extra.new_key: absent -> {\"deep\":[1,2]}",
            "stages.1.max_num_seqs: 1 -> 8",
            "stages.1.engine_args: absent -> {\"max_model_len\":5800}",
        ]
    );
    // Strings that look like numbers stay strings in the written copy.
    assert_eq!(
        tree["stages"][0]["devices"],
        yaml_serde::Value::String("0".into())
    );
}

#[test]
fn deletes_run_before_updates() {
    let dir = folder();
    let tree = edited(
        dir.path(),
        Some(json!({"connectors.shm.extra.codec_chunk_frames": 30})),
        Some(json!([
            "connectors.shm.extra.codec_chunk_frames",
            "stages.1.default_sampling_params"
        ])),
    );
    let diff: Vec<String> = tree_diff(&stock(), &tree)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        diff,
        vec![
            // Deleted, then set again by the update: were updates first, it would be absent.
            "connectors.shm.extra.codec_chunk_frames: 25 -> 30",
            "stages.1.default_sampling_params: {\"temperature\":0.0} -> absent",
        ]
    );
}

#[test]
fn upstream_object_form_of_delete() {
    let dir = folder();
    let tree = edited(
        dir.path(),
        None,
        Some(json!({"async_chunk": null, "stage_args": {"0": ["devices"]}})),
    );
    let diff: Vec<String> = tree_diff(&stock(), &tree)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        diff,
        vec![
            "async_chunk: true -> absent",
            "stages.0.devices: \"0\" -> absent"
        ]
    );
}

#[test]
fn bad_edits_name_the_edit() {
    let dir = folder();
    let cases = [
        (
            Some(json!({"stage_args": {"7": {"x": 1}}})),
            None,
            "update stage_args",
            "no stage with stage_id 7 (available: 0, 1)",
        ),
        (
            Some(json!({"stage_args": {"one": {"x": 1}}})),
            None,
            "update stage_args",
            "stage id `one` is not an integer",
        ),
        (
            Some(json!({"async_chunk.x": 1})),
            None,
            "update async_chunk.x",
            "cannot descend into `async_chunk`: it is a boolean",
        ),
        (Some(json!([1])), None, "update [1]", "must be an object"),
        (
            None,
            Some(json!(["connectors.nope"])),
            "delete connectors.nope",
            "`connectors.nope` does not exist",
        ),
        (
            None,
            Some(json!(["stages.5.x"])),
            "delete stages.5.x",
            "no index `5` in a list of 2",
        ),
        (
            None,
            Some(json!({"async_chunk": 1})),
            "delete async_chunk",
            "must be null",
        ),
        (
            None,
            Some(json!("x")),
            "delete \"x\"",
            "must be a list of dotted paths",
        ),
    ];
    for (update, delete, edit, reason) in cases {
        let err =
            resolve_with_edits(dir.path(), "tts", update.as_ref(), delete.as_ref()).unwrap_err();
        let (e, r) = match &err {
            DeployError::BadEdit { edit, reason } => (edit, reason.clone()),
            DeployError::BadPath { edit, source } => (edit, source.to_string()),
            _ => panic!("{err}"),
        };
        assert!(e.starts_with(edit), "{e} vs {edit}");
        assert!(r.contains(reason), "{r} vs {reason}");
    }
}

#[test]
fn header_round_trip() {
    let text = "# dfx-perf: changes vs stock tts.yaml:\n#   a.b: 25 -> 75\n#   c: absent -> [1, 2]\n# other comment\nx: 1\n";
    let h = DeployHeader::parse(text).unwrap().unwrap();
    assert_eq!(
        h.summary(),
        "changes vs stock tts.yaml: a.b: 25 -> 75; c: absent -> [1,2]"
    );
    let stock = DeployHeader::parse("# dfx-perf: stock file of vllm-omni 0.30, no changes\na: 1\n")
        .unwrap();
    assert_eq!(
        stock,
        Some(DeployHeader::Stock {
            note: "stock file of vllm-omni 0.30, no changes".into()
        })
    );
    assert_eq!(DeployHeader::parse("a: 1\n").unwrap(), None);
    assert!(
        DeployHeader::parse("# dfx-perf: changes vs stock x.yaml:\n#   oops\n")
            .unwrap_err()
            .to_string()
            .contains("oops")
    );
}
