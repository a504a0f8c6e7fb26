//! The hot server event, `response.output_audio.delta`, read straight from its text: the
//! few fields the client uses, its base64 borrowed from the message, no
//! `serde_json::Value` tree (whose copy of every delta's text, and its maps, were a fifth
//! of a realtime session's instructions). Only an event this reading takes exactly as the
//! `Value` path would is taken; anything else (another type, a field this reading leaves
//! to that path, a duplicate `type` that could change it) goes to the `Value` path, which
//! stays the reference.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// The fields of an audio delta the client reads, as the `Value` path reads them (a field
/// of another JSON type is absent).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct AudioDelta<'a> {
    /// `server_event_seq`.
    pub seq: Option<u64>,
    /// `response_id`.
    pub response_id: Option<Cow<'a, str>>,
    /// `delta`, the base64 audio.
    pub delta: Option<Cow<'a, str>>,
    /// `sample_rate_hz`.
    pub sample_rate_hz: Option<u64>,
    /// `metadata.audio_duration_ms`.
    pub meta_ms: Option<f64>,
}

/// `text` as an audio delta, or `None` when the `Value` path must read it.
pub(crate) fn audio_delta(text: &str) -> Option<AudioDelta<'_>> {
    serde_json::from_str::<Quick<'_>>(text).ok().map(|q| q.0)
}

/// The error that sends an event to the `Value` path.
fn not_quick<E: de::Error>() -> E {
    E::custom("not a plain audio delta")
}

struct Quick<'a>(AudioDelta<'a>);

impl<'de> Deserialize<'de> for Quick<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(QuickVisitor)
    }
}

struct QuickVisitor;

impl<'de> Visitor<'de> for QuickVisitor {
    type Value = Quick<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an audio delta event")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Quick<'de>, A::Error> {
        let mut d = AudioDelta::default();
        let mut typed = false;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Type => {
                    // A second `type` could name another event: the `Value` path decides.
                    let t = map.next_value::<Lenient<'de>>()?;
                    if typed || !matches!(&t, Lenient::Str(s) if s == "response.output_audio.delta")
                    {
                        return Err(not_quick());
                    }
                    typed = true;
                }
                Key::Seq => d.seq = map.next_value::<Lenient<'de>>()?.u64(),
                Key::ResponseId => d.response_id = map.next_value::<Lenient<'de>>()?.str(),
                Key::Delta => d.delta = map.next_value::<Lenient<'de>>()?.str(),
                Key::Rate => d.sample_rate_hz = map.next_value::<Lenient<'de>>()?.u64(),
                Key::Metadata => d.meta_ms = map.next_value::<Metadata>()?.0,
                Key::Elsewhere => return Err(not_quick()),
                Key::Other => {
                    map.next_value::<Lenient<'de>>()?;
                }
            }
        }
        if typed {
            Ok(Quick(d))
        } else {
            Err(not_quick())
        }
    }
}

/// The top-level keys this reading knows.
enum Key {
    Type,
    Seq,
    ResponseId,
    Delta,
    Rate,
    Metadata,
    /// `response` (another place of the response id), `response_request_metrics` and
    /// `vllm_omni` (the server's timing): left to the `Value` path.
    Elsewhere,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, k: &str) -> Result<Key, E> {
                Ok(match k {
                    "type" => Key::Type,
                    "server_event_seq" => Key::Seq,
                    "response_id" => Key::ResponseId,
                    "delta" => Key::Delta,
                    "sample_rate_hz" => Key::Rate,
                    "metadata" => Key::Metadata,
                    "response" | "response_request_metrics" | "vllm_omni" => Key::Elsewhere,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_str(V)
    }
}

/// `metadata.audio_duration_ms` as a number (the last one when repeated); a `metadata`
/// holding `response_request_metrics` goes to the `Value` path.
struct Metadata(Option<f64>);

impl<'de> Deserialize<'de> for Metadata {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Lenient::deserialize_with(d, true)? {
            Lenient::Meta(ms) => Ok(Metadata(ms)),
            _ => Ok(Metadata(None)),
        }
    }
}

/// Any JSON value, parsed as `serde_json::Value` would parse it (so exactly the texts it
/// refuses are refused) but kept only when it is a string or a number.
enum Lenient<'a> {
    Str(Cow<'a, str>),
    U64(u64),
    I64(i64),
    F64(f64),
    /// A `metadata` object's `audio_duration_ms`.
    Meta(Option<f64>),
    Other,
}

impl<'a> Lenient<'a> {
    fn str(self) -> Option<Cow<'a, str>> {
        match self {
            Lenient::Str(s) => Some(s),
            _ => None,
        }
    }

    /// `Value::as_u64`.
    fn u64(self) -> Option<u64> {
        match self {
            Lenient::U64(n) => Some(n),
            Lenient::I64(n) => u64::try_from(n).ok(),
            _ => None,
        }
    }

    /// `Value::as_f64`.
    fn f64(self) -> Option<f64> {
        match self {
            Lenient::U64(n) => Some(n as f64),
            Lenient::I64(n) => Some(n as f64),
            Lenient::F64(x) => Some(x),
            _ => None,
        }
    }

    fn deserialize_with<'de, D: Deserializer<'de>>(
        d: D,
        metadata: bool,
    ) -> Result<Lenient<'de>, D::Error> {
        d.deserialize_any(LenientVisitor { metadata })
    }
}

impl<'de> Deserialize<'de> for Lenient<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Lenient::deserialize_with(d, false)
    }
}

struct LenientVisitor {
    /// The value is `metadata`: an object's `audio_duration_ms` is kept.
    metadata: bool,
}

impl<'de> Visitor<'de> for LenientVisitor {
    type Value = Lenient<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Lenient<'de>, E> {
        Ok(Lenient::Str(Cow::Borrowed(s)))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Lenient<'de>, E> {
        Ok(Lenient::Str(Cow::Owned(s.to_string())))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Lenient<'de>, E> {
        Ok(Lenient::U64(n))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Lenient<'de>, E> {
        Ok(Lenient::I64(n))
    }
    fn visit_f64<E: de::Error>(self, x: f64) -> Result<Lenient<'de>, E> {
        Ok(Lenient::F64(x))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Lenient<'de>, E> {
        Ok(Lenient::Other)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Lenient<'de>, E> {
        Ok(Lenient::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Lenient<'de>, A::Error> {
        while seq.next_element::<Lenient<'de>>()?.is_some() {}
        Ok(Lenient::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Lenient<'de>, A::Error> {
        let mut ms = None;
        while let Some(k) = map.next_key::<Cow<'de, str>>()? {
            let v = map.next_value::<Lenient<'de>>()?;
            if self.metadata {
                match &*k {
                    "audio_duration_ms" => ms = v.f64(),
                    "response_request_metrics" => return Err(not_quick()),
                    _ => {}
                }
            }
        }
        Ok(if self.metadata {
            Lenient::Meta(ms)
        } else {
            Lenient::Other
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// The fields as the `Value` path reads them (`session.rs`, `protocol.rs`).
    fn by_value(text: &str) -> Option<AudioDelta<'static>> {
        let v: Value = serde_json::from_str(text).ok()?;
        let s = |x: Option<&Value>| x.and_then(Value::as_str).map(|s| Cow::Owned(s.to_string()));
        Some(AudioDelta {
            seq: v.get("server_event_seq").and_then(Value::as_u64),
            response_id: s(v.get("response_id")),
            delta: s(v.get("delta")),
            sample_rate_hz: v.get("sample_rate_hz").and_then(Value::as_u64),
            meta_ms: v
                .get("metadata")
                .and_then(|m| m.get("audio_duration_ms"))
                .and_then(Value::as_f64),
        })
    }

    #[test]
    fn reads_a_delta_as_the_value_path_does() {
        let plain = json!({"type": "response.output_audio.delta", "response_id": "r1",
            "delta": "AAAA", "sample_rate_hz": 24000, "server_event_seq": 7,
            "metadata": {"audio_duration_ms": 100, "x": [1, {"y": null}]}, "extra": true});
        let texts = [
            plain.to_string(),
            r#"{"delta":"AA\u0041A","type":"response.output_audio.delta","response_id":"r\"1","metadata":{"audio_duration_ms":12.5,"audio_duration_ms":-3}}"#.into(),
            r#"{"type":"response.output_audio.delta","delta":7,"sample_rate_hz":-1,"server_event_seq":1.5,"metadata":[1],"response_id":null}"#.into(),
            r#"{"type":"response.output_audio.delta","metadata":{"audio_duration_ms":"5"},"metadata":{"audio_duration_ms":1e3}}"#.into(),
            r#" {"type":"response.output_audio.delta","sample_rate_hz":18446744073709551615} "#.into(),
        ];
        for t in &texts {
            let quick = audio_delta(t).unwrap_or_else(|| panic!("quick: {t}"));
            assert_eq!(Some(quick), by_value(t), "{t}");
        }
        let borrowed = audio_delta(&texts[0]).unwrap();
        assert!(matches!(borrowed.delta, Some(Cow::Borrowed("AAAA"))));
    }

    #[test]
    fn leaves_everything_else_to_the_value_path() {
        for t in [
            r#"{"type":"response.done","response_id":"r1"}"#,
            r#"{"response_id":"r1","delta":"AAAA"}"#,
            r#"{"type":"response.output_audio.delta","type":"error"}"#,
            r#"{"type":"response.output_audio.delta","type":"response.output_audio.delta"}"#,
            r#"{"type":"response.output_audio.delta","response":{"id":"r1"}}"#,
            r#"{"type":"response.output_audio.delta","response_request_metrics":{}}"#,
            r#"{"type":"response.output_audio.delta","vllm_omni":{}}"#,
            r#"{"type":"response.output_audio.delta","metadata":{"response_request_metrics":1}}"#,
            r#"{"type":"response.output_audio.delta","x":1e400}"#,
            r#"{"type":"response.output_audio.delta","x":"\ud800"}"#,
            r#"{"type":"response.output_audio.delta"} x"#,
            r#"["response.output_audio.delta"]"#,
            r#"{"type":"response.output_audio.delta","#,
        ] {
            assert!(audio_delta(t).is_none(), "{t}");
        }
    }
}
