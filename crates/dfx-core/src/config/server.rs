//! `server_params` (+ the case's `server_type`) → [`ServerSpec`].

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::known_keys::case::READY_TIMEOUT_S;
use super::raw::{RawServerParams, from_object};
use super::value::{opt_bool, opt_f64_in, opt_object, opt_str, opt_str_list};
use crate::bounds;
use crate::deploy;
use crate::diag::{Ctx, Errs, json_type};
use crate::server::{ServeArgs, ServerSpec, ServerType};

/// What a case's server settings produce: the spec (when valid) and the bench-side
/// `trust_remote_code` flag.
#[derive(Debug, Clone, Default)]
pub(crate) struct ServerBuild {
    pub spec: Option<ServerSpec>,
    pub trust_remote_code: bool,
}

/// Validates `server_type` and `server_params`; problems (unknown keys too) go to `errs`.
pub(crate) fn build_server(
    ctx: &Ctx<'_>,
    server_type: Option<&Value>,
    server_params: Option<&Value>,
    deploy_dir: &Path,
    errs: &mut Errs,
) -> ServerBuild {
    let server_type = parse_server_type(ctx, server_type, errs);
    let obj = match server_params {
        Some(Value::Object(o)) => o,
        None => {
            errs.push(ctx.err(
                "server_params",
                "missing required key `server_params`",
                r#"an object with at least "model""#,
            ));
            return ServerBuild::default();
        }
        Some(other) => {
            errs.push(ctx.err(
                "server_params",
                format!("wrong type: got {}", json_type(other)),
                r#"an object with at least "model""#,
            ));
            return ServerBuild::default();
        }
    };
    let raw: RawServerParams = match from_object(obj) {
        Ok(r) => r,
        Err(e) => {
            errs.push(ctx.err("server_params", e.to_string(), ""));
            return ServerBuild::default();
        }
    };
    super::known_keys::check_keys(
        ctx,
        ("server_params", "server_params"),
        obj,
        super::known_keys::case::SERVER_PARAMS,
        errs,
    );
    let n = errs.len();
    let model = match raw.model.as_ref() {
        None => {
            errs.push(ctx.err(
                "server_params.model",
                "missing required key `server_params.model`",
                "a model id or path string",
            ));
            None
        }
        Some(v) => opt_str(ctx, "server_params.model", Some(v), errs).filter(|m| {
            let ok = !m.trim().is_empty();
            if !ok {
                errs.push(ctx.err(
                    "server_params.model",
                    "empty model",
                    "a model id or path string",
                ));
            }
            ok
        }),
    };
    let deploy = resolve_deploy(ctx, &raw, deploy_dir, errs);
    let stage_overrides = opt_object(
        ctx,
        "server_params.stage_overrides",
        raw.stage_overrides.as_ref(),
        errs,
    )
    .filter(|m| !m.is_empty())
    .map(Value::Object);
    let serve_args = parse_serve_args(ctx, raw.serve_args.as_ref(), errs);
    let extra_cli_args = opt_str_list(
        ctx,
        "server_params.extra_cli_args",
        raw.extra_cli_args.as_ref(),
        errs,
    )
    .unwrap_or_default();
    let use_omni =
        opt_bool(ctx, "server_params.use_omni", raw.use_omni.as_ref(), errs).unwrap_or(true);
    let trust_remote_code = opt_bool(
        ctx,
        "server_params.trust_remote_code",
        raw.trust_remote_code.as_ref(),
        errs,
    )
    .unwrap_or(false);
    let env = parse_env(ctx, raw.env.as_ref(), errs);
    let ready_timeout = opt_f64_in(
        ctx,
        "server_params.ready_timeout_s",
        raw.ready_timeout_s.as_ref(),
        const { READY_TIMEOUT_S.num_range() },
        errs,
    )
    .and_then(bounds::timeout);
    let spec = match (model, server_type) {
        (Some(model), Some(server_type)) if errs.len() == n => Some(ServerSpec {
            server_type,
            model,
            deploy,
            stage_overrides,
            serve_args,
            extra_cli_args,
            use_omni,
            default_timeouts: true,
            env,
            ready_timeout,
            judge: None,
        }),
        _ => None,
    };
    ServerBuild {
        spec,
        trust_remote_code,
    }
}

fn parse_server_type(ctx: &Ctx<'_>, v: Option<&Value>, errs: &mut Errs) -> Option<ServerType> {
    let accepted = r#""vllm-omni" (default) or "sglang-omni""#;
    match v {
        None => Some(ServerType::VllmOmni),
        Some(Value::String(s)) if s == "vllm-omni" => Some(ServerType::VllmOmni),
        Some(Value::String(s)) if s == "sglang-omni" => Some(ServerType::SglangOmni),
        Some(Value::String(s)) => {
            errs.push(ctx.err(
                "server_type",
                format!("unknown server type `{s}`"),
                accepted,
            ));
            None
        }
        Some(other) => {
            errs.push(ctx.err(
                "server_type",
                format!("wrong type: got {}", json_type(other)),
                accepted,
            ));
            None
        }
    }
}

fn resolve_deploy(
    ctx: &Ctx<'_>,
    raw: &RawServerParams,
    deploy_dir: &Path,
    errs: &mut Errs,
) -> Option<crate::server::ResolvedDeploy> {
    let name = opt_str(
        ctx,
        "server_params.stage_config_name",
        raw.stage_config_name.as_ref(),
        errs,
    );
    let Some(name) = name else {
        for (key, v) in [("update", &raw.update), ("delete", &raw.delete)] {
            if v.is_some() && raw.stage_config_name.is_none() {
                errs.push(ctx.err(
                    &format!("server_params.{key}"),
                    format!("`{key}` edits a deploy file but there is no `stage_config_name`"),
                    "set `stage_config_name` to a deploy file name, or remove the edits",
                ));
            }
        }
        return None;
    };
    match deploy::resolve_with_edits(deploy_dir, &name, raw.update.as_ref(), raw.delete.as_ref()) {
        Ok(d) => Some(d),
        Err(e) => {
            let accepted = match e {
                // its message already lists the available names
                deploy::DeployError::NotFound { .. } => String::new(),
                _ => format!(
                    "a deploy file name under {} (available: {})",
                    deploy_dir.display(),
                    deploy::list(deploy_dir).join(", ")
                ),
            };
            errs.push(ctx.err("server_params.stage_config_name", e.to_string(), &accepted));
            None
        }
    }
}

fn parse_serve_args(ctx: &Ctx<'_>, v: Option<&Value>, errs: &mut Errs) -> ServeArgs {
    let key = "server_params.serve_args";
    match v {
        None => ServeArgs::default(),
        Some(Value::Object(m)) => {
            for (k, v) in m {
                if let Some(Err(why)) = crate::server::inline::render(k, v) {
                    errs.push(ctx.err(
                        &format!("{key}.{k}"),
                        format!("invalid inline file: {why}"),
                        crate::server::inline::ACCEPTED,
                    ));
                }
            }
            ServeArgs::Map(m.clone())
        }
        Some(Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => out.push(s.clone()),
                    Value::Number(n) => out.push(n.to_string()),
                    other => errs.push(ctx.err(
                        &format!("{key}[{i}]"),
                        format!("wrong type: got {}", json_type(other)),
                        "a string",
                    )),
                }
            }
            ServeArgs::List(out)
        }
        Some(other) => {
            errs.push(ctx.err(
                key,
                format!("wrong type: got {}", json_type(other)),
                "an object {flag: value} or a list of raw argument strings",
            ));
            ServeArgs::default()
        }
    }
}

fn parse_env(ctx: &Ctx<'_>, v: Option<&Value>, errs: &mut Errs) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for (k, v) in opt_object(ctx, "server_params.env", v, errs).unwrap_or_default() {
        let val = match v {
            Value::String(s) => s,
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            other => {
                errs.push(ctx.err(
                    &format!("server_params.env.{k}"),
                    format!("wrong type: got {}", json_type(&other)),
                    "a string (numbers and booleans are converted)",
                ));
                continue;
            }
        };
        env.insert(k, val);
    }
    env
}
