//! A small JSON reader and writer for the tool's arguments and result.
//!
//! Measured on wasm32-wasip2 with the guest profile, parsing and printing
//! with `serde_json` adds 48 KB to a component and `miniserde` 33 KB, against
//! a 45 KB floor for a component that formats text at all; the tool must stay
//! well under 100 KB. This module is a strict RFC 8259 parser of a few KB:
//! numbers are kept as their text (the tool reads none, so no float code is
//! linked), nesting is limited, and every error says where it is. Tested
//! against `serde_json` natively (`tests/json.rs`).

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

/// A JSON value. Object members keep their order and duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Json {
    Null,
    Bool(bool),
    /// The number's text as written, e.g. `-1.5e3`.
    Number(String),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

/// Deepest nesting of arrays and objects accepted.
pub const MAX_DEPTH: usize = 64;

/// Text that is not JSON, with where (line and column, from 1, in
/// characters) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub line: usize,
    pub column: usize,
    pub problem: &'static str,
}

impl Json {
    /// What kind of value this is, for messages: "a string", "an array"…
    pub fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

/// Parses `text` as one JSON value, with nothing but whitespace around it.
pub fn parse(text: &str) -> Result<Json, SyntaxError> {
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        depth: 0,
    };
    parser.whitespace();
    let value = parser.value()?;
    parser.whitespace();
    if parser.pos < parser.bytes.len() {
        return Err(parser.error("unexpected characters after the JSON value"));
    }
    Ok(value)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn error(&self, problem: &'static str) -> SyntaxError {
        let before = &self.text[..self.pos.min(self.text.len())];
        let line_start = before.rfind('\n').map_or(0, |at| at + 1);
        SyntaxError {
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
            problem,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8, problem: &'static str) -> Result<(), SyntaxError> {
        if self.peek() != Some(byte) {
            return Err(self.error(problem));
        }
        self.pos += 1;
        Ok(())
    }

    fn value(&mut self) -> Result<Json, SyntaxError> {
        match self.peek() {
            Some(b'{') => self.nested(Self::object),
            Some(b'[') => self.nested(Self::array),
            Some(b'"') => self.string().map(Json::String),
            Some(b't') => self.literal("true", Json::Bool(true)),
            Some(b'f') => self.literal("false", Json::Bool(false)),
            Some(b'n') => self.literal("null", Json::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.error("expected a JSON value")),
            None => Err(self.error("the text ends where a value should be")),
        }
    }

    fn nested(
        &mut self,
        read: fn(&mut Self) -> Result<Json, SyntaxError>,
    ) -> Result<Json, SyntaxError> {
        if self.depth == MAX_DEPTH {
            return Err(self.error("nested more than 64 levels deep"));
        }
        self.depth += 1;
        let value = read(self);
        self.depth -= 1;
        value
    }

    fn literal(&mut self, word: &'static str, value: Json) -> Result<Json, SyntaxError> {
        if !self.bytes[self.pos..].starts_with(word.as_bytes()) {
            return Err(self.error("expected a JSON value"));
        }
        self.pos += word.len();
        Ok(value)
    }

    fn object(&mut self) -> Result<Json, SyntaxError> {
        self.pos += 1;
        let mut members = Vec::new();
        self.whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Json::Object(members));
        }
        loop {
            self.whitespace();
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a key in double quotes"));
            }
            let key = self.string()?;
            self.whitespace();
            self.expect(b':', "expected `:` after a key")?;
            self.whitespace();
            members.push((key, self.value()?));
            self.whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Json::Object(members));
                }
                _ => return Err(self.error("expected `,` or `}` in an object")),
            }
        }
    }

    fn array(&mut self) -> Result<Json, SyntaxError> {
        self.pos += 1;
        let mut items = Vec::new();
        self.whitespace();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Json::Array(items));
        }
        loop {
            self.whitespace();
            items.push(self.value()?);
            self.whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Json::Array(items));
                }
                _ => return Err(self.error("expected `,` or `]` in an array")),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Json, SyntaxError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.error("a number needs digits")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.error("a number needs digits after `.`"));
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.error("a number needs digits in its exponent"));
            }
        }
        let text = &self.text[start..self.pos];
        // As serde_json (and most JSON readers, which read numbers as f64)
        // does: a number past f64's range is refused, so no reader
        // downstream fails on what this one let through.
        if beyond_f64(text) {
            self.pos = start;
            return Err(self.error(
                "a number beyond the range of a 64-bit float (about ±1.8e308); \
                 write it as a string",
            ));
        }
        Ok(Json::Number(text.to_owned()))
    }

    fn hex4(&mut self) -> Result<u32, SyntaxError> {
        let digits = self
            .text
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| self.error("`\\u` needs four hex digits"))?;
        let code = u32::from_str_radix(digits, 16)
            .ok()
            .filter(|_| digits.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| self.error("`\\u` needs four hex digits"))?;
        self.pos += 4;
        Ok(code)
    }

    fn string(&mut self) -> Result<String, SyntaxError> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let start = self.pos;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            // Stops only at ASCII bytes: always a character boundary.
            out.push_str(&self.text[start..self.pos]);
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let escaped = self
                        .peek()
                        .ok_or_else(|| self.error("the text ends inside a string"))?;
                    self.pos += 1;
                    out.push(match escaped {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => {
                            self.pos -= 1;
                            return Err(self.error("unknown escape in a string"));
                        }
                    });
                }
                Some(_) => {
                    return Err(self.error("a control character must be escaped in a string"));
                }
                None => return Err(self.error("the text ends inside a string")),
            }
        }
    }

    fn unicode_escape(&mut self) -> Result<char, SyntaxError> {
        let high = self.hex4()?;
        let code = match high {
            0xD800..=0xDBFF => {
                if !self.bytes[self.pos..].starts_with(b"\\u") {
                    return Err(self.error("a high surrogate must be followed by a low one"));
                }
                self.pos += 2;
                let low = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return Err(self.error("a high surrogate must be followed by a low one"));
                }
                0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(self.error("a low surrogate without a high one")),
            code => code,
        };
        char::from_u32(code).ok_or_else(|| self.error("not a Unicode scalar value"))
    }
}

/// The smallest magnitude that rounds to infinity as an f64
/// (2^1024 - 2^970, halfway past `f64::MAX`), as its 309 digits.
const F64_OVERFLOW: &[u8] = b"179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792";

/// Whether the JSON number `text` (already checked to be one) reads as an
/// infinite f64. Compared digit by digit, so no float code is linked.
fn beyond_f64(text: &str) -> bool {
    let text = text.strip_prefix('-').unwrap_or(text);
    let (mantissa, exponent) = match text.bytes().position(|b| b == b'e' || b == b'E') {
        Some(at) => (&text[..at], &text[at + 1..]),
        None => (text, "0"),
    };
    let (negative, exponent) = match exponent.as_bytes().first() {
        Some(b'-') => (true, &exponent[1..]),
        Some(b'+') => (false, &exponent[1..]),
        _ => (false, exponent),
    };
    let exponent = exponent.bytes().fold(0i64, |n, d| {
        n.saturating_mul(10).saturating_add(i64::from(d - b'0'))
    });
    let exponent = if negative { -exponent } else { exponent };
    let (whole, fraction) = match mantissa.bytes().position(|b| b == b'.') {
        Some(at) => (&mantissa[..at], &mantissa[at + 1..]),
        None => (mantissa, ""),
    };
    let digits = || whole.bytes().chain(fraction.bytes());
    let Some(zeros) = digits().position(|d| d != b'0') else {
        return false; // zero, however written
    };
    // The value is 0.D × 10^magnitude, D starting with a non-zero digit.
    let magnitude = (whole.len() as i64 - zeros as i64).saturating_add(exponent);
    match magnitude.cmp(&(F64_OVERFLOW.len() as i64)) {
        core::cmp::Ordering::Less => false,
        core::cmp::Ordering::Greater => true,
        core::cmp::Ordering::Equal => {
            let mut significant = digits().skip(zeros);
            for limit in F64_OVERFLOW {
                match significant.next().unwrap_or(b'0').cmp(limit) {
                    core::cmp::Ordering::Equal => continue,
                    order => return order == core::cmp::Ordering::Greater,
                }
            }
            true // equal to the halfway point: rounds (to even) to infinity
        }
    }
}

/// Appends `value` as compact JSON.
pub fn write(out: &mut String, value: &Json) {
    match value {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(text) => out.push_str(text),
        Json::String(text) => write_string(out, text),
        Json::Array(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                write(out, item);
            }
            out.push(']');
        }
        Json::Object(members) => write_object(out, members.iter().map(|(k, v)| (k.as_str(), v))),
    }
}

/// Appends an object of `members` as compact JSON.
pub fn write_object<'a>(out: &mut String, members: impl Iterator<Item = (&'a str, &'a Json)>) {
    out.push('{');
    for (n, (key, value)) in members.enumerate() {
        if n > 0 {
            out.push(',');
        }
        write_string(out, key);
        out.push(':');
        write(out, value);
    }
    out.push('}');
}

/// `text` as a JSON string, for quoting ids and labels in messages.
pub fn quoted(text: &str) -> String {
    let mut out = String::new();
    write_string(&mut out, text);
    out
}

/// Appends `text` as a JSON string, escaped as `serde_json` escapes it.
pub fn write_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(HEX[(c as usize) >> 4] as char);
                out.push(HEX[(c as usize) & 0xf] as char);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}
