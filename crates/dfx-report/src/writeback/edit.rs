//! The span edits of a write-back and the self-check that they did exactly what was
//! meant (the edited document equals the original with only the intended baseline
//! values set).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::jsonspan::{Kind, Node};
use super::{EntryRef, Sweep};
use crate::error::{MissingThreshold, SelfCheckError, WritebackError};

/// Replace `start..end` with `text` (an insertion when `start == end`).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Edit {
    pub start: usize,
    pub end: usize,
    pub text: String,
}

/// `baseline[<hw>][metric] = value` in entry `(case, entry)`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Intended {
    pub case_index: usize,
    pub raw_entry_index: usize,
    pub metric: String,
    pub value: Value,
}

#[derive(Debug, Default)]
pub(super) struct Outcome {
    pub edits: Vec<Edit>,
    pub intended: Vec<Intended>,
    pub written: Vec<String>,
    pub notes: Vec<String>,
}

/// A metric's new value: list items or dict members, each as JSON text.
struct NewValue {
    dict: bool,
    items: Vec<(String, String)>,
}

impl NewValue {
    fn format(&self, base: &str, unit: &str, pretty: bool) -> String {
        let parts: Vec<String> = self
            .items
            .iter()
            .map(|(k, v)| {
                if self.dict {
                    format!("{}: {v}", json_str(k))
                } else {
                    v.clone()
                }
            })
            .collect();
        let (open, close) = if self.dict { ("{", "}") } else { ("[", "]") };
        block(open, close, &parts, base, unit, pretty)
    }

    fn to_value(&self) -> Value {
        let parse = |t: &str| serde_json::from_str::<Value>(t).unwrap_or(Value::Null);
        if self.dict {
            Value::Object(
                self.items
                    .iter()
                    .map(|(k, v)| (k.clone(), parse(v)))
                    .collect(),
            )
        } else {
            Value::Array(self.items.iter().map(|(_, v)| parse(v)).collect())
        }
    }
}

fn block(
    open: &str,
    close: &str,
    parts: &[String],
    base: &str,
    unit: &str,
    pretty: bool,
) -> String {
    if parts.is_empty() {
        return format!("{open}{close}");
    }
    if !pretty {
        return format!("{open}{}{close}", parts.join(", "));
    }
    let inner = format!("{base}{unit}");
    let body: Vec<String> = parts.iter().map(|p| format!("{inner}{p}")).collect();
    format!("{open}\n{}\n{base}{close}", body.join(",\n"))
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialise")
}

/// A threshold as JSON number text (shortest form that reads back exactly).
fn num_text(x: f64) -> String {
    serde_json::to_string(&x).expect("finite numbers serialise")
}

/// The whitespace before the first non-blank character of the line holding `pos`.
fn line_indent(text: &str, pos: usize) -> &str {
    let line_start = text[..pos].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let rest = &text[line_start..];
    let n = rest.len() - rest.trim_start_matches([' ', '\t']).len();
    &rest[..n]
}

/// The indentation step the file uses inside `node` (child line minus node line), or
/// two spaces.
fn indent_unit(text: &str, node: &Node) -> String {
    let first_child = match &node.kind {
        Kind::Object(m) => m.first().map(|m| m.key_start),
        Kind::Array(v) => v.first().map(|n| n.start),
        _ => None,
    };
    if let Some(c) = first_child {
        let outer = line_indent(text, node.start);
        let inner = line_indent(text, c);
        if inner.len() > outer.len()
            && inner.starts_with(outer)
            && text[node.start..c].contains('\n')
        {
            return inner[outer.len()..].to_string();
        }
    }
    "  ".into()
}

fn is_pretty(text: &str, node: &Node) -> bool {
    text[node.start..node.end].contains('\n')
}

/// Whether a baseline object is hardware-nested (`{"H100": {metric: …}}`), by the rule
/// the config loader uses.
fn is_nested(v: &Value) -> bool {
    v.as_object().is_some_and(dfx_core::baseline::looks_nested)
}

/// Computes the edits for one entry.
pub(super) fn entry_edits(
    text: &str,
    root: &Node,
    hw: &str,
    entry: &EntryRef,
    thresholds: &BTreeMap<String, BTreeMap<String, f64>>,
    out: &mut Outcome,
) -> Result<(), WritebackError> {
    let metrics: BTreeSet<&String> = entry
        .steps
        .iter()
        .filter_map(|s| thresholds.get(&s.trial))
        .flat_map(|m| m.keys())
        .collect();
    if metrics.is_empty() {
        return Ok(());
    }
    let label = format!(
        "test `{}` benchmark_params[{}]",
        entry.test_name, entry.raw_entry_index
    );
    let node = locate_entry(root, entry).ok_or_else(|| WritebackError::EntryNotInFile {
        label: label.clone(),
        case: entry.case_index,
    })?;
    let baseline = node.get("baseline");
    if baseline.is_some_and(|b| is_flat_nonempty(text, &b.value)) {
        out.notes.push(format!(
            "{label}: not written: its baseline is flat (one set of thresholds for every \
             hardware); adding a `{hw}` bucket would drop those for other hardware. Convert it \
             by hand to {{\"<HW>\": {{…}}}} first"
        ));
        return Ok(());
    }
    let bucket = baseline.and_then(|b| b.value.get(hw));
    let mut values: Vec<(String, NewValue)> = Vec::new();
    for metric in metrics {
        let existing = bucket.and_then(|b| b.value.get(metric)).map(|m| &m.value);
        match new_value(text, entry, metric, thresholds, existing) {
            Ok(v) => values.push((metric.clone(), v)),
            Err(why) => out
                .notes
                .push(format!("{label}: {metric} not written: {why}")),
        }
    }
    for (metric, v) in &values {
        out.intended.push(Intended {
            case_index: entry.case_index,
            raw_entry_index: entry.raw_entry_index,
            metric: metric.clone(),
            value: v.to_value(),
        });
        out.written.push(format!(
            "{label}: baseline.{hw}.{metric} = {}",
            v.format("", "", false)
        ));
    }
    if !values.is_empty() {
        place_edits(text, node, hw, &values, out);
    }
    Ok(())
}

/// `benchmark_params[i]` of case `c`, when it is an object.
fn locate_entry<'a>(root: &'a Node, entry: &EntryRef) -> Option<&'a Node> {
    root.at(entry.case_index)
        .and_then(|c| c.get("benchmark_params"))
        .and_then(|b| b.value.at(entry.raw_entry_index))
        .filter(|n| matches!(n.kind, Kind::Object(_)))
}

/// A non-empty baseline object that is not hardware-nested.
fn is_flat_nonempty(text: &str, baseline: &Node) -> bool {
    let v: Option<Value> = serde_json::from_str(&text[baseline.start..baseline.end]).ok();
    v.as_ref()
        .is_some_and(|v| v.as_object().is_some_and(|o| !o.is_empty()) && !is_nested(v))
}

/// The edits that put `values` into the entry's `<hw>` bucket: a new `baseline` key, a
/// filled `null`/empty baseline, a new bucket, or edits inside the existing bucket.
fn place_edits(
    text: &str,
    node: &Node,
    hw: &str,
    values: &[(String, NewValue)],
    out: &mut Outcome,
) {
    let unit = indent_unit(text, node);
    let pretty = is_pretty(text, node);
    let baseline = node.get("baseline");
    let bucket = baseline.and_then(|b| b.value.get(hw));
    match (baseline, bucket) {
        (None, _) => {
            let last_key = node
                .members()
                .last()
                .map(|m| m.key_start)
                .unwrap_or(node.start);
            let member = nested_text(hw, values, line_indent(text, last_key), &unit, pretty);
            out.edits.push(insert_member(
                text, node, "baseline", &member, &unit, pretty,
            ));
        }
        (Some(b), None) if b.value.members().is_empty() => {
            let base = line_indent(text, b.key_start);
            out.edits.push(Edit {
                start: b.value.start,
                end: b.value.end,
                text: nested_text(hw, values, base, &unit, pretty),
            });
        }
        (Some(b), None) => {
            let last_key = b
                .value
                .members()
                .last()
                .map(|m| m.key_start)
                .unwrap_or(b.key_start);
            let inner_pretty = is_pretty(text, &b.value);
            let bucket_text = bucket_text(values, line_indent(text, last_key), &unit, inner_pretty);
            out.edits.push(insert_member(
                text,
                &b.value,
                hw,
                &bucket_text,
                &unit,
                inner_pretty,
            ));
        }
        (Some(_), Some(bk)) => bucket_edits(text, &bk.value, values, &unit, out),
    }
}

/// `{"<hw>": {metric: value, …}}` formatted at `base`.
fn nested_text(
    hw: &str,
    values: &[(String, NewValue)],
    base: &str,
    unit: &str,
    pretty: bool,
) -> String {
    let inner_base = format!("{base}{unit}");
    let bucket = bucket_text(values, &inner_base, unit, pretty);
    block(
        "{",
        "}",
        &[format!("{}: {bucket}", json_str(hw))],
        base,
        unit,
        pretty,
    )
}

/// `{metric: value, …}` formatted at `base`.
fn bucket_text(values: &[(String, NewValue)], base: &str, unit: &str, pretty: bool) -> String {
    let inner_base = format!("{base}{unit}");
    let parts: Vec<String> = values
        .iter()
        .map(|(m, v)| format!("{}: {}", json_str(m), v.format(&inner_base, unit, pretty)))
        .collect();
    block("{", "}", &parts, base, unit, pretty)
}

/// Inserts `"key": value_text` as the last member of `obj` (or fills an empty object).
fn insert_member(
    text: &str,
    obj: &Node,
    key: &str,
    value_text: &str,
    unit: &str,
    pretty: bool,
) -> Edit {
    match obj.members().last() {
        Some(last) => {
            let sep = if pretty {
                format!(",\n{}", line_indent(text, last.key_start))
            } else {
                ", ".into()
            };
            Edit {
                start: last.value.end,
                end: last.value.end,
                text: format!("{sep}{}: {value_text}", json_str(key)),
            }
        }
        None => {
            let base = line_indent(text, obj.start);
            Edit {
                start: obj.start,
                end: obj.end,
                text: block(
                    "{",
                    "}",
                    &[format!("{}: {value_text}", json_str(key))],
                    base,
                    unit,
                    pretty,
                ),
            }
        }
    }
}

/// Replaces existing metrics of a bucket in place and appends the new ones.
fn bucket_edits(
    text: &str,
    bucket: &Node,
    values: &[(String, NewValue)],
    unit: &str,
    out: &mut Outcome,
) {
    let mut appended: Vec<(String, &NewValue)> = Vec::new();
    for (metric, v) in values {
        match bucket.get(metric) {
            Some(m) => {
                let base = line_indent(text, m.key_start);
                let pretty = if matches!(m.value.kind, Kind::Array(_) | Kind::Object(_)) {
                    is_pretty(text, &m.value)
                } else {
                    is_pretty(text, bucket)
                };
                out.edits.push(Edit {
                    start: m.value.start,
                    end: m.value.end,
                    text: v.format(base, &indent_unit(text, &m.value), pretty),
                });
            }
            None => appended.push((metric.clone(), v)),
        }
    }
    if appended.is_empty() {
        return;
    }
    let pretty = is_pretty(text, bucket);
    match bucket.members().last() {
        Some(last) => {
            let base = line_indent(text, last.key_start);
            let mut s = String::new();
            for (m, v) in appended {
                if pretty {
                    s.push_str(&format!(
                        ",\n{base}{}: {}",
                        json_str(&m),
                        v.format(base, unit, true)
                    ));
                } else {
                    s.push_str(&format!(
                        ", {}: {}",
                        json_str(&m),
                        v.format(base, unit, false)
                    ));
                }
            }
            out.edits.push(Edit {
                start: last.value.end,
                end: last.value.end,
                text: s,
            });
        }
        None => {
            let base = line_indent(text, bucket.start);
            let owned: Vec<(String, NewValue)> = appended
                .into_iter()
                .map(|(m, v)| {
                    (
                        m,
                        NewValue {
                            dict: v.dict,
                            items: v.items.clone(),
                        },
                    )
                })
                .collect();
            out.edits.push(Edit {
                start: bucket.start,
                end: bucket.end,
                text: bucket_text(&owned, base, unit, pretty),
            });
        }
    }
}

/// The new value of one metric: a list by step index, or a dict by step key when the
/// entry sweeps both concurrency and rate or the file already uses a dict. Steps
/// without a new threshold keep the existing element's text.
fn new_value(
    text: &str,
    entry: &EntryRef,
    metric: &str,
    thresholds: &BTreeMap<String, BTreeMap<String, f64>>,
    existing: Option<&Node>,
) -> Result<NewValue, MissingThreshold> {
    let value_of = |trial: &str| {
        thresholds
            .get(trial)
            .and_then(|m| m.get(metric))
            .map(|v| num_text(*v))
    };
    let both = entry.steps.iter().any(|s| s.sweep == Sweep::Concurrency)
        && entry.steps.iter().any(|s| s.sweep == Sweep::RequestRate);
    let existing_dict = existing.is_some_and(|n| matches!(n.kind, Kind::Object(_)));
    if both || existing_dict {
        let mut items = Vec::new();
        for s in &entry.steps {
            let old = existing
                .and_then(|n| n.get(&s.key))
                .map(|m| text[m.value.start..m.value.end].to_string());
            let v = value_of(&s.trial)
                .or(old)
                .ok_or_else(|| MissingThreshold::Key { key: s.key.clone() })?;
            items.push((s.key.clone(), v));
        }
        return Ok(NewValue { dict: true, items });
    }
    let n = entry.steps.iter().map(|s| s.index + 1).max().unwrap_or(0);
    let mut items = Vec::new();
    for i in 0..n {
        let step = entry.steps.iter().find(|s| s.index == i);
        let old = existing
            .and_then(|e| e.at(i))
            .map(|e| text[e.start..e.end].to_string());
        let v = step
            .and_then(|s| value_of(&s.trial))
            .or(old)
            .ok_or_else(|| MissingThreshold::Step {
                trial: step.map(|s| s.trial.as_str()).unwrap_or("?").to_string(),
            })?;
        items.push((String::new(), v));
    }
    // elements past the sweep are kept as written
    if let Some(Kind::Array(old)) = existing.map(|e| &e.kind) {
        for e in old.iter().skip(n) {
            items.push((String::new(), text[e.start..e.end].to_string()));
        }
    }
    Ok(NewValue { dict: false, items })
}

/// Applies non-overlapping edits (from the end, so offsets stay valid).
pub(super) fn apply(text: &str, edits: &[Edit]) -> Result<String, WritebackError> {
    let mut sorted: Vec<&Edit> = edits.iter().collect();
    sorted.sort_by_key(|e| (e.start, e.end));
    for w in sorted.windows(2) {
        if w[1].start < w[0].end || (w[1].start == w[0].start && w[0].start == w[0].end) {
            return Err(WritebackError::OverlappingEdits { at: w[1].start });
        }
    }
    let mut out = text.to_string();
    for e in sorted.iter().rev() {
        out.replace_range(e.start..e.end, &e.text);
    }
    Ok(out)
}

/// The edited document must equal the original with exactly the intended values set.
pub(super) fn verify(
    old: &str,
    new: &str,
    hw: &str,
    intended: &[Intended],
) -> Result<(), SelfCheckError> {
    let mut expected: Value = serde_json::from_str(old).map_err(SelfCheckError::Original)?;
    let actual: Value = serde_json::from_str(new).map_err(SelfCheckError::Result)?;
    for i in intended {
        let entry = expected
            .get_mut(i.case_index)
            .and_then(|c| c.get_mut("benchmark_params"))
            .and_then(|b| b.get_mut(i.raw_entry_index))
            .and_then(Value::as_object_mut)
            .ok_or(SelfCheckError::EntryVanished)?;
        let baseline = entry.entry("baseline").or_insert(Value::Null);
        if !baseline.is_object() {
            *baseline = Value::Object(Default::default());
        }
        let bucket = baseline
            .as_object_mut()
            .expect("made an object")
            .entry(hw.to_string())
            .or_insert_with(|| Value::Object(Default::default()));
        bucket
            .as_object_mut()
            .ok_or(SelfCheckError::BucketNotObject)?
            .insert(i.metric.clone(), i.value.clone());
    }
    if expected == actual {
        Ok(())
    } else {
        Err(SelfCheckError::Differs)
    }
}
