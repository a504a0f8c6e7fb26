//! The server command line, built exactly as upstream's DFX runner builds it
//! (`docs/server.md` ("Command line")).
//!
//! vllm-omni: `<exe> serve <model> --host 127.0.0.1 --port <port> [--omni] <serve_args…>
//! <extra_cli_args…> [--stage-overrides <json>] [--deploy-config <path>]
//! [--stage-init-timeout 600] [--init-timeout 900]`, environment
//! `VLLM_WORKER_MULTIPROC_METHOD=spawn` plus `server_params.env`. Each default timeout is
//! added only when `serve_args` + `extra_cli_args` do not already name that flag
//! (`--flag value` or `--flag=value`), as upstream's `_merge_omni_default_server_args`, and
//! never for a diffusion case (upstream's diffusion runner adds none).
//!
//! sglang-omni (upstream `tests/dfx/perf/scripts/sglang_omni_server.py`): `<exe> serve
//! --model-path <model> --host 127.0.0.1 --port <port> <serve_args…>`, where booleans are
//! rendered `--flag true|false` (not bare flags), `null` dropped, objects (and, unlike
//! upstream's Python `str`, lists) as compact JSON; a relative `config` path is resolved
//! against the repository root as upstream does, else (dfx-perf keeps upstream's
//! `tests/dfx/perf/deploy/` files in `deploy/`) by file name under the deploy folder. The
//! server runs in the repository root (upstream's `cwd`), with `server_params.env` added
//! to the caller's environment; `extra_cli_args` follow `serve_args` (upstream's adapter
//! drops them).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dfx_core::server::{ServeArgs, ServerError, ServerSpec, ServerType};
use serde_json::Value;

/// The loopback host every launched server binds.
pub(crate) const HOST: &str = "127.0.0.1";

/// A fully built server command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerCommand {
    /// The executable.
    pub program: PathBuf,
    /// Arguments after the executable (`serve …`).
    pub args: Vec<String>,
    /// Variables added on top of the caller's environment.
    pub env: BTreeMap<String, String>,
    /// The working directory (`None`: the caller's); sglang-omni runs in the repository
    /// root.
    pub cwd: Option<PathBuf>,
}

/// What a command needs besides the spec.
#[derive(Debug, Clone, Copy)]
pub struct CommandInputs<'a> {
    /// The executable to run.
    pub exe: &'a Path,
    /// `--port` value.
    pub port: u16,
    /// `--deploy-config` value: the edited copy or the stock file (vllm-omni form only).
    pub deploy_config: Option<&'a Path>,
    /// Where a relative sglang-omni `config` file is looked up by name when the
    /// repository root does not hold it.
    pub deploy_dir: &'a Path,
    /// The repository root: a relative sglang-omni `config` path is resolved against it
    /// first, and sglang-omni runs there.
    pub repo_root: &'a Path,
    /// Build the vllm-omni form whatever the spec's server type (the simulator).
    pub force_vllm_form: bool,
}

/// Builds the command for `spec`.
pub fn build(spec: &ServerSpec, inputs: CommandInputs<'_>) -> Result<ServerCommand, ServerError> {
    if spec.server_type == ServerType::SglangOmni && !inputs.force_vllm_form {
        build_sglang(spec, inputs)
    } else {
        Ok(build_vllm(spec, inputs))
    }
}

fn build_vllm(spec: &ServerSpec, inputs: CommandInputs<'_>) -> ServerCommand {
    let mut args: Vec<String> = vec![
        "serve".into(),
        spec.model.clone(),
        "--host".into(),
        HOST.into(),
        "--port".into(),
        inputs.port.to_string(),
    ];
    if spec.use_omni {
        args.push("--omni".into());
    }
    let own = vllm_serve_args(&spec.serve_args);
    let given: Vec<&str> = own
        .iter()
        .chain(&spec.extra_cli_args)
        .filter_map(|a| flag_name_of(a))
        .collect();
    args.extend(own.iter().cloned());
    args.extend(spec.extra_cli_args.iter().cloned());
    if let Some(o) = spec.stage_overrides.as_ref().filter(|o| !is_falsy(o)) {
        args.extend(["--stage-overrides".into(), o.to_string()]);
    }
    if let Some(p) = inputs.deploy_config {
        args.extend(["--deploy-config".into(), p.display().to_string()]);
    }
    if spec.use_omni && spec.default_timeouts {
        for (flag, value) in DEFAULT_SERVER_ARGS {
            if !given.contains(&flag) {
                args.extend([flag.to_string(), value.to_string()]);
            }
        }
    }
    let mut env = BTreeMap::from([("VLLM_WORKER_MULTIPROC_METHOD".into(), "spawn".into())]);
    env.extend(spec.env.clone());
    ServerCommand {
        program: inputs.exe.into(),
        args,
        env,
        cwd: None,
    }
}

/// The init timeouts upstream adds to a `--omni` server when the case does not set them.
pub(crate) const DEFAULT_SERVER_ARGS: [(&str, &str); 2] =
    [("--stage-init-timeout", "600"), ("--init-timeout", "900")];

/// The flag name of an argument (`--x` of `--x` or `--x=1`); `None` for values.
fn flag_name_of(arg: &str) -> Option<&str> {
    arg.starts_with("--")
        .then(|| arg.split_once('=').map_or(arg, |(name, _)| name))
}

/// Upstream skipped `stage_overrides` when falsy (`{}`, `null`).
fn is_falsy(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// `serve_args` for vllm-omni: object → `--key-with-dashes value` (`true` → bare flag,
/// `false`/`null` dropped, object/list → compact JSON, numbers/strings as text); list →
/// the raw strings.
pub(crate) fn vllm_serve_args(serve_args: &ServeArgs) -> Vec<String> {
    match serve_args {
        ServeArgs::List(items) => items.clone(),
        ServeArgs::Map(map) => {
            let mut out = Vec::new();
            for (key, value) in map {
                let flag = flag(key);
                match value {
                    Value::Bool(true) => out.push(flag),
                    Value::Bool(false) | Value::Null => {}
                    other => out.extend([flag, text(other)]),
                }
            }
            out
        }
    }
}

fn flag(key: &str) -> String {
    format!("--{}", key.replace('_', "-"))
}

/// Strings verbatim, everything else as compact JSON (numbers, objects, lists).
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn build_sglang(
    spec: &ServerSpec,
    inputs: CommandInputs<'_>,
) -> Result<ServerCommand, ServerError> {
    if spec.deploy.is_some() || spec.stage_overrides.as_ref().is_some_and(|o| !is_falsy(o)) {
        return Err(ServerError::InvalidSpec(format!(
            "model {}: sglang-omni takes neither `stage_config_name` nor `stage_overrides`; \
             pass its pipeline file as serve_args.config",
            spec.model
        )));
    }
    let mut args: Vec<String> = vec![
        "serve".into(),
        "--model-path".into(),
        spec.model.clone(),
        "--host".into(),
        HOST.into(),
        "--port".into(),
        inputs.port.to_string(),
    ];
    args.extend(sglang_serve_args(
        &spec.serve_args,
        inputs.repo_root,
        inputs.deploy_dir,
    )?);
    args.extend(spec.extra_cli_args.iter().cloned());
    Ok(ServerCommand {
        program: inputs.exe.into(),
        args,
        env: spec.env.clone(),
        cwd: Some(inputs.repo_root.into()),
    })
}

/// `serve_args` for sglang-omni (upstream rules: booleans as `true`/`false` values, null
/// dropped, objects and lists as compact JSON, `config` resolved from the repository root,
/// else under the deploy folder).
pub(crate) fn sglang_serve_args(
    serve_args: &ServeArgs,
    repo_root: &Path,
    deploy_dir: &Path,
) -> Result<Vec<String>, ServerError> {
    let map = match serve_args {
        ServeArgs::List(items) => return Ok(items.clone()),
        ServeArgs::Map(map) => map,
    };
    let mut out = Vec::new();
    for (key, value) in map {
        let rendered = match value {
            Value::Null => continue,
            Value::String(s) if key == "config" => sglang_config(s, repo_root, deploy_dir)?,
            other => text(other),
        };
        out.extend([flag(key), rendered]);
    }
    Ok(out)
}

/// An absolute `config` path is kept; a relative one is the repository root's file when
/// there is one (upstream's rule), else names a file of the deploy folder (only its file
/// name counts, so `tests/dfx/perf/deploy/x.yaml` finds `deploy/x.yaml`).
fn sglang_config(value: &str, repo_root: &Path, deploy_dir: &Path) -> Result<String, ServerError> {
    let path = Path::new(value);
    if path.is_absolute() {
        return Ok(value.into());
    }
    let from_root = repo_root.join(path);
    if from_root.is_file() {
        return Ok(from_root.display().to_string());
    }
    let name = path.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
        ServerError::InvalidSpec(format!("serve_args.config `{value}` names no file"))
    })?;
    dfx_core::deploy::resolve(deploy_dir, name)
        .map(|p| p.display().to_string())
        .map_err(|e| ServerError::InvalidSpec(format!("serve_args.config `{value}`: {e}")))
}

impl ServerCommand {
    /// The command line as a shell would take it (each word quoted when needed).
    pub(crate) fn shell_line(&self) -> String {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().cloned())
            .map(|w| shell_quote(&w))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// `KEY=value` for each added variable, values of secret-looking keys redacted.
    pub(crate) fn env_lines(&self) -> Vec<String> {
        self.env
            .iter()
            .map(|(k, v)| format!("{k}={}", shell_quote(&redact(k, v))))
            .collect()
    }

    /// The text of `command.txt`: the exact command line, the working directory when it
    /// is not the caller's, then the added environment.
    pub fn describe(&self) -> String {
        let mut s = format!("{}\n", self.shell_line());
        if let Some(cwd) = &self.cwd {
            s.push_str(&format!("# working directory: {}\n", cwd.display()));
        }
        if !self.env.is_empty() {
            s.push_str("# environment added to the caller's:\n");
            for line in self.env_lines() {
                s.push_str(&format!("#   {line}\n"));
            }
        }
        s
    }
}

/// `<redacted>` for keys containing TOKEN, KEY, SECRET or PASSWORD (any case).
pub fn redact(key: &str, value: &str) -> String {
    let upper = key.to_ascii_uppercase();
    if ["TOKEN", "KEY", "SECRET", "PASSWORD"]
        .iter()
        .any(|s| upper.contains(s))
    {
        "<redacted>".into()
    } else {
        value.into()
    }
}

/// POSIX shell quoting: bare when only safe characters, else single quotes.
pub fn shell_quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.into()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_round_trips_through_sh() {
        for word in [
            "plain",
            "a b",
            "it's",
            "",
            "{\"a\":[1,2]}",
            "$HOME",
            "x;rm -rf /",
        ] {
            let out = std::process::Command::new("sh")
                .args(["-c", &format!("printf %s {}", shell_quote(word))])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), word);
        }
        assert_eq!(shell_quote("--port=8000"), "--port=8000");
    }

    fn spec(extra: &[&str], use_omni: bool) -> ServerSpec {
        ServerSpec {
            server_type: ServerType::VllmOmni,
            model: "m".into(),
            deploy: None,
            stage_overrides: None,
            serve_args: ServeArgs::default(),
            extra_cli_args: extra.iter().map(|s| s.to_string()).collect(),
            use_omni,
            default_timeouts: true,
            env: BTreeMap::new(),
            ready_timeout: None,
            judge: None,
        }
    }

    fn tail(extra: &[&str], use_omni: bool) -> Vec<String> {
        let inputs = CommandInputs {
            exe: Path::new("vllm-omni"),
            port: 1,
            deploy_config: None,
            deploy_dir: Path::new("deploy"),
            repo_root: Path::new("."),
            force_vllm_form: false,
        };
        let args = build(&spec(extra, use_omni), inputs).unwrap().args;
        let start = args.iter().position(|a| a == "1").unwrap() + 1;
        args[start..].to_vec()
    }

    #[test]
    fn default_timeouts_only_for_flags_not_given() {
        let both = [
            "--omni",
            "--stage-init-timeout",
            "600",
            "--init-timeout",
            "900",
        ];
        assert_eq!(tail(&[], true), both);
        assert_eq!(
            tail(
                &["--stage-init-timeout", "1800", "--init-timeout", "1800"],
                true
            ),
            [
                "--omni",
                "--stage-init-timeout",
                "1800",
                "--init-timeout",
                "1800"
            ]
        );
        assert_eq!(
            tail(&["--stage-init-timeout=1800"], true),
            [
                "--omni",
                "--stage-init-timeout=1800",
                "--init-timeout",
                "900"
            ]
        );
        assert!(tail(&[], false).is_empty());
        let mut diffusion = spec(&[], true);
        diffusion.default_timeouts = false;
        let inputs = CommandInputs {
            exe: Path::new("vllm-omni"),
            port: 1,
            deploy_config: None,
            deploy_dir: Path::new("deploy"),
            repo_root: Path::new("."),
            force_vllm_form: false,
        };
        let args = build(&diffusion, inputs).unwrap().args;
        assert_eq!(args.last().map(String::as_str), Some("--omni"), "{args:?}");
    }

    #[test]
    fn secrets_are_redacted_by_key() {
        for key in ["HF_TOKEN", "OPENAI_API_KEY", "my_secret", "DB_PASSWORD"] {
            assert_eq!(redact(key, "v"), "<redacted>", "{key}");
        }
        assert_eq!(redact("CUDA_VISIBLE_DEVICES", "0,1"), "0,1");
    }
}
