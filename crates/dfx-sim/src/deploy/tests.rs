use super::*;

const STOCK: &str = include_str!("../../tests/data/qwen3_tts.yaml");

fn parse(text: &str) -> Result<DeploySettings, DeployError> {
    DeploySettings::from_yaml(text, Path::new("x.yaml"))
}

#[test]
fn stock_qwen3_tts_file() {
    let s = parse(STOCK).unwrap();
    assert_eq!(s.talker_max_num_seqs, Some(64));
    assert_eq!(s.codec_max_num_seqs, Some(64));
    assert_eq!(s.chunk_frames, Some(25));
    assert_eq!(s.initial_chunk_frames, Some(1));
    assert_eq!(s.left_context_frames, Some(72));
    assert_eq!(s.chunk_ramp, None);
    assert_eq!(s.async_chunk, Some(true));
    assert_eq!(s.devices, vec![(0, "0".to_string()), (1, "0".to_string())]);
}

#[test]
fn old_stage_args_layout() {
    let y = "stage_args:\n  - stage_id: 0\n    engine_args:\n      max_num_seqs: 4\n  - stage_id: 1\n    engine_args:\n      max_num_seqs: 2\nruntime:\n  connectors:\n    shm:\n      extra:\n        codec_chunk_frames: 50\n        codec_chunk_ramp: [4, 8]\n";
    let s = parse(y).unwrap();
    assert_eq!(s.talker_max_num_seqs, Some(4));
    assert_eq!(s.codec_max_num_seqs, Some(2));
    assert_eq!(s.chunk_frames, Some(50));
    assert_eq!(s.chunk_ramp, Some(vec![4, 8]));
}

#[test]
fn voxcpm2_vae_decode_every_sets_chunks() {
    let y = "async_chunk: false\nstages:\n  - stage_id: 0\n    max_num_seqs: 8\n    engine_extras:\n      hf_overrides:\n        voxcpm2_runtime_config:\n          vae_decode_every: 3\n";
    let s = parse(y).unwrap();
    assert_eq!(s.talker_max_num_seqs, Some(8));
    assert_eq!(s.chunk_frames, Some(3));
    assert_eq!(s.async_chunk, Some(false));
}

#[test]
fn bad_values_name_the_key() {
    let e = parse("stages:\n  - stage_id: 1\n    max_num_seqs: lots\n").unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("stages[0].max_num_seqs"), "{msg}");
    assert!(msg.contains("positive integer"), "{msg}");
    let e = parse("connectors:\n  c:\n    extra:\n      codec_chunk_ramp: [4, 0]\n").unwrap_err();
    assert!(
        e.to_string()
            .contains("connectors.c.extra.codec_chunk_ramp[1]"),
        "{e}"
    );
    assert!(matches!(
        parse("a: [1"),
        Err(DeployError::InvalidYaml { .. })
    ));
}

#[test]
fn overrides_win() {
    let mut s = parse(STOCK).unwrap();
    let o = serde_json::json!({"1": {"max_num_seqs": 1, "devices": "1"}, "0": {"max_num_seqs": 8}});
    s.apply_overrides(&o).unwrap();
    assert_eq!(s.codec_max_num_seqs, Some(1));
    assert_eq!(s.talker_max_num_seqs, Some(8));
    assert!(s.devices.contains(&(1, "1".to_string())));
    let o = serde_json::json!({"x": {}});
    assert!(matches!(
        s.apply_overrides(&o),
        Err(DeployError::BadOverrides(_))
    ));
    let o = serde_json::json!({"0": {"max_num_seqs": 0}});
    assert!(
        s.apply_overrides(&o)
            .unwrap_err()
            .to_string()
            .contains("--stage-overrides")
    );
}

#[test]
fn devices_decide_gpu_sharing() {
    assert!(DeploySettings::default().stages_share_device());
    let mut s = parse(STOCK).unwrap();
    assert!(s.stages_share_device());
    s.apply_overrides(&serde_json::json!({"1": {"devices": "1"}}))
        .unwrap();
    assert!(!s.stages_share_device());
}
