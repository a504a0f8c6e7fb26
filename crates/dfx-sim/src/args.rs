//! The `vllm-omni serve` command line, as the suite's launcher builds it, plus the
//! simulator's own flags and environment variables.
//!
//! `dfx-perf-sim serve <model> --host H --port P [--omni] [--deploy-config PATH]
//! [--stage-overrides JSON] [--stage-init-timeout N --init-timeout N] [other flags…]`
//!
//! Unknown `--flags` are accepted and recorded (a following token that does not start
//! with `--` is taken as the flag's value). Own options: `--sim-speed K`, `--sim-seed N`,
//! `--sim-profile NAME`, `--sim-fault SPEC` (repeatable, comma lists allowed),
//! `--sim-log FILTER`; or the variables `DFX_SIM_SPEED`, `DFX_SIM_SEED`,
//! `DFX_SIM_PROFILE`, `DFX_SIM_FAULTS`, `DFX_SIM_FAULT_<NAME>`, `DFX_SIM_LOG`. Flags win
//! over variables.

use std::ffi::OsString;

use crate::SimError;
use crate::faults::FAULT_NAMES;
use crate::options::SimOptions;
use crate::profile;

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Command {
    /// Serve with these options and this log filter.
    Serve(Box<SimOptions>, LogFilter),
    /// `--help`: print usage.
    Help,
    /// `--version`.
    Version,
}

/// The log filter (`--sim-log` / `DFX_SIM_LOG`, default `info`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogFilter(pub String);

/// Usage text.
pub(crate) fn usage() -> String {
    format!(
        "dfx-perf-sim: a GPU-less twin of `vllm-omni serve` for TTS\n\n\
         Usage: dfx-perf-sim serve <model> [--host H] [--port P] [--omni] [--deploy-config PATH]\n\
         \x20      [--stage-overrides JSON] [--stage-init-timeout N] [--init-timeout N]\n\
         \x20      [--served-model-name NAME] [--sim-speed K] [--sim-seed N] [--sim-profile NAME]\n\
         \x20      [--sim-fault SPEC]... [--sim-log FILTER] [any other --flag [value]]...\n\n\
         Environment: DFX_SIM_SPEED, DFX_SIM_SEED, DFX_SIM_PROFILE, DFX_SIM_LOG,\n\
         \x20 DFX_SIM_FAULTS=SPEC[,SPEC...], DFX_SIM_FAULT_<NAME>=VALUE (flags win)\n\
         Faults: {}\n\
         Profiles: {}\n\
         Omni profiles (POST /v1/chat/completions): {}\n",
        FAULT_NAMES.join(", "),
        profile::NAMES.join(", "),
        crate::omni::profile::NAMES.join(", ")
    )
}

fn bad(msg: impl Into<String>) -> SimError {
    SimError::Args(msg.into())
}

struct Tokens {
    items: Vec<String>,
    pos: usize,
}

impl Tokens {
    fn next(&mut self) -> Option<String> {
        let t = self.items.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn peek(&self) -> Option<&str> {
        self.items.get(self.pos).map(String::as_str)
    }

    /// The value of `flag`: inline (`--flag=v`) or the next token.
    fn value(&mut self, flag: &str, inline: Option<String>) -> Result<String, SimError> {
        match inline {
            Some(v) => Ok(v),
            None => self
                .next()
                .ok_or_else(|| bad(format!("{flag} needs a value"))),
        }
    }
}

fn number<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, SimError> {
    v.trim()
        .parse()
        .map_err(|_| bad(format!("{flag}: `{v}` is not a valid number")))
}

/// Parses `args` (argv[0] first) with `env` for the variables.
pub(crate) fn parse(
    args: Vec<OsString>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Command, SimError> {
    let argv: Vec<String> = args
        .into_iter()
        .map(|a| {
            a.into_string()
                .map_err(|a| bad(format!("argument is not UTF-8: {a:?}")))
        })
        .collect::<Result<_, _>>()?;
    let mut t = Tokens {
        items: argv.clone(),
        pos: 1,
    };
    match t.next().as_deref() {
        Some("serve") => {}
        Some("-h" | "--help" | "help") => return Ok(Command::Help),
        Some("-V" | "--version") => return Ok(Command::Version),
        Some(other) => return Err(bad(format!("unknown command `{other}` (expected `serve`)"))),
        None => return Err(bad("missing command: `serve <model>`")),
    }
    let mut model = match t.peek() {
        Some(m) if !m.starts_with('-') => t.next(),
        _ => None,
    };
    let mut o = SimOptions::new(String::new());
    o.argv = argv;
    apply_env(&mut o, env)?;
    let mut log = LogFilter(env("DFX_SIM_LOG").unwrap_or_else(|| "info".into()));
    let mut flag_faults = Vec::new();
    while let Some(tok) = t.next() {
        let Some(body) = tok.strip_prefix("--") else {
            if tok == "-h" {
                return Ok(Command::Help);
            }
            return Err(bad(format!("unexpected argument `{tok}`")));
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (body.to_string(), None),
        };
        let flag = format!("--{name}");
        match name.as_str() {
            "help" => return Ok(Command::Help),
            "version" => return Ok(Command::Version),
            "model" => model = Some(t.value(&flag, inline)?),
            "host" => o.host = t.value(&flag, inline)?,
            "port" => o.port = number(&flag, &t.value(&flag, inline)?)?,
            "omni" => o.omni = true,
            "deploy-config" => o.deploy_config = Some(t.value(&flag, inline)?.into()),
            "stage-overrides" => {
                let v = t.value(&flag, inline)?;
                o.stage_overrides =
                    Some(serde_json::from_str(&v).map_err(|e| {
                        bad(format!("--stage-overrides is not valid JSON ({e}): {v}"))
                    })?);
            }
            "stage-init-timeout" => {
                o.stage_init_timeout = Some(number(&flag, &t.value(&flag, inline)?)?)
            }
            "init-timeout" => o.init_timeout = Some(number(&flag, &t.value(&flag, inline)?)?),
            "served-model-name" => o.served_model_name = Some(t.value(&flag, inline)?),
            "sim-speed" => o.speed = number(&flag, &t.value(&flag, inline)?)?,
            "sim-seed" => o.seed = number(&flag, &t.value(&flag, inline)?)?,
            "sim-profile" => o.profile = Some(t.value(&flag, inline)?),
            "sim-fault" => flag_faults.push(t.value(&flag, inline)?),
            "sim-log" => log = LogFilter(t.value(&flag, inline)?),
            _ => {
                let value = match inline {
                    Some(v) => Some(v),
                    None if t.peek().is_some_and(|n| !n.starts_with("--")) => t.next(),
                    None => None,
                };
                o.extra_flags.push((flag, value));
            }
        }
    }
    for spec in flag_faults {
        o.faults.apply_list(&spec, "--sim-fault")?;
    }
    o.model = model.ok_or_else(|| bad("missing model: `serve <model>`"))?;
    Ok(Command::Serve(Box::new(o), log))
}

fn apply_env(o: &mut SimOptions, env: &dyn Fn(&str) -> Option<String>) -> Result<(), SimError> {
    if let Some(v) = env("DFX_SIM_SPEED") {
        o.speed = number("DFX_SIM_SPEED", &v)?;
    }
    if let Some(v) = env("DFX_SIM_SEED") {
        o.seed = number("DFX_SIM_SEED", &v)?;
    }
    if let Some(v) = env("DFX_SIM_PROFILE") {
        o.profile = Some(v);
    }
    o.faults.apply_env(env)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn run(line: &str, env: &[(&str, &str)]) -> Result<Command, SimError> {
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let args = line.split(' ').map(OsString::from).collect();
        parse(args, &|k| env.get(k).cloned())
    }

    fn serve(line: &str, env: &[(&str, &str)]) -> SimOptions {
        match run(line, env).unwrap() {
            Command::Serve(o, _) => *o,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn launcher_command_line() {
        let o = serve(
            "sim serve Qwen/Qwen3-TTS-12Hz-1.7B-Base --host 127.0.0.1 --port 43210 --omni \
             --trust-remote-code --gpu-memory-utilization 0.9 --stage-overrides {\"1\":{\"devices\":\"1\"}} \
             --deploy-config /tmp/d.yaml --stage-init-timeout 600 --init-timeout 900 --enforce-eager",
            &[],
        );
        assert_eq!(o.model, "Qwen/Qwen3-TTS-12Hz-1.7B-Base");
        assert_eq!(
            (o.host.as_str(), o.port, o.omni),
            ("127.0.0.1", 43210, true)
        );
        assert_eq!(
            o.deploy_config.as_deref(),
            Some(std::path::Path::new("/tmp/d.yaml"))
        );
        assert_eq!(
            o.stage_overrides,
            Some(serde_json::json!({"1": {"devices": "1"}}))
        );
        assert_eq!(
            (o.stage_init_timeout, o.init_timeout),
            (Some(600.0), Some(900.0))
        );
        assert_eq!(
            o.extra_flags,
            vec![
                ("--trust-remote-code".to_string(), None),
                (
                    "--gpu-memory-utilization".to_string(),
                    Some("0.9".to_string())
                ),
                ("--enforce-eager".to_string(), None),
            ]
        );
        assert_eq!(o.argv.len(), 20);
    }

    #[test]
    fn own_flags_win_over_env() {
        let env = [
            ("DFX_SIM_SPEED", "4"),
            ("DFX_SIM_SEED", "9"),
            ("DFX_SIM_FAULTS", "odd-bytes"),
            ("DFX_SIM_FAULT_SLOWDOWN", "2"),
        ];
        let o = serve(
            "sim serve m --sim-speed=10 --sim-fault slowdown=1.5,error500=0.1",
            &env,
        );
        assert_eq!(o.speed, 10.0);
        assert_eq!(o.seed, 9);
        assert!(o.faults.odd_bytes);
        assert_eq!(o.faults.slowdown, Some(1.5));
        assert_eq!(o.faults.error500, Some(0.1));
    }

    #[test]
    fn errors_are_clear() {
        let msg = |l: &str| run(l, &[]).unwrap_err().to_string();
        assert!(msg("sim").contains("serve"));
        assert!(msg("sim run m").contains("unknown command `run`"));
        assert!(msg("sim serve").contains("missing model"));
        assert!(msg("sim serve m --port abc").contains("--port"));
        assert!(msg("sim serve m --stage-overrides {oops").contains("not valid JSON"));
        assert!(msg("sim serve m --sim-fault boom").contains("unknown fault"));
        assert!(msg("sim serve m --host").contains("needs a value"));
        assert!(matches!(run("sim serve --help", &[]), Ok(Command::Help)));
        assert!(matches!(run("sim --version", &[]), Ok(Command::Version)));
    }

    #[test]
    fn model_by_flag() {
        assert_eq!(serve("sim serve --model m2 --port 1", &[]).model, "m2");
    }
}
