//! Trial identity (`docs/architecture.md` ("Trial identity")):
//! `<test_name>::<suffix>::<step>`.
//!
//! The suffix is the upstream pytest-id rule: the entry's `name` if non-empty, else the
//! non-empty values of `task`, `eval_phase`, `dataset_name` (diffusion: `dataset`) joined by
//! `_`, else `case<idx>`; each part sanitised to `[A-Za-z0-9._-]`. Repeats inside one test
//! keep the first occurrence as is and get `_1`, `_2`, … after it.

use std::collections::HashMap;

/// Separator between the parts of a trial name.
pub(crate) const SEP: &str = "::";

/// Replaces every character outside `[A-Za-z0-9._-]` with `_`.
pub(crate) fn sanitize_token(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The raw (not yet deduplicated) suffix of an entry.
pub(crate) fn entry_suffix(name: Option<&str>, parts: &[Option<&str>], index: usize) -> String {
    if let Some(n) = name.map(str::trim).filter(|n| !n.is_empty()) {
        return sanitize_token(n);
    }
    let parts: Vec<String> = parts
        .iter()
        .flatten()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .map(sanitize_token)
        .collect();
    if parts.is_empty() {
        format!("case{index}")
    } else {
        parts.join("_")
    }
}

/// Upstream dedup: the first occurrence keeps its suffix, the n-th repeat gets `_<n>`.
pub(crate) fn dedup_suffixes(raw: &[String]) -> Vec<String> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    raw.iter()
        .map(|s| {
            let count = seen.entry(s.as_str()).or_default();
            let out = if *count == 0 {
                s.clone()
            } else {
                format!("{s}_{count}")
            };
            *count += 1;
            out
        })
        .collect()
}

/// `<test_name>::<suffix>::<step label>`.
pub(crate) fn trial_name(test_name: &str, suffix: &str, step_label: &str) -> String {
    format!("{test_name}{SEP}{suffix}{SEP}{step_label}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffix_rule() {
        assert_eq!(
            entry_suffix(Some("512x512_steps20"), &[Some("t2i")], 0),
            "512x512_steps20"
        );
        assert_eq!(
            entry_suffix(
                None,
                &[Some("voice_clone"), Some("throughput"), Some("seed-tts")],
                1
            ),
            "voice_clone_throughput_seed-tts"
        );
        assert_eq!(
            entry_suffix(Some("  "), &[None, Some(""), Some("random-mm")], 0),
            "random-mm"
        );
        assert_eq!(entry_suffix(Some(""), &[None, None, None], 3), "case3");
        assert_eq!(entry_suffix(Some("a b/c:d"), &[], 0), "a_b_c_d");
        assert_eq!(entry_suffix(None, &[Some("x/y"), Some("z")], 0), "x_y_z");
    }

    #[test]
    fn dedup_rule() {
        let raw: Vec<String> = ["a", "a", "b", "a", "b"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(dedup_suffixes(&raw), ["a", "a_1", "b", "a_2", "b_1"]);
        let raw: Vec<String> = ["random-mm"; 6].iter().map(|s| s.to_string()).collect();
        assert_eq!(
            dedup_suffixes(&raw),
            [
                "random-mm",
                "random-mm_1",
                "random-mm_2",
                "random-mm_3",
                "random-mm_4",
                "random-mm_5"
            ]
        );
    }

    #[test]
    fn name_layout() {
        assert_eq!(
            trial_name(
                "test_qwen3_tts_base",
                "voice_clone_throughput_seed-tts",
                "c16"
            ),
            "test_qwen3_tts_base::voice_clone_throughput_seed-tts::c16"
        );
    }
}
