//! Deploy files (`--deploy-config`) and `--stage-overrides`: the values that change the
//! model's behaviour — `max_num_seqs` per stage, chunk sizes, the chunk ramp, left
//! context and `async_chunk`. Everything else in the file is accepted and ignored.
//!
//! Both layouts vllm-omni has used are read: the deploy layout (`async_chunk`,
//! `connectors.<name>.extra.*`, `stages[].max_num_seqs`) and the older stage-config layout
//! (`stage_args[].engine_args.max_num_seqs`, `runtime.connectors.<name>.extra.*`).
//! VoxCPM2's `vae_decode_every` sets its chunk size.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

/// Why a deploy file or a stage override was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeployError {
    /// The file could not be read.
    #[error("cannot read deploy config {path}: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    /// The file is not YAML.
    #[error("deploy config {path} is not valid YAML: {reason}")]
    InvalidYaml { path: PathBuf, reason: String },
    /// A recognised key has a value of the wrong kind.
    #[error("{source_name}: `{key}` {reason}")]
    BadValue {
        source_name: String,
        key: String,
        reason: String,
    },
    /// `--stage-overrides` is not `{"<stage id>": {…}}`.
    #[error("--stage-overrides is not a JSON object of stage ids: {0}")]
    BadOverrides(String),
}

/// The behaviour-changing values found, all optional (absent = profile default).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DeploySettings {
    /// `max_num_seqs` of stage 0 (talker).
    pub talker_max_num_seqs: Option<usize>,
    /// `max_num_seqs` of stage 1 (code2wav).
    pub codec_max_num_seqs: Option<usize>,
    /// `initial_codec_chunk_frames`.
    pub initial_chunk_frames: Option<u32>,
    /// `codec_chunk_frames`.
    pub chunk_frames: Option<u32>,
    /// `codec_chunk_ramp`.
    pub chunk_ramp: Option<Vec<u32>>,
    /// `codec_left_context_frames`.
    pub left_context_frames: Option<u32>,
    /// `async_chunk` (false: no streaming between the stages).
    pub async_chunk: Option<bool>,
    /// `devices` per stage id (GPU sharing).
    pub devices: Vec<(u32, String)>,
    /// `max_num_seqs` of every stage id, in the order read (omni models use stages 0–2:
    /// thinker, talker, code2wav; later entries win).
    pub stage_max_num_seqs: Vec<(u32, usize)>,
}

struct Ctx<'a> {
    source: &'a str,
}

impl Ctx<'_> {
    fn bad(&self, key: &str, reason: impl Into<String>) -> DeployError {
        DeployError::BadValue {
            source_name: self.source.to_string(),
            key: key.to_string(),
            reason: reason.into(),
        }
    }

    fn positive(&self, key: &str, v: &Value) -> Result<u32, DeployError> {
        v.as_u64()
            .filter(|n| (1..=u64::from(u32::MAX)).contains(n))
            .map(|n| n as u32)
            .ok_or_else(|| self.bad(key, format!("must be a positive integer, got {v}")))
    }

    fn ramp(&self, key: &str, v: &Value) -> Result<Vec<u32>, DeployError> {
        let list = v.as_array().ok_or_else(|| {
            self.bad(key, format!("must be a list of positive integers, got {v}"))
        })?;
        list.iter()
            .enumerate()
            .map(|(i, x)| self.positive(&format!("{key}[{i}]"), x))
            .collect()
    }
}

impl DeploySettings {
    /// Reads a deploy file.
    pub fn from_file(path: &Path) -> Result<Self, DeployError> {
        let text = dfx_core::fsutil::read_text_bounded(path, dfx_core::bounds::MAX_CONFIG_BYTES)
            .map_err(|e| DeployError::Unreadable {
                path: path.into(),
                reason: e.problem(),
            })?;
        Self::from_yaml(&text, path)
    }

    /// Parses deploy YAML; `path` names it in errors.
    pub(crate) fn from_yaml(text: &str, path: &Path) -> Result<Self, DeployError> {
        let doc: Value = yaml_serde::from_str(text).map_err(|e| DeployError::InvalidYaml {
            path: path.into(),
            reason: e.to_string(),
        })?;
        let source = format!("deploy config {}", path.display());
        let ctx = Ctx { source: &source };
        let mut s = DeploySettings::default();
        if doc.is_null() {
            return Ok(s);
        }
        if !doc.is_object() {
            return Err(ctx.bad("<top level>", "must be a mapping"));
        }
        if let Some(v) = doc.get("async_chunk").filter(|v| !v.is_null()) {
            s.async_chunk = Some(v.as_bool().ok_or_else(|| {
                ctx.bad("async_chunk", format!("must be true or false, got {v}"))
            })?);
        }
        for (prefix, conns) in [
            ("connectors", doc.get("connectors")),
            ("runtime.connectors", doc.pointer("/runtime/connectors")),
        ] {
            if let Some(Value::Object(map)) = conns {
                for (name, conn) in map {
                    if let Some(extra) = conn.get("extra") {
                        s.read_chunk_keys(&ctx, &format!("{prefix}.{name}.extra"), extra)?;
                    }
                }
            }
        }
        s.read_stages(&ctx, &doc)?;
        Ok(s)
    }

    fn read_stages(&mut self, ctx: &Ctx, doc: &Value) -> Result<(), DeployError> {
        for (list_key, args_ptr) in [("stages", ""), ("stage_args", "/engine_args")] {
            let Some(list) = doc.get(list_key).filter(|v| !v.is_null()) else {
                continue;
            };
            let list = list
                .as_array()
                .ok_or_else(|| ctx.bad(list_key, "must be a list of stages"))?;
            for (i, stage) in list.iter().enumerate() {
                let key = format!("{list_key}[{i}]");
                let id = match stage.get("stage_id") {
                    Some(v) => ctx.positive_or_zero(&format!("{key}.stage_id"), v)?,
                    None => i as u32,
                };
                let args = if args_ptr.is_empty() {
                    Some(stage)
                } else {
                    stage.pointer(args_ptr)
                };
                let args_key = format!("{key}{}", args_ptr.replace('/', "."));
                if let Some(args) = args {
                    self.read_stage(ctx, &args_key, id, args)?;
                }
                if let Some(d) = stage
                    .get("devices")
                    .or_else(|| stage.pointer("/runtime/devices"))
                {
                    self.devices
                        .push((id, d.as_str().map_or(d.to_string(), String::from)));
                }
                if let Some(rc) =
                    stage.pointer("/engine_extras/hf_overrides/voxcpm2_runtime_config")
                    && let Some(v) = rc.get("vae_decode_every")
                {
                    let k = format!(
                        "{key}.engine_extras.hf_overrides.voxcpm2_runtime_config.vae_decode_every"
                    );
                    let n = ctx.positive(&k, v)?;
                    self.initial_chunk_frames = Some(n);
                    self.chunk_frames = Some(n);
                }
            }
        }
        Ok(())
    }

    /// Reads `max_num_seqs` of stage `id` (and, as a simulator extension, chunk keys).
    fn read_stage(
        &mut self,
        ctx: &Ctx,
        key: &str,
        id: u32,
        args: &Value,
    ) -> Result<(), DeployError> {
        if let Some(v) = args.get("max_num_seqs").filter(|v| !v.is_null()) {
            let n = ctx.positive(&format!("{key}.max_num_seqs"), v)? as usize;
            self.stage_max_num_seqs.retain(|(s, _)| *s != id);
            self.stage_max_num_seqs.push((id, n));
            match id {
                0 => self.talker_max_num_seqs = Some(n),
                1 => self.codec_max_num_seqs = Some(n),
                _ => {}
            }
        }
        self.read_chunk_keys(ctx, key, args)
    }

    fn read_chunk_keys(&mut self, ctx: &Ctx, key: &str, extra: &Value) -> Result<(), DeployError> {
        let get = |k: &str| extra.get(k).filter(|v| !v.is_null());
        if let Some(v) = get("codec_chunk_frames") {
            self.chunk_frames = Some(ctx.positive(&format!("{key}.codec_chunk_frames"), v)?);
        }
        if let Some(v) = get("initial_codec_chunk_frames") {
            let k = format!("{key}.initial_codec_chunk_frames");
            self.initial_chunk_frames = Some(ctx.positive(&k, v)?);
        }
        if let Some(v) = get("codec_chunk_ramp") {
            self.chunk_ramp = Some(ctx.ramp(&format!("{key}.codec_chunk_ramp"), v)?);
        }
        if let Some(v) = get("codec_left_context_frames") {
            let k = format!("{key}.codec_left_context_frames");
            self.left_context_frames = Some(ctx.positive_or_zero(&k, v)?);
        }
        Ok(())
    }

    /// Whether stages 0 and 1 run on the same device (`devices`, default `"0"`), so that
    /// they compete for one GPU.
    pub(crate) fn stages_share_device(&self) -> bool {
        let dev = |id: u32| {
            self.devices
                .iter()
                .rev()
                .find(|(s, _)| *s == id)
                .map_or("0", |(_, d)| d.as_str())
        };
        dev(0) == dev(1)
    }

    /// Applies `--stage-overrides` (`{"<stage id>": {key: value, …}, …}`) on top.
    pub(crate) fn apply_overrides(&mut self, overrides: &Value) -> Result<(), DeployError> {
        let map = overrides
            .as_object()
            .ok_or_else(|| DeployError::BadOverrides(format!("got {overrides}")))?;
        let ctx = Ctx {
            source: "--stage-overrides",
        };
        for (id, args) in map {
            let sid: u32 = id.trim().parse().map_err(|_| {
                DeployError::BadOverrides(format!("stage id `{id}` is not a number"))
            })?;
            if !args.is_object() {
                return Err(DeployError::BadOverrides(format!(
                    "stage `{id}` must map to an object, got {args}"
                )));
            }
            self.read_stage(&ctx, id, sid, args)?;
            if let Some(d) = args.get("devices") {
                self.devices.retain(|(s, _)| *s != sid);
                self.devices
                    .push((sid, d.as_str().map_or(d.to_string(), String::from)));
            }
        }
        Ok(())
    }
}

impl Ctx<'_> {
    fn positive_or_zero(&self, key: &str, v: &Value) -> Result<u32, DeployError> {
        v.as_u64()
            .filter(|n| *n <= u64::from(u32::MAX))
            .map(|n| n as u32)
            .ok_or_else(|| self.bad(key, format!("must be a non-negative integer, got {v}")))
    }
}

#[cfg(test)]
mod tests;
