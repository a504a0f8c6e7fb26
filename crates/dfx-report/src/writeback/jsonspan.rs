//! A JSON reader that keeps byte spans, so a value can be replaced or a member inserted
//! without re-serialising (and reformatting) the rest of the file.

/// A parsed JSON value and where it is in the text.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Byte offset of the first character of the value.
    pub start: usize,
    /// Byte offset just past the value.
    pub end: usize,
    /// What the value is, with its children for objects and arrays.
    pub kind: Kind,
}

/// What a node holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// `{…}`: its members in text order.
    Object(Vec<Member>),
    /// `[…]`: its elements in text order.
    Array(Vec<Node>),
    /// String, number, `true`, `false`.
    Scalar,
    /// `null`.
    Null,
}

/// One `"key": value` of an object.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// The decoded key.
    pub key: String,
    /// Byte offset of the key's opening quote.
    pub key_start: usize,
    /// The member's value.
    pub value: Node,
}

impl Node {
    /// The member `key` of an object node.
    pub fn get(&self, key: &str) -> Option<&Member> {
        match &self.kind {
            Kind::Object(m) => m.iter().find(|m| m.key == key),
            _ => None,
        }
    }

    /// Element `i` of an array node.
    pub fn at(&self, i: usize) -> Option<&Node> {
        match &self.kind {
            Kind::Array(v) => v.get(i),
            _ => None,
        }
    }

    /// Members of an object node (empty otherwise).
    pub fn members(&self) -> &[Member] {
        match &self.kind {
            Kind::Object(m) => m,
            _ => &[],
        }
    }
}

pub use crate::error::SyntaxError;

/// Parses a whole document. Errors give the byte offset and what was expected.
pub fn parse(text: &str) -> Result<Node, SyntaxError> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        text,
    };
    p.ws();
    let node = p.value(0)?;
    p.ws();
    if p.i != p.s.len() {
        return Err(p.err("end of document"));
    }
    Ok(node)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    text: &'a str,
}

const MAX_DEPTH: usize = 256;

impl Parser<'_> {
    fn err(&self, expected: &'static str) -> SyntaxError {
        let line = self.text[..self.i.min(self.text.len())]
            .matches('\n')
            .count()
            + 1;
        SyntaxError {
            expected,
            at: self.i,
            line,
            source: None,
        }
    }

    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn value(&mut self, depth: usize) -> Result<Node, SyntaxError> {
        if depth > MAX_DEPTH {
            return Err(self.err("less nesting"));
        }
        let start = self.i;
        let kind = match self.peek() {
            Some(b'{') => Kind::Object(self.object(depth)?),
            Some(b'[') => Kind::Array(self.array(depth)?),
            Some(b'"') => {
                self.string()?;
                Kind::Scalar
            }
            Some(b'n') => {
                self.literal("null")?;
                Kind::Null
            }
            Some(b't') => {
                self.literal("true")?;
                Kind::Scalar
            }
            Some(b'f') => {
                self.literal("false")?;
                Kind::Scalar
            }
            Some(b'-' | b'0'..=b'9') => {
                self.number()?;
                Kind::Scalar
            }
            _ => return Err(self.err("a JSON value")),
        };
        Ok(Node {
            start,
            end: self.i,
            kind,
        })
    }

    fn literal(&mut self, word: &'static str) -> Result<(), SyntaxError> {
        if self.s[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(())
        } else {
            Err(self.err(word))
        }
    }

    fn number(&mut self) -> Result<(), SyntaxError> {
        let start = self.i;
        while self.i < self.s.len()
            && matches!(
                self.s[self.i],
                b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'
            )
        {
            self.i += 1;
        }
        serde_json::from_str::<serde_json::Number>(&self.text[start..self.i])
            .map(|_| ())
            .map_err(|_| {
                self.i = start;
                self.err("a number")
            })
    }

    /// Skips a string and returns its decoded content.
    fn string(&mut self) -> Result<String, SyntaxError> {
        let start = self.i;
        self.i += 1;
        loop {
            match self.peek() {
                None => return Err(self.err("closing quote")),
                Some(b'"') => break,
                Some(b'\\') => self.i += 2,
                Some(_) => self.i += 1,
            }
        }
        self.i += 1;
        serde_json::from_str::<String>(&self.text[start..self.i]).map_err(|e| {
            self.i = start;
            SyntaxError {
                source: Some(e),
                ..self.err("a valid string")
            }
        })
    }

    fn object(&mut self, depth: usize) -> Result<Vec<Member>, SyntaxError> {
        self.i += 1;
        let mut members = Vec::new();
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(members);
        }
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return Err(self.err("a quoted key"));
            }
            let key_start = self.i;
            let key = self.string()?;
            self.ws();
            if self.peek() != Some(b':') {
                return Err(self.err("`:`"));
            }
            self.i += 1;
            self.ws();
            let value = self.value(depth + 1)?;
            members.push(Member {
                key,
                key_start,
                value,
            });
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(members);
                }
                _ => return Err(self.err("`,` or `}`")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Vec<Node>, SyntaxError> {
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(items);
        }
        loop {
            self.ws();
            items.push(self.value(depth + 1)?);
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(items);
                }
                _ => return Err(self.err("`,` or `]`")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_point_at_the_values() {
        let text = "{\n  \"a\\\"b\": [1, 2.5e3, null],\n  \"c\": {\"d\": true}\n}";
        let root = parse(text).unwrap();
        let a = root.get("a\"b").unwrap();
        assert_eq!(&text[a.value.start..a.value.end], "[1, 2.5e3, null]");
        assert_eq!(&text[a.key_start..a.key_start + 6], "\"a\\\"b\"");
        let d = root.get("c").unwrap().value.get("d").unwrap();
        assert_eq!(&text[d.value.start..d.value.end], "true");
        assert_eq!(
            root.get("a\"b").unwrap().value.at(2).unwrap().kind,
            Kind::Null
        );
    }

    #[test]
    fn rejects_what_json_rejects() {
        for bad in [
            "{",
            "[1,]",
            "{\"a\" 1}",
            "01x",
            "\"abc",
            "[1] 2",
            "{\"a\":tru}",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(parse("[1,]").unwrap_err().to_string().contains("byte 3"));
    }
}
