//! Case marks: the `mark` array (selection tags and the `hardware_marks` object) and the
//! pytest-like `--mark` expression that selects cases by tag
//! (`tts`, `not slow`, `tts and not slow`, `omni or tts`, parentheses).

use serde_json::Value;

use crate::diag::{Ctx, Errs, json_type};

/// The marks of one case.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CaseMarks {
    /// String marks (selection tags), in file order.
    pub tags: Vec<String>,
    /// `hardware_marks.res` values (`H100`, `A3`), in file order.
    pub hardware: Vec<String>,
    /// `hardware_marks.num_cards`.
    pub num_cards: Option<u64>,
}

const MARK_ACCEPTED: &str = r#"a list of tag strings plus at most one {"hardware_marks": {"res": {"cuda": "H100"}, "num_cards": 1}}"#;

/// Parses a case's `mark` field; problems are pushed to `errs`.
pub(crate) fn parse_mark_field(ctx: &Ctx<'_>, v: Option<&Value>, errs: &mut Errs) -> CaseMarks {
    let mut out = CaseMarks::default();
    let items = match v {
        None | Some(Value::Null) => return out,
        Some(Value::Array(items)) => items,
        Some(other) => {
            errs.push(ctx.err(
                "mark",
                format!("wrong type: got {}", json_type(other)),
                MARK_ACCEPTED,
            ));
            return out;
        }
    };
    let mut hw_seen = false;
    for (i, item) in items.iter().enumerate() {
        let key = format!("mark[{i}]");
        match item {
            Value::String(s) if !s.trim().is_empty() => out.tags.push(s.trim().to_string()),
            Value::String(_) => errs.push(ctx.err(&key, "empty mark name", MARK_ACCEPTED)),
            Value::Object(obj) => {
                let unknown: Vec<&str> = obj
                    .keys()
                    .map(String::as_str)
                    .filter(|k| *k != "hardware_marks")
                    .collect();
                if !unknown.is_empty() {
                    errs.push(ctx.err(
                        &key,
                        format!("unknown key(s) {}", unknown.join(", ")),
                        MARK_ACCEPTED,
                    ));
                }
                if let Some(hw) = obj.get("hardware_marks") {
                    if hw_seen {
                        errs.push(ctx.err(
                            &key,
                            "more than one hardware_marks object",
                            MARK_ACCEPTED,
                        ));
                    }
                    hw_seen = true;
                    parse_hardware_marks(ctx, &format!("{key}.hardware_marks"), hw, &mut out, errs);
                }
            }
            other => errs.push(ctx.err(
                &key,
                format!("wrong type: got {}", json_type(other)),
                MARK_ACCEPTED,
            )),
        }
    }
    out
}

fn parse_hardware_marks(
    ctx: &Ctx<'_>,
    key: &str,
    hw: &Value,
    out: &mut CaseMarks,
    errs: &mut Errs,
) {
    let accepted = r#"{"res": {"<platform>": "<label>", ...}, "num_cards": <int>}"#;
    let Value::Object(hw) = hw else {
        errs.push(ctx.err(key, format!("wrong type: got {}", json_type(hw)), accepted));
        return;
    };
    match hw.get("res") {
        None | Some(Value::Null) => {}
        Some(Value::Object(res)) => {
            // A platform names one label or (upstream since 2026) a list of them:
            // `{"cuda": ["H100", "B200"]}` runs on either.
            let accepted = "a hardware label string such as \"H100\", or a list of them";
            for (platform, label) in res {
                let at = format!("{key}.res.{platform}");
                match label {
                    Value::String(s) => out.hardware.push(s.clone()),
                    Value::Array(items) if !items.is_empty() => {
                        for (i, item) in items.iter().enumerate() {
                            match item {
                                Value::String(s) => out.hardware.push(s.clone()),
                                other => errs.push(ctx.err(
                                    &format!("{at}[{i}]"),
                                    format!("wrong type: got {}", json_type(other)),
                                    accepted,
                                )),
                            }
                        }
                    }
                    other => errs.push(ctx.err(
                        &at,
                        format!("wrong type: got {}", json_type(other)),
                        accepted,
                    )),
                }
            }
        }
        Some(other) => errs.push(ctx.err(
            &format!("{key}.res"),
            format!("wrong type: got {}", json_type(other)),
            accepted,
        )),
    }
    match hw.get("num_cards") {
        None | Some(Value::Null) => {}
        Some(v) => match v.as_u64() {
            Some(n) => out.num_cards = Some(n),
            None => errs.push(ctx.err(
                &format!("{key}.num_cards"),
                format!("invalid value {v}"),
                "a non-negative integer",
            )),
        },
    }
}

/// A parsed `--mark` expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarkExpr {
    /// A bare mark name: true when the entry's tags include it.
    Tag(String),
    /// `not e`.
    Not(Box<MarkExpr>),
    /// `a and b`.
    And(Box<MarkExpr>, Box<MarkExpr>),
    /// `a or b`.
    Or(Box<MarkExpr>, Box<MarkExpr>),
}

/// Why a `-m` mark expression does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MarkExprError {
    /// Nothing but blanks.
    #[error("empty expression")]
    Empty,
    /// A character that is neither part of a tag, a parenthesis nor a blank.
    #[error("unexpected character `{0}`")]
    Character(char),
    /// A token after a complete expression.
    #[error("unexpected `{0}` after a complete expression")]
    Trailing(String),
    /// The expression ends where a tag or `(` is needed.
    #[error("expected a tag or `(`, found the end of the expression")]
    EndInsteadOfTag,
    /// An operator or `)` where a tag or `(` is needed.
    #[error("expected a tag or `(`, found `{0}`")]
    TokenInsteadOfTag(String),
    /// An unclosed `(`.
    #[error("missing `)`")]
    MissingClose,
}

impl MarkExpr {
    /// Parses `tts and not (slow or full_model)`; `not` binds tightest, then `and`, then
    /// `or`, like pytest's `-m`.
    pub fn parse(src: &str) -> Result<MarkExpr, MarkExprError> {
        let tokens = tokenize(src)?;
        if tokens.is_empty() {
            return Err(MarkExprError::Empty);
        }
        let mut p = Parser { tokens, pos: 0 };
        let e = p.or()?;
        match p.peek() {
            None => Ok(e),
            Some(t) => Err(MarkExprError::Trailing(t.to_string())),
        }
    }

    /// Whether a case with `tags` is selected.
    pub fn matches(&self, tags: &[String]) -> bool {
        match self {
            MarkExpr::Tag(t) => tags.iter().any(|x| x == t),
            MarkExpr::Not(e) => !e.matches(tags),
            MarkExpr::And(a, b) => a.matches(tags) && b.matches(tags),
            MarkExpr::Or(a, b) => a.matches(tags) || b.matches(tags),
        }
    }

    /// Every tag the expression names, in order of appearance.
    pub fn tags(&self) -> Vec<&str> {
        match self {
            MarkExpr::Tag(t) => vec![t.as_str()],
            MarkExpr::Not(e) => e.tags(),
            MarkExpr::And(a, b) | MarkExpr::Or(a, b) => {
                let mut v = a.tags();
                v.extend(b.tags());
                v
            }
        }
    }
}

fn tokenize(src: &str) -> Result<Vec<String>, MarkExprError> {
    let mut tokens = Vec::new();
    let mut cur = String::new();
    for c in src.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
            cur.push(c);
            continue;
        }
        if !cur.is_empty() {
            tokens.push(std::mem::take(&mut cur));
        }
        match c {
            '(' | ')' => tokens.push(c.to_string()),
            c if c.is_whitespace() => {}
            c => return Err(MarkExprError::Character(c)),
        }
    }
    if !cur.is_empty() {
        tokens.push(cur);
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<String>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&str> {
        self.tokens.get(self.pos).map(String::as_str)
    }

    fn eat(&mut self, t: &str) -> bool {
        let hit = self.peek() == Some(t);
        self.pos += usize::from(hit);
        hit
    }

    fn or(&mut self) -> Result<MarkExpr, MarkExprError> {
        let mut e = self.and()?;
        while self.eat("or") {
            e = MarkExpr::Or(Box::new(e), Box::new(self.and()?));
        }
        Ok(e)
    }

    fn and(&mut self) -> Result<MarkExpr, MarkExprError> {
        let mut e = self.not()?;
        while self.eat("and") {
            e = MarkExpr::And(Box::new(e), Box::new(self.not()?));
        }
        Ok(e)
    }

    fn not(&mut self) -> Result<MarkExpr, MarkExprError> {
        if self.eat("not") {
            return Ok(MarkExpr::Not(Box::new(self.not()?)));
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<MarkExpr, MarkExprError> {
        let Some(t) = self.peek().map(String::from) else {
            return Err(MarkExprError::EndInsteadOfTag);
        };
        self.pos += 1;
        match t.as_str() {
            "(" => {
                let e = self.or()?;
                if self.eat(")") {
                    Ok(e)
                } else {
                    Err(MarkExprError::MissingClose)
                }
            }
            ")" | "and" | "or" => Err(MarkExprError::TokenInsteadOfTag(t)),
            _ => Ok(MarkExpr::Tag(t)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sel(expr: &str, tags: &[&str]) -> bool {
        let tags: Vec<String> = tags.iter().map(|s| s.to_string()).collect();
        MarkExpr::parse(expr).unwrap().matches(&tags)
    }

    #[test]
    fn expressions_select_like_pytest() {
        assert!(sel("tts", &["full_model", "tts"]));
        assert!(!sel("tts", &["omni"]));
        assert!(sel("not slow", &["omni"]));
        assert!(!sel("not slow", &["omni", "slow"]));
        assert!(sel("tts and not slow", &["tts"]));
        assert!(!sel("tts and not slow", &["tts", "slow"]));
        assert!(sel("omni or tts", &["omni"]));
        assert!(sel("omni or tts", &["tts"]));
        assert!(!sel("omni or tts", &["full_model"]));
        // and binds tighter than or
        assert!(sel("omni or tts and slow", &["omni"]));
        assert!(!sel("(omni or tts) and slow", &["omni"]));
        assert!(sel("not (omni or tts)", &["full_model"]));
        assert!(sel("not not tts", &["tts"]));
        assert!(sel("  ( tts )  ", &["tts"]));
    }

    #[test]
    fn expression_tags_and_syntax_errors() {
        let e = MarkExpr::parse("tts and not (slow or omni)").unwrap();
        assert_eq!(e.tags(), ["tts", "slow", "omni"]);
        for bad in [
            "",
            "   ",
            "tts and",
            "(tts",
            "tts)",
            "and tts",
            "tts omni",
            "tts && omni",
            "not",
            "()",
        ] {
            assert!(MarkExpr::parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn mark_field() {
        let file = std::path::PathBuf::from("f.json");
        let ctx = Ctx::new(&file).test(Some("t"));
        let mut errs = Vec::new();
        let v = json!([{"hardware_marks": {"res": {"cuda": "H100", "npu": "A3"}, "num_cards": 2}}, "full_model", "tts"]);
        let m = parse_mark_field(&ctx, Some(&v), &mut errs);
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(m.tags, ["full_model", "tts"]);
        assert_eq!(m.hardware, ["H100", "A3"]);
        assert_eq!(m.num_cards, Some(2));

        let listed = json!([{"hardware_marks": {"res": {"cuda": ["H100", "B200"], "npu": "A3"}}}]);
        let m = parse_mark_field(&ctx, Some(&listed), &mut errs);
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(m.hardware, ["H100", "B200", "A3"]);
        let v = json!(["", 3, {"hardware_marks": {"res": {"cuda": 1}}}, {"hardware_marks": {}}, {"x": 1}]);
        let m = parse_mark_field(&ctx, Some(&v), &mut errs);
        let msgs: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        assert_eq!(msgs.len(), 5, "{msgs:#?}");
        assert!(msgs[0].contains("mark[0]") && msgs[0].contains("empty"));
        assert!(msgs[1].contains("mark[1]") && msgs[1].contains("a number"));
        assert!(msgs[2].contains("mark[2].hardware_marks.res.cuda"));
        assert!(msgs[3].contains("more than one hardware_marks"));
        assert!(msgs[4].contains("unknown key(s) x"));
        assert!(m.tags.is_empty());

        errs.clear();
        parse_mark_field(&ctx, Some(&json!("tts")), &mut errs);
        assert_eq!(errs.len(), 1);
    }
}
