//! Python-compatible text for values that end up on the `vllm bench` command line.
//!
//! Upstream builds flags with `str(value)` and
//! `json.dumps(value, ensure_ascii=False, separators=(",", ":"))`, so numbers must print the
//! way Python prints them (`2.0` stays `2.0`, `1e-05`, `1e+16`) and objects must be compact
//! JSON with non-ASCII text kept as is.

use dfx_core::plan::python_float_str;
use serde_json::{Number, Value};

/// Python's `str(n)` for a JSON number: integers as written, floats via
/// [`python_float_str`].
pub(super) fn number_str(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        u.to_string()
    } else {
        python_float_str(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// `json.dumps(value, ensure_ascii=False, separators=(",", ":"))`: key order kept, no
/// spaces, non-ASCII characters unescaped, floats as Python prints them.
pub(super) fn compact_json(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

/// `json.dumps(value, separators=(",", ":"))` (`ensure_ascii` left at its default, true):
/// like [`compact_json`] with every non-ASCII character escaped as `\uXXXX` (surrogate
/// pairs beyond the BMP), as upstream's diffusion runner renders objects and lists.
pub(super) fn compact_json_ascii(value: &Value) -> String {
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
