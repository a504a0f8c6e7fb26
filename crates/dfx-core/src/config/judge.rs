//! `judge_server_params` (a case-level key of upstream's OmniInteract configs, 2026) →
//! [`JudgeSpec`]: `{model, use_omni (default false), cuda_visible_devices (indices into
//! the parent's CUDA_VISIBLE_DEVICES, default "1"), extra_cli_args, required (default
//! true)}`. The judge is a plain `vllm-omni serve <model>` (with `--omni` only when
//! `use_omni`) that the case starts beside its main server.

use std::collections::BTreeMap;

use serde_json::Value;

use super::value::{opt_bool, opt_str, opt_str_list};
use crate::diag::{Ctx, Errs, json_type};
use crate::server::{JudgeSpec, ServeArgs, ServerSpec, ServerType};

/// Parses the case's `judge_server_params` (`None` when absent or null).
pub(crate) fn parse_judge(ctx: &Ctx<'_>, v: Option<&Value>, errs: &mut Errs) -> Option<JudgeSpec> {
    let accepted = r#"{"model": "<id>", "use_omni": false, "cuda_visible_devices": "1", "extra_cli_args": [...], "required": true}"#;
    let obj = match v? {
        Value::Null => return None,
        Value::Object(o) => o,
        other => {
            errs.push(ctx.err(
                "judge_server_params",
                format!("wrong type: got {}", json_type(other)),
                accepted,
            ));
            return None;
        }
    };
    let at = ("judge_server_params", "judge_server_params");
    super::known_keys::check_keys(ctx, at, obj, super::known_keys::case::JUDGE, errs);
    let n = errs.len();
    let key = |k: &str| format!("judge_server_params.{k}");
    let model = opt_str(ctx, &key("model"), obj.get("model"), errs);
    if model.as_deref().is_none_or(|m| m.trim().is_empty()) && errs.len() == n {
        errs.push(ctx.err(&key("model"), "a judge needs a model", "a model id or path"));
    }
    let use_omni = opt_bool(ctx, &key("use_omni"), obj.get("use_omni"), errs).unwrap_or(false);
    let required = opt_bool(ctx, &key("required"), obj.get("required"), errs).unwrap_or(true);
    let extra_cli_args = opt_str_list(ctx, &key("extra_cli_args"), obj.get("extra_cli_args"), errs)
        .unwrap_or_default();
    let device_indices = devices(ctx, obj.get("cuda_visible_devices"), errs);
    let model = model?;
    (errs.len() == n).then(|| JudgeSpec {
        server: ServerSpec {
            server_type: ServerType::VllmOmni,
            model,
            deploy: None,
            stage_overrides: None,
            serve_args: ServeArgs::default(),
            extra_cli_args,
            use_omni,
            default_timeouts: true,
            env: BTreeMap::new(),
            ready_timeout: None,
            judge: None,
        },
        device_indices,
        required,
    })
}

/// `"1"`, `1`, `"0,1"` → indices (upstream's default `"1"`: the second visible device).
fn devices(ctx: &Ctx<'_>, v: Option<&Value>, errs: &mut Errs) -> Vec<usize> {
    let key = "judge_server_params.cuda_visible_devices";
    let accepted = "device indices into the parent's CUDA_VISIBLE_DEVICES: 1, \"1\" or \"0,1\"";
    let text = match v {
        None | Some(Value::Null) => return vec![1],
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            errs.push(ctx.err(
                key,
                format!("wrong type: got {}", json_type(other)),
                accepted,
            ));
            return Vec::new();
        }
    };
    let parsed: Option<Vec<usize>> = text
        .split(',')
        .map(|p| p.trim().parse::<usize>().ok().filter(|i| *i < 1024))
        .collect();
    match parsed {
        Some(v) if !v.is_empty() => v,
        _ => {
            errs.push(ctx.err(key, format!("invalid value {text:?}"), accepted));
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> (Option<JudgeSpec>, Vec<String>) {
        let file = std::path::PathBuf::from("f.json");
        let ctx = Ctx::new(&file).test(Some("t"));
        let mut errs = Vec::new();
        let j = parse_judge(&ctx, Some(&v), &mut errs);
        (j, errs.iter().map(|e| e.to_string()).collect())
    }

    #[test]
    fn defaults_and_device_mapping() {
        let (j, errs) = parse(json!({"model": "Qwen/Judge"}));
        assert!(errs.is_empty(), "{errs:?}");
        let j = j.unwrap();
        assert!(!j.server.use_omni && j.required);
        assert_eq!(j.device_indices, [1]);
        assert_eq!(j.visible_devices(Some("4,5,6")).unwrap(), "5");
        assert_eq!(j.visible_devices(None).unwrap(), "1");
        assert!(
            j.visible_devices(Some("4"))
                .unwrap_err()
                .to_string()
                .contains("index 1")
        );
        let (j, _) = parse(json!({"model": "m", "cuda_visible_devices": "0,2", "required": false}));
        let j = j.unwrap();
        assert_eq!(j.visible_devices(Some("a,b,c")).unwrap(), "a,c");
        assert!(!j.required);
    }

    #[test]
    fn bad_values_name_the_key() {
        let (_, errs) = parse(json!({"use_omni": "yes"}));
        assert!(
            errs.iter()
                .any(|e| e.contains("judge_server_params.use_omni")),
            "{errs:?}"
        );
        assert!(
            errs.iter().any(|e| e.contains("judge_server_params.model")),
            "{errs:?}"
        );
        let (_, errs) = parse(json!({"model": "m", "cuda_visible_devices": "x"}));
        assert!(errs[0].contains("cuda_visible_devices"), "{errs:?}");
        let (_, errs) = parse(json!([1]));
        assert!(errs[0].contains("judge_server_params"), "{errs:?}");
    }
}
