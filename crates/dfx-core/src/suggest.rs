//! "Closest names" for messages about a name the suite does not know (a config key, a
//! hardware label, a metric): the known names nearest by Damerau-Levenshtein distance,
//! compared case-insensitively with `-` and `_` alike.

/// How many names a suggestion lists at most.
const SHOWN: usize = 3;

/// The known names closest to `word`, best first: those within a distance of a third of
/// the word's length (at least 2), then any that start with or contain the word; at most
/// three. Empty when nothing is close.
pub fn closest<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let w = fold(word);
    let limit = (w.chars().count() / 3).max(2);
    // Names that extend the word (or that it extends) first, then by distance.
    let mut scored: Vec<(bool, usize, &'a str)> = known
        .into_iter()
        .filter_map(|k| {
            let f = fold(k);
            let d = strsim::damerau_levenshtein(&w, &f);
            let prefix = w.len() >= 3 && (f.starts_with(&w) || w.starts_with(&f));
            let related = prefix || (w.len() >= 3 && (f.contains(&w) || w.contains(&f)));
            (d <= limit || related).then_some((!prefix, d, k))
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.2 == b.2);
    scored.into_iter().take(SHOWN).map(|(_, _, k)| k).collect()
}

/// `closest: a, b, c` for an error's accepted part, or `fallback` when nothing is close.
pub fn hint<'a>(word: &str, known: impl IntoIterator<Item = &'a str>, fallback: &str) -> String {
    let near = closest(word, known);
    if near.is_empty() {
        fallback.to_string()
    } else {
        format!("closest: {}", near.join(", "))
    }
}

fn fold(s: &str) -> String {
    s.to_ascii_lowercase().replace('-', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_their_names() {
        let keys = ["server_params", "benchmark_params", "test_name", "mark"];
        assert_eq!(closest("sever_params", keys), ["server_params"]);
        assert_eq!(closest("test-name", keys), ["test_name"]);
        assert_eq!(closest("markk", keys), ["mark"]);
        let labels = ["H20", "H200", "H100", "A100", "SIM"];
        assert_eq!(closest("H2O", labels)[0], "H20");
    }

    #[test]
    fn nothing_close_is_nothing() {
        assert!(closest("completely_unrelated", ["mark", "name"]).is_empty());
        assert_eq!(hint("zzzzzz", ["mark"], "see docs"), "see docs");
        assert_eq!(hint("mrk", ["mark"], "x"), "closest: mark");
    }

    #[test]
    fn at_most_three_best_first() {
        let near = closest("ab", ["ab", "abc", "abd", "abe", "abf"]);
        assert_eq!(near.len(), 3);
        assert_eq!(near[0], "ab");
    }
}
