//! JSON bytes as Go's `encoding/json` writes them, so weft's wire messages
//! match loom-mcp's byte for byte: `<`, `>`, `&`, U+2028 and U+2029 are
//! escaped inside strings, and embedded raw JSON is compacted the same way.

use std::io;

use serde::Serialize;

/// Serializes `value` as compact JSON with Go's escaping.
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(256);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, GoFormatter);
    value.serialize(&mut ser)?;
    Ok(out)
}

/// A compact formatter that escapes what Go's encoder escapes by default.
struct GoFormatter;

impl serde_json::ser::Formatter for GoFormatter {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        write_go_escaped(writer, fragment)
    }

    fn write_raw_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        compact_go(writer, fragment)
    }
}

/// Writes a string fragment (already JSON-escaped for quotes, backslashes and
/// control characters) with Go's HTML-safe escapes added.
fn write_go_escaped<W: ?Sized + io::Write>(writer: &mut W, s: &str) -> io::Result<()> {
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let esc: &[u8] = match c {
            '<' => b"\\u003c",
            '>' => b"\\u003e",
            '&' => b"\\u0026",
            '\u{2028}' => b"\\u2028",
            '\u{2029}' => b"\\u2029",
            _ => continue,
        };
        writer.write_all(&s.as_bytes()[start..i])?;
        writer.write_all(esc)?;
        start = i + c.len_utf8();
    }
    writer.write_all(&s.as_bytes()[start..])
}

/// Writes valid JSON text compacted (no insignificant whitespace), with
/// Go's escapes inside strings, as Go does for a `json.RawMessage`.
fn compact_go<W: ?Sized + io::Write>(writer: &mut W, json: &str) -> io::Result<()> {
    let mut in_string = false;
    let mut escaped = false;
    let mut run_start = 0;
    for (i, c) in json.char_indices() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            } else if matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') {
                writer.write_all(&json.as_bytes()[run_start..i])?;
                write_go_escaped(writer, &json[i..i + c.len_utf8()])?;
                run_start = i + c.len_utf8();
            }
        } else if c == '"' {
            in_string = true;
        } else if c.is_ascii_whitespace() {
            writer.write_all(&json.as_bytes()[run_start..i])?;
            run_start = i + 1;
        }
    }
    writer.write_all(&json.as_bytes()[run_start..])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn escapes_like_go() {
        let out = to_vec(&json!({"a": "<b> & \u{2028}\n\"x\""})).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a":"\u003cb\u003e \u0026 \u2028\n\"x\""}"#
        );
    }

    #[test]
    fn compacts_raw_json_like_go() {
        let raw = serde_json::value::RawValue::from_string(
            "{ \"a\" : [1, 2],\n \"s\": \"x y <z>\" }".to_owned(),
        )
        .unwrap();
        let out = to_vec(&raw).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a":[1,2],"s":"x y \u003cz\u003e"}"#
        );
    }
}
