//! Exact command lines for the upstream reference cases (`test_tts.json`,
//! `test_qwen3_omni_async_chunk.json`, `test_qwen3_tts_sglang.json`): `server_params` are
//! copied verbatim and turned into specs by a minimal reader (the config loader proper
//! lives in dfx-core).

use std::path::{Path, PathBuf};

use dfx_core::server::{ServeArgs, ServerSpec, ServerType};
use dfx_server::command::{CommandInputs, build};
use serde_json::{Value, json};

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn spec(server_type: ServerType, p: Value) -> ServerSpec {
    let deploy = p
        .get("stage_config_name")
        .and_then(Value::as_str)
        .map(|name| {
            dfx_core::deploy::resolve_with_edits(
                &deploy_dir(),
                name,
                p.get("update"),
                p.get("delete"),
            )
            .unwrap()
        });
    ServerSpec {
        server_type,
        model: p["model"].as_str().unwrap().into(),
        deploy,
        stage_overrides: p.get("stage_overrides").cloned(),
        serve_args: match p.get("serve_args") {
            Some(Value::Object(m)) => ServeArgs::Map(m.clone()),
            Some(Value::Array(a)) => {
                ServeArgs::List(a.iter().map(|v| v.as_str().unwrap().into()).collect())
            }
            _ => ServeArgs::default(),
        },
        extra_cli_args: p
            .get("extra_cli_args")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|v| v.as_str().unwrap().into()).collect())
            .unwrap_or_default(),
        use_omni: p.get("use_omni").and_then(Value::as_bool).unwrap_or(true),
        default_timeouts: true,
        env: p
            .get("env")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap().into()))
                    .collect()
            })
            .unwrap_or_default(),
        ready_timeout: None,
        judge: None,
    }
}

/// The command line and added environment, with machine-specific paths replaced.
fn render(spec: &ServerSpec, deploy_config: Option<&Path>) -> String {
    let exe = match spec.server_type {
        ServerType::VllmOmni => "/opt/venv/bin/vllm-omni",
        ServerType::SglangOmni => "/opt/venv/bin/sgl-omni",
    };
    let cmd = build(
        spec,
        CommandInputs {
            exe: Path::new(exe),
            port: 8091,
            deploy_config,
            deploy_dir: &deploy_dir(),
            repo_root: &repo_root(),
            force_vllm_form: false,
        },
    )
    .unwrap();
    let canon = deploy_dir().canonicalize().unwrap();
    cmd.describe()
        .replace(&canon.display().to_string(), "<repo>/deploy")
        .replace(&repo_root().display().to_string(), "<repo>")
}

fn vllm(p: Value) -> String {
    let s = spec(ServerType::VllmOmni, p);
    let deploy = s.deploy.as_ref().map(|d| {
        if d.edited {
            PathBuf::from("<start-dir>/deploy-qwen3_tts_tuned.yaml")
        } else {
            d.source.clone()
        }
    });
    render(&s, deploy.as_deref())
}

#[test]
fn test_tts_base() {
    insta::assert_snapshot!(vllm(json!({
        "model": "Qwen/Qwen3-TTS-12Hz-1.7B-Base",
        "stage_overrides": {"1": {"devices": "1"}}
    })));
}

#[test]
fn test_tts_customvoice() {
    insta::assert_snapshot!(vllm(json!({
        "model": "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice",
        "stage_overrides": {"1": {"devices": "1"}}
    })));
}

#[test]
fn test_tts_voxtral() {
    insta::assert_snapshot!(vllm(json!({"model": "mistralai/Voxtral-4B-TTS-2603"})));
}

#[test]
fn test_qwen3_omni_async_chunk() {
    insta::assert_snapshot!(vllm(json!({
        "model": "Qwen/Qwen3-Omni-30B-A3B-Instruct",
        "extra_cli_args": ["--async-chunk"]
    })));
}

#[test]
fn test_sglang_qwen3_tts_base() {
    insta::assert_snapshot!(render(
        &spec(
            ServerType::SglangOmni,
            json!({
                "model": "Qwen/Qwen3-TTS-12Hz-1.7B-Base",
                "serve_args": {"config": "tests/dfx/perf/deploy/sgl_qwen3_tts_1_7b.yaml"}
            })
        ),
        None
    ));
}

/// Upstream's sglang-omni adapter rules: booleans as `--flag true|false`, `null` dropped,
/// objects as compact JSON, a repository-relative `config` resolved from the root, the
/// server run in the root, `server_params.env` (and only it) added to the environment.
#[test]
fn sglang_argv_and_environment() {
    insta::assert_snapshot!(render(
        &spec(
            ServerType::SglangOmni,
            json!({
                "model": "Qwen/Qwen3-Omni-30B-A3B-Instruct",
                "serve_args": {
                    "config": "tests/fixtures/sglang/sgl_pipeline.yaml",
                    "enable_torch_compile": true,
                    "disable_cuda_graph": false,
                    "seed": null,
                    "tp_size": 2,
                    "mem_fraction_static": 0.8,
                    "json_model_override_args": {"rope_scaling": {"factor": 2.0}}
                },
                "env": {"SGLANG_OMNI_LOG_LEVEL": "debug", "HF_TOKEN": "hf_secret", "CUDA_VISIBLE_DEVICES": "0,1"}
            })
        ),
        None
    ));
}

/// Every `server_params` feature at once: deploy name with edits, serve_args of every JSON
/// type, extra args, overrides, no `--omni`, env with a secret.
#[test]
fn every_server_param_kind() {
    insta::assert_snapshot!(vllm(json!({
        "model": "Qwen/Qwen3-TTS-12Hz-1.7B-Base",
        "stage_config_name": "qwen3_tts_tuned",
        "update": {"stage_args": {"0": {"max_num_seqs": 32}}},
        "serve_args": {
            "trust_remote_code": true,
            "enforce_eager": false,
            "seed": null,
            "max_model_len": 4096,
            "gpu_memory_utilization": 0.9,
            "chat_template": "it's {{ x }}",
            "hf_overrides": {"a": [1, 2], "b": "ü"},
            "allowed_origins": ["http://a", "http://b"]
        },
        "extra_cli_args": ["--async-chunk", "--log-level", "debug"],
        "stage_overrides": {"0": {"max_num_seqs": 4}},
        "use_omni": false,
        "env": {"HF_TOKEN": "hf_xyz", "CUDA_VISIBLE_DEVICES": "0,1"}
    })));
}

#[test]
fn serve_args_as_a_raw_list_and_unedited_deploy_file() {
    insta::assert_snapshot!(vllm(json!({
        "model": "openbmb/VoxCPM2",
        "stage_config_name": "voxcpm2.yaml",
        "serve_args": ["--max-num-seqs", "8", "--enable-x"]
    })));
}

#[test]
fn sglang_refuses_vllm_only_params_and_missing_config() {
    let s = spec(
        ServerType::SglangOmni,
        json!({"model": "m", "stage_config_name": "qwen3_tts"}),
    );
    let inputs = CommandInputs {
        exe: Path::new("sgl-omni"),
        port: 1,
        deploy_config: None,
        deploy_dir: &deploy_dir(),
        repo_root: &repo_root(),
        force_vllm_form: false,
    };
    let e = build(&s, inputs).unwrap_err().to_string();
    assert!(
        e.contains("sglang-omni takes neither `stage_config_name` nor `stage_overrides`"),
        "{e}"
    );
    let s = spec(
        ServerType::SglangOmni,
        json!({"model": "m", "serve_args": {"config": "x/nope.yaml"}}),
    );
    let e = build(&s, inputs).unwrap_err().to_string();
    assert!(
        e.contains("serve_args.config `x/nope.yaml`: no deploy file `nope.yaml`"),
        "{e}"
    );
}

/// The judge server of today's OmniInteract config (`judge_server_params`, loaded by
/// dfx-core from the reference copy): a plain `serve <model>` without `--omni` or the
/// init timeouts, its extra args, and the device its index picks from the parent's
/// `CUDA_VISIBLE_DEVICES=4,5`.
#[test]
fn test_gander_omniinteract_judge() {
    let reference = dfx_core::reference::reference_dir().unwrap_or_else(|e| panic!("{e}"));
    let none = tempfile::tempdir().unwrap();
    let plan = dfx_core::config::load_plan(&dfx_core::config::LoadOptions {
        files: vec![reference.join("upstream/2026/perf/tests/test_gander_omniinteract.json")],
        hardware: "H100".into(),
        deploy_dir: reference.join("upstream/deploy"),
        baselines_dir: none.path().to_path_buf(),
        mark: None,
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let judge = plan.trials[0]
        .server
        .judge
        .as_deref()
        .expect("the case has a judge");
    let mut spec = judge.server.clone();
    spec.env.insert(
        "CUDA_VISIBLE_DEVICES".into(),
        judge.visible_devices(Some("4,5")).unwrap(),
    );
    insta::assert_snapshot!(render(&spec, None));
}
