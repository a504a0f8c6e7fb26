//! One case object → a [`CaseDraft`]: its test name, marks, server and enabled entries.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::entry::{CaseFacts, build_entry};
use super::entry_parts::EntryDraft;
use super::marks::{CaseMarks, parse_mark_field};
use super::raw::{RawCase, from_object};
use super::runners::CaseRunner;
use super::server::build_server;
use super::value::{name_fits, opt_str};
use crate::diag::{Ctx, Errs, json_type};
use crate::plan::CaseKeys;
use crate::server::ServerSpec;

/// A validated case. Fields that failed validation are `None`/empty and their errors were
/// pushed; the case then produces no trials.
#[derive(Debug, Clone)]
pub(crate) struct CaseDraft {
    pub file: PathBuf,
    pub case_index: usize,
    pub test_name: Option<String>,
    pub marks: CaseMarks,
    pub server: Option<Arc<ServerSpec>>,
    /// Enabled, valid entries in file order.
    pub entries: Vec<EntryDraft>,
}

/// Validates one element of a file's top-level array.
pub(crate) fn build_case(
    file: &Path,
    case_index: usize,
    v: &Value,
    deploy_dir: &Path,
    errs: &mut Errs,
    warnings: &mut Vec<String>,
) -> CaseDraft {
    let mut draft = CaseDraft {
        file: file.to_path_buf(),
        case_index,
        test_name: None,
        marks: CaseMarks::default(),
        server: None,
        entries: Vec::new(),
    };
    let base = Ctx::new(file).case(case_index);
    let Value::Object(obj) = v else {
        errs.push(base.err(
            "",
            format!("case must be an object, got {}", json_type(v)),
            r#"{"test_name": ..., "server_params": {...}, "benchmark_params": [...]}"#,
        ));
        return draft;
    };
    let raw: RawCase = match from_object(obj) {
        Ok(r) => r,
        Err(e) => {
            errs.push(base.err("", e.to_string(), ""));
            return draft;
        }
    };
    draft.test_name = test_name(&base, raw.test_name.as_ref(), errs);
    let ctx = base.test(draft.test_name.as_deref());
    let runner = super::runners::case_runner(&ctx, &raw.other, errs);
    let native_duplex = runner == Some(CaseRunner::NativeDuplex);
    let contract = runner == Some(CaseRunner::Contract);
    super::known_keys::check_keys(&ctx, ("", "case"), obj, super::known_keys::case::CASE, errs);
    opt_str(&ctx, "description", raw.description.as_ref(), errs);
    draft.marks = parse_mark_field(&ctx, raw.mark.as_ref(), errs);
    let mut case_keys = case_keys(&ctx, &raw.other, errs);
    let server = build_server(
        &ctx,
        raw.server_type.as_ref(),
        raw.server_params.as_ref(),
        deploy_dir,
        errs,
    );
    let judge = super::judge::parse_judge(&ctx, raw.other.get("judge_server_params"), errs);
    draft.server = server.spec.map(|mut s| {
        s.judge = judge.map(Box::new);
        Arc::new(s)
    });
    if runner.is_none() {
        return draft;
    }
    let accepted = "a list of benchmark entry objects, or {\"$ref\": \"<file holding that list, relative to this config>\"}";
    let referenced = raw
        .benchmark_params
        .as_ref()
        .and_then(|v| resolve_ref(&ctx, file, v, errs));
    match referenced.as_ref().or(raw.benchmark_params.as_ref()) {
        Some(Value::Object(o)) if o.contains_key("$ref") => {} // resolve_ref reported it
        Some(Value::Array(items)) => {
            if case_keys.omniinteract_aggregate_min_ia_qtf1.is_some() {
                case_keys.omniinteract_aggregate_subsets = aggregate_subsets(&ctx, items, errs);
            }
            for (i, item) in items.iter().enumerate() {
                if let Some(e) = build_entry(
                    &ctx,
                    i,
                    item,
                    &CaseFacts {
                        tags: &draft.marks.tags,
                        native_duplex,
                        contract,
                        trust_remote_code: server.trust_remote_code,
                        keys: case_keys.clone(),
                    },
                    errs,
                    warnings,
                ) {
                    draft.entries.push(e);
                }
            }
        }
        None => errs.push(ctx.err(
            "benchmark_params",
            "missing required key `benchmark_params`",
            accepted,
        )),
        Some(other) => errs.push(ctx.err(
            "benchmark_params",
            format!("wrong type: got {}", json_type(other)),
            accepted,
        )),
    }
    // Upstream's diffusion runner starts its server without the omni init timeouts.
    let diffusion = !draft.entries.is_empty()
        && draft
            .entries
            .iter()
            .all(|e| e.entry.dialect == crate::plan::Dialect::Diffusion);
    if diffusion && let Some(server) = draft.server.as_mut() {
        Arc::make_mut(server).default_timeouts = false;
    }
    draft
}

/// `{"$ref": "<path>"}` (upstream since 2026): the JSON list in `<path>`, relative to the
/// config file's folder, read with the same size bound as a config file. `None` when `v`
/// is not a `$ref` object, or after reporting why the reference cannot be used.
fn resolve_ref(ctx: &Ctx<'_>, file: &Path, v: &Value, errs: &mut Errs) -> Option<Value> {
    let Value::Object(o) = v else { return None };
    let r = o.get("$ref")?;
    let key = "benchmark_params.$ref";
    let accepted = "a path (relative to this config file) of a JSON file holding a list of entries";
    let Value::String(rel) = r else {
        errs.push(ctx.err(key, format!("wrong type: got {}", json_type(r)), accepted));
        return None;
    };
    if let Some(extra) = o.keys().find(|k| *k != "$ref") {
        errs.push(ctx.err(
            &format!("benchmark_params.{extra}"),
            "a $ref object holds only `$ref`",
            accepted,
        ));
        return None;
    }
    let path = file.parent().unwrap_or(Path::new(".")).join(rel);
    let text = match super::read::read_bounded(&path) {
        Ok(t) => t,
        Err(e) => {
            errs.push(ctx.err(key, format!("{}: {}", path.display(), e.problem), accepted));
            return None;
        }
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(list @ Value::Array(_)) => Some(list),
        Ok(other) => {
            errs.push(ctx.err(
                key,
                format!("{} holds {}, not a list", path.display(), json_type(&other)),
                accepted,
            ));
            None
        }
        Err(e) => {
            errs.push(ctx.err(
                key,
                format!(
                    "{}: invalid JSON at line {}, column {}",
                    path.display(),
                    e.line(),
                    e.column()
                ),
                accepted,
            ));
            None
        }
    }
}

fn test_name(ctx: &Ctx<'_>, v: Option<&Value>, errs: &mut Errs) -> Option<String> {
    let accepted = "a non-empty string";
    let key = "test_name";
    match v {
        None => {
            errs.push(ctx.err(key, "missing required key `test_name`", accepted));
            None
        }
        Some(Value::String(s)) if !s.trim().is_empty() => name_fits(ctx, key, s.clone(), errs),
        Some(Value::String(_)) => {
            errs.push(ctx.err(key, "empty test_name", accepted));
            None
        }
        Some(other) => {
            errs.push(ctx.err(
                key,
                format!("wrong type: got {}", json_type(other)),
                accepted,
            ));
            None
        }
    }
}

/// The case-level keys every entry carries: `benchmark_endpoint` (or legacy
/// `benchmark_backend`), a string; `omniinteract_aggregate_min_ia_qtf1`, a finite number.
fn case_keys(ctx: &Ctx<'_>, other: &serde_json::Map<String, Value>, errs: &mut Errs) -> CaseKeys {
    let endpoint = match other.get("benchmark_endpoint") {
        Some(v) => opt_str(ctx, "benchmark_endpoint", Some(v), errs),
        None => opt_str(
            ctx,
            "benchmark_backend",
            other.get("benchmark_backend"),
            errs,
        ),
    };
    let key = "omniinteract_aggregate_min_ia_qtf1";
    let floor = match other.get(key) {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_f64().filter(|x| x.is_finite()) {
            Some(x) => Some(x),
            None => {
                errs.push(ctx.err(
                    key,
                    format!("wrong type: got {}", json_type(v)),
                    "a finite number (the pooled IA-QTF1 floor, e.g. 0.2)",
                ));
                None
            }
        },
    };
    CaseKeys {
        benchmark_endpoint: endpoint,
        omniinteract_aggregate_min_ia_qtf1: floor,
        omniinteract_aggregate_subsets: Vec::new(),
    }
}

/// The subsets pooled by `omniinteract_aggregate_min_ia_qtf1`: `omniinteract_subsets` of
/// every entry with a truthy `omniinteract_evaluate` (disabled ones too, as upstream's
/// runner reads the file), each a non-empty string, no duplicates, at least one.
fn aggregate_subsets(ctx: &Ctx<'_>, items: &[Value], errs: &mut Errs) -> Vec<String> {
    let accepted = "a non-empty subset name (each evaluated entry of a case with \
                    omniinteract_aggregate_min_ia_qtf1 names its subset, no two the same)";
    let mut subsets: Vec<String> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if !crate::lenient::is_set(item.get("omniinteract_evaluate")) {
            continue;
        }
        let ectx = ctx.entry(i);
        match item.get("omniinteract_subsets").and_then(Value::as_str) {
            Some(s) if !s.trim().is_empty() => {
                if subsets.iter().any(|x| x == s) {
                    errs.push(ectx.err(
                        "omniinteract_subsets",
                        format!("subset {s:?} appears twice in the pooled set"),
                        accepted,
                    ));
                } else {
                    subsets.push(s.to_string());
                }
            }
            other => errs.push(ectx.err(
                "omniinteract_subsets",
                format!(
                    "got {}",
                    other.map_or("nothing".into(), |s| format!("{s:?}"))
                ),
                accepted,
            )),
        }
    }
    if subsets.is_empty() {
        errs.push(ctx.err(
            "omniinteract_aggregate_min_ia_qtf1",
            "no entry with omniinteract_evaluate to pool",
            "at least one evaluated OmniInteract entry in the case",
        ));
    }
    subsets
}
