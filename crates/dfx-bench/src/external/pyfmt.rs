//! Python-compatible text for values that end up on the `vllm bench` command line.
//!
//! Upstream builds flags with `str(value)` and
//! `json.dumps(value, ensure_ascii=False, separators=(",", ":"))`, so numbers must print the
//! way Python prints them (`2.0` stays `2.0`, `1e-05`, `1e+16`) and objects must be compact
//! JSON with non-ASCII text kept as is.

use serde_json::{Number, Value};

/// Python's `repr(float)` (= `str(float)`): the shortest digits that round-trip, in
/// positional notation with at least one fractional digit when the decimal exponent is in
/// `-5 < e < 16`, else scientific notation with a signed, at least two-digit exponent.
pub fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Rust's `{:e}` gives the same shortest round-trip digits as Python's repr.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` always has an exponent");
    let exp: i32 = exp.parse().expect("`{:e}` exponent is an integer");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if x < 0.0 { "-" } else { "" };
    let body = if (-5 < exp) && (exp < 16) {
        positional(&digits, exp)
    } else {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{first}{frac}e{esign}{:02}", exp.abs())
    };
    format!("{sign}{body}")
}

/// `digits` (no dot, first digit non-zero) times 10^(exp - len + 1), written positionally.
fn positional(digits: &str, exp: i32) -> String {
    let point = exp + 1; // digits before the decimal point
    if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    }
}

/// Python's `str(n)` for a JSON number: integers as written, floats via [`float_repr`].
pub fn number_str(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        u.to_string()
    } else {
        float_repr(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// `json.dumps(value, ensure_ascii=False, separators=(",", ":"))`: key order kept, no
/// spaces, non-ASCII characters unescaped, floats as Python prints them.
pub fn compact_json(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

/// `json.dumps(value, separators=(",", ":"))` (`ensure_ascii` left at its default, true):
/// like [`compact_json`] with every non-ASCII character escaped as `\uXXXX` (surrogate
/// pairs beyond the BMP), as upstream's diffusion runner renders objects and lists.
pub fn compact_json_ascii(value: &Value) -> String {
    let mut out = String::new();
    for c in compact_json(value).chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut buf = [0u16; 2];
            for unit in c.encode_utf16(&mut buf) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number_str(n)),
        Value::String(s) => write_str(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(k, out);
                out.push(':');
                write_json(v, out);
            }
            out.push('}');
        }
    }
}

/// Python's JSON string escaping with `ensure_ascii=False` (`"`, `\`, `\n`, `\r`, `\t`,
/// `\b`, `\f`, other control characters as `\u00xx`), which is serde_json's as well.
fn write_str(s: &str, out: &mut String) {
    out.push_str(&serde_json::to_string(s).expect("a string always serialises"));
}

#[cfg(test)]
mod tests {
    #[test]
    fn ascii_json_escapes_like_python() {
        let v = serde_json::json!({"é": ["😀", 1.0, "a\"b"]});
        assert_eq!(
            super::compact_json_ascii(&v),
            r#"{"\u00e9":["\ud83d\ude00",1.0,"a\"b"]}"#
        );
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_like_python_repr() {
        let cases = [
            (0.1, "0.1"),
            (2.0, "2.0"),
            (100.0, "100.0"),
            (0.34, "0.34"),
            (1.5, "1.5"),
            (-2.5, "-2.5"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (0.000123, "0.000123"),
            (0.0000123, "1.23e-05"),
            (1e15, "1000000000000000.0"),
            (1234567890123456.0, "1234567890123456.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (1e22, "1e+22"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (0.1 + 0.2, "0.30000000000000004"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (f64::INFINITY, "inf"),
        ];
        for (x, want) in cases {
            assert_eq!(float_repr(x), want, "repr({x:?})");
        }
    }

    #[test]
    fn numbers_keep_int_or_float_nature_of_the_json_text() {
        let v: Value = serde_json::from_str("[100, 2.0, 0.1, -3, 1e2]").unwrap();
        let got: Vec<String> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|n| number_str(n.as_number().unwrap()))
            .collect();
        // Python: json.loads("1e2") is the float 100.0.
        assert_eq!(got, ["100", "2.0", "0.1", "-3", "100.0"]);
    }

    #[test]
    fn compact_json_matches_python_dumps_with_compact_separators() {
        let v: Value = serde_json::from_str(
            r#"{"(256, 256, 1)": 0.5, "(720, 1280, 2)": 0.5, "n": 1.0, "m": [1, "text"],
                "voice": "Vivian", "zh": "你好", "q": "a\"b\\c\nd\u0001", "x": null, "t": true}"#,
        )
        .unwrap();
        assert_eq!(
            compact_json(&v),
            r#"{"(256, 256, 1)":0.5,"(720, 1280, 2)":0.5,"n":1.0,"m":[1,"text"],"voice":"Vivian","zh":"你好","q":"a\"b\\c\nd\u0001","x":null,"t":true}"#
        );
        assert_eq!(
            compact_json(&json!({"modalities": ["text"]})),
            r#"{"modalities":["text"]}"#
        );
    }
}
