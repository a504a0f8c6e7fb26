//! Number formatting and escaping shared by the markdown, HTML, XML and terminal output.

/// A metric value with a precision that suits its size: `4777`, `647.1`, `24.23`,
/// `0.1591`. Non-finite values print as `inf` / `nan`.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "nan".into()
        } else {
            "inf".into()
        };
    }
    if x.fract() == 0.0 && x.abs() < 1e15 {
        return format!("{x:.0}");
    }
    let a = x.abs();
    let s = if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    };
    if s == "-0" { "0".into() } else { s }
}

/// An axis tick: like [`num`] without trailing zeros (`0.8`, not `0.8000`).
pub fn tick(x: f64) -> String {
    let s = num(x);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A signed relative change as a percentage: `+17.8 %`, `-3.0 %`.
pub fn pct(rel: f64) -> String {
    if !rel.is_finite() {
        return "n/a".into();
    }
    let p = rel * 100.0;
    let p = if p.abs() < 0.05 { 0.0 } else { p };
    format!("{p:+.1} %")
}

/// Replaces control characters other than tab and newline with U+FFFD, so text from
/// servers cannot garble a terminal or a markdown file.
pub fn visible(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' && c != '\r' {
                '\u{FFFD}'
            } else {
                c
            }
        })
        .collect()
}

/// Escapes text for a markdown table cell (pipes, newlines, HTML-significant `<`).
pub fn md_cell(s: &str) -> String {
    visible(s)
        .replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('<', "&lt;")
        .replace(['\n', '\r'], " ")
}

/// Escapes text for HTML element content and attribute values.
pub fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && !matches!(c, '\n' | '\t' | '\r') => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Escapes text for XML 1.0 content and attribute values. Characters XML 1.0 cannot
/// carry at all (most C0 controls, lone surrogates cannot occur in Rust strings) become
/// U+FFFD; tabs and newlines in attributes become character references so parsers do
/// not normalise them away.
pub fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// A percentage flag that [`parse_pct`] refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PctError {
    /// Not a number, with or without `%`.
    #[error("`{0}` is not a percentage (accepted: e.g. 25% or 25)")]
    NotANumber(String),
    /// Outside 0 % to 1000 %.
    #[error("`{0}` is out of range (accepted: 0% to 1000%)")]
    OutOfRange(String),
}

/// Parses a percentage flag (`25%` or `25`) into a fraction (`0.25`).
pub fn parse_pct(s: &str) -> Result<f64, PctError> {
    let t = s.trim();
    let body = t.strip_suffix('%').unwrap_or(t).trim();
    let v: f64 = body
        .parse()
        .map_err(|_| PctError::NotANumber(s.to_string()))?;
    if !v.is_finite() || !(0.0..=1000.0).contains(&v) {
        return Err(PctError::OutOfRange(s.to_string()));
    }
    Ok(v / 100.0)
}

/// A left-aligned plain-text table: the header, a rule of dashes, then the rows, columns
/// two spaces apart and as wide as their widest cell (trailing blanks trimmed).
pub(crate) fn text_table<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> String {
    let mut w = header.map(|h| h.chars().count());
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            w[i] = w[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[String]| {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{s:<width$}", width = w[i]))
            .collect();
        out.push_str(parts.join("  ").trim_end());
        out.push('\n');
    };
    line(&header.map(String::from));
    line(&w.map(|n| "-".repeat(n)));
    for row in rows {
        line(row);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_useful_precision() {
        assert_eq!(num(4777.2714), "4777");
        assert_eq!(num(647.1272), "647.1");
        assert_eq!(num(24.2296), "24.23");
        assert_eq!(num(0.1591), "0.1591");
        assert_eq!(num(128.0), "128");
        assert_eq!(num(f64::INFINITY), "inf");
        assert_eq!(pct(0.178), "+17.8 %");
        assert_eq!(pct(-0.03), "-3.0 %");
    }

    #[test]
    fn xml_escapes_everything_unsafe() {
        assert_eq!(
            xml("a<b>&\"c'\u{1}\n"),
            "a&lt;b&gt;&amp;&quot;c&apos;\u{FFFD}&#10;"
        );
    }

    #[test]
    fn percentages_parse_with_or_without_sign() {
        assert_eq!(parse_pct("25%").unwrap(), 0.25);
        assert_eq!(parse_pct(" 5 ").unwrap(), 0.05);
        assert!(
            parse_pct("abc")
                .unwrap_err()
                .to_string()
                .contains("accepted")
        );
        assert!(parse_pct("-5%").is_err());
    }
}
