//! A strict reader for the JUnit files the tests check: parses with quick-xml (end
//! names checked, every entity resolved or rejected), checks XML 1.0 characters and the
//! JUnit element structure, and returns the test cases.

#![allow(dead_code)]

use quick_xml::Reader;
use quick_xml::XmlVersion;
use quick_xml::events::{BytesStart, Event};

#[derive(Debug, Default, Clone)]
pub(crate) struct Case {
    pub name: String,
    pub classname: String,
    pub properties: Vec<(String, String)>,
    pub failure: Option<(String, String)>,
    pub skipped: Option<String>,
    pub system_out: Option<String>,
}

#[derive(Debug, Default)]
pub(crate) struct Junit {
    pub root_attrs: Vec<(String, String)>,
    pub suites: Vec<Vec<(String, String)>>,
    pub cases: Vec<Case>,
}

impl Junit {
    pub(crate) fn root(&self, k: &str) -> Option<&str> {
        self.root_attrs
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }
    pub(crate) fn case(&self, name: &str) -> &Case {
        self.cases
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no testcase {name}"))
    }
}

impl Case {
    pub(crate) fn prop(&self, k: &str) -> Option<&str> {
        self.properties
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }
}

fn attrs(e: &BytesStart) -> Vec<(String, String)> {
    e.attributes()
        .map(|a| {
            let a = a.expect("well-formed attribute");
            let k = a.key.as_ref().to_string();
            let v = a
                .normalized_value(XmlVersion::Implicit1_0)
                .expect("attribute value with valid entities");
            (k, v.into_owned())
        })
        .collect()
}

fn get(a: &[(String, String)], k: &str) -> String {
    a.iter()
        .find(|(n, _)| n == k)
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

/// Parses `text` as JUnit XML, panicking with a clear message on anything invalid.
pub(crate) fn parse(text: &str) -> Junit {
    for (i, c) in text.chars().enumerate() {
        let ok =
            matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && c != '\u{FFFE}' && c != '\u{FFFF}');
        assert!(ok, "character {c:?} at {i} is not allowed in XML 1.0");
    }
    assert!(text.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"));
    let mut r = Reader::from_str(text);
    r.config_mut().check_end_names = true;
    let mut j = Junit::default();
    let mut stack: Vec<String> = Vec::new();
    let mut text_buf = String::new();
    loop {
        let ev = r
            .read_event()
            .unwrap_or_else(|e| panic!("invalid XML at {}: {e}", r.buffer_position()));
        match ev {
            Event::Start(e) => {
                let name = e.name().as_ref().to_string();
                open(&mut j, &stack, &name, &attrs(&e));
                stack.push(name);
                text_buf.clear();
            }
            Event::Empty(e) => {
                let name = e.name().as_ref().to_string();
                open(&mut j, &stack, &name, &attrs(&e));
            }
            Event::Text(t) => text_buf.push_str(&t),
            Event::GeneralRef(r) => {
                if r.is_char_ref() {
                    text_buf.push(r.resolve_char_ref().unwrap().unwrap());
                } else {
                    let s = match &*r {
                        "lt" => '<',
                        "gt" => '>',
                        "amp" => '&',
                        "quot" => '"',
                        "apos" => '\'',
                        other => panic!("undefined entity &{other};"),
                    };
                    text_buf.push(s);
                }
            }
            Event::End(e) => {
                let name = e.name().as_ref().to_string();
                assert_eq!(stack.pop().as_deref(), Some(name.as_str()));
                let case = j.cases.last_mut();
                match (name.as_str(), case) {
                    ("failure", Some(c)) => c.failure.as_mut().unwrap().1 = text_buf.clone(),
                    ("system-out", Some(c)) => c.system_out = Some(text_buf.clone()),
                    _ => {}
                }
                text_buf.clear();
            }
            Event::Decl(_) => {}
            Event::Eof => break,
            other => panic!("unexpected XML event {other:?}"),
        }
    }
    assert!(stack.is_empty(), "unclosed elements {stack:?}");
    j
}

fn open(j: &mut Junit, stack: &[String], name: &str, a: &[(String, String)]) {
    let parent = stack.last().map(String::as_str).unwrap_or("");
    let allowed = match name {
        "testsuites" => parent.is_empty(),
        "testsuite" => parent == "testsuites",
        "properties" => parent == "testsuite" || parent == "testcase",
        "property" => parent == "properties",
        "testcase" => parent == "testsuite",
        "failure" | "skipped" | "system-out" | "error" => parent == "testcase",
        _ => false,
    };
    assert!(allowed, "<{name}> not allowed inside <{parent}>");
    match name {
        "testsuites" => j.root_attrs = a.to_vec(),
        "testsuite" => j.suites.push(a.to_vec()),
        "testcase" => j.cases.push(Case {
            name: get(a, "name"),
            classname: get(a, "classname"),
            ..Case::default()
        }),
        "property" if stack.len() >= 2 && stack[stack.len() - 2] == "testcase" => {
            j.cases
                .last_mut()
                .unwrap()
                .properties
                .push((get(a, "name"), get(a, "value")));
        }
        "failure" => j.cases.last_mut().unwrap().failure = Some((get(a, "message"), String::new())),
        "skipped" => j.cases.last_mut().unwrap().skipped = Some(get(a, "message")),
        _ => {}
    }
}
