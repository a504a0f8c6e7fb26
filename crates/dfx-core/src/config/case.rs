//! One case object → a [`CaseDraft`]: its test name, marks, server and enabled entries.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::entry::{EntryDraft, build_entry};
use super::error::{Ctx, json_type};
use super::marks::{CaseMarks, parse_mark_field};
use super::raw::{RawCase, from_object};
use super::server::build_server;
use super::value::{Errs, opt_str};
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
            errs.push(base.err("", e, ""));
            return draft;
        }
    };
    draft.test_name = test_name(&base, raw.test_name.as_ref(), errs);
    let ctx = base.test(draft.test_name.as_deref());
    for k in raw.other.keys() {
        warnings.push(ctx.err(k, "unknown case key (ignored)", "").to_string());
    }
    opt_str(&ctx, "description", raw.description.as_ref(), errs);
    draft.marks = parse_mark_field(&ctx, raw.mark.as_ref(), errs);
    let server = build_server(
        &ctx,
        raw.server_type.as_ref(),
        raw.server_params.as_ref(),
        deploy_dir,
        errs,
        warnings,
    );
    draft.server = server.spec.map(Arc::new);
    let accepted = "a list of benchmark entry objects";
    match raw.benchmark_params.as_ref() {
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                if let Some(e) = build_entry(
                    &ctx,
                    i,
                    item,
                    &draft.marks.tags,
                    server.trust_remote_code,
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
    draft
}

fn test_name(ctx: &Ctx<'_>, v: Option<&Value>, errs: &mut Errs) -> Option<String> {
    let accepted = "a non-empty string";
    let key = "test_name";
    match v {
        None => {
            errs.push(ctx.err(key, "missing required key `test_name`", accepted));
            None
        }
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
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
