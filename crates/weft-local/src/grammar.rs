//! The tool-call grammar: the GBNF grammar that constrains a local model's
//! tool calls so that every call it emits parses and matches its tool's
//! schema.
//!
//! A call is written as
//!
//! ```text
//! <tool_call>
//! {"name": "calc__add", "arguments": {"a": 1, "b": 2}}
//! </tool_call>
//! ```
//!
//! and the grammar admits exactly one such block, for any tool offered, and
//! then only the end of the answer: a small model asked for parallel calls
//! tends to repeat one call until its budget runs out, so a local model makes
//! one call per turn and the run loops for more.
//!
//! Each tool's arguments follow the grammar that llama.cpp's own converter
//! (`json_schema_to_grammar`, from its `common` library) makes of the tool's
//! input schema; this module only gives every tool's rules their own prefix
//! and wraps them in the call block. What the converter does not enforce
//! (some formats, numeric ranges) still reaches the run machine's validation
//! as an invalid call. A schema the converter refuses falls back to any JSON
//! object, with the same validation after decoding.

use std::fmt::Write as _;

use serde_json::Value;

/// Opens a tool call in the model's output.
pub const CALL_OPEN: &str = "<tool_call>";
/// Closes a tool call in the model's output.
pub const CALL_CLOSE: &str = "</tool_call>";

/// One tool as the grammar sees it: the name the model writes and its schema.
#[derive(Debug, Clone, Copy)]
pub struct GrammarTool<'a> {
    /// The name to write in the call.
    pub name: &'a str,
    /// The JSON Schema of the arguments.
    pub schema: &'a Value,
}

/// The GBNF grammar (root rule `root`) admitting one call to one of `tools`.
pub fn tool_call_grammar(tools: &[GrammarTool<'_>]) -> String {
    let any_object = Value::Object(
        [("type".to_owned(), Value::String("object".to_owned()))]
            .into_iter()
            .collect(),
    );
    let mut out = String::new();
    let mut alts = Vec::with_capacity(tools.len().max(1));
    for (i, tool) in tools.iter().enumerate() {
        let prefix = format!("t{i}-");
        let rules = arguments_rules(tool.schema).or_else(|| arguments_rules(&any_object));
        let args = match rules {
            Some(rules) => {
                out.push_str(&prefix_rules(&rules, &prefix));
                format!("{prefix}root")
            }
            // Not even `{"type": "object"}` converts: llama.cpp is broken.
            None => "\"{}\"".to_owned(),
        };
        let head = format!("{{\"name\": {}, \"arguments\": ", json_text(tool.name));
        let _ = writeln!(out, "call-{i} ::= {} {args} \"}}\"", literal(&head));
        alts.push(format!("call-{i}"));
    }
    if alts.is_empty() {
        // No tool offered: any name, any object of arguments.
        let call = serde_json::json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
            "required": ["name", "arguments"],
        });
        if let Some(rules) = arguments_rules(&call) {
            out.push_str(&prefix_rules(&rules, "t-"));
            alts.push("t-root".to_owned());
        }
    }
    let open = literal(&format!("{CALL_OPEN}\n"));
    let close = literal(&format!("\n{CALL_CLOSE}"));
    format!("root ::= {open} ( {} ) {close}\n{out}", alts.join(" | "))
}

/// llama.cpp's grammar for one schema (root rule `root`), if it converts.
fn arguments_rules(schema: &Value) -> Option<String> {
    let text = serde_json::to_string(schema).ok()?;
    match llama_cpp_2::json_schema_to_grammar(&text) {
        Ok(g) => Some(g),
        Err(e) => {
            tracing::debug!(error = %e, "llama.cpp cannot convert a tool schema; any object is accepted instead");
            None
        }
    }
}

/// Renames every rule of `grammar` (definitions and references) to start
/// with `prefix`, leaving string literals, character classes, repetition
/// counts and comments as they are.
fn prefix_rules(grammar: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(grammar.len() + grammar.len() / 4);
    let mut chars = grammar.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' | '[' => {
                let close = if c == '"' { '"' } else { ']' };
                out.push(c);
                while let Some(d) = chars.next() {
                    out.push(d);
                    if d == '\\' {
                        if let Some(e) = chars.next() {
                            out.push(e);
                        }
                    } else if d == close {
                        break;
                    }
                }
            }
            '{' => {
                out.push(c);
                for d in chars.by_ref() {
                    out.push(d);
                    if d == '}' {
                        break;
                    }
                }
            }
            '#' => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        out.push(d);
                        break;
                    }
                }
            }
            c if is_name_char(c) => {
                out.push_str(prefix);
                out.push(c);
                while let Some(&d) = chars.peek() {
                    if !is_name_char(d) {
                        break;
                    }
                    out.push(d);
                    chars.next();
                }
            }
            c => out.push(c),
        }
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

fn json_text(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// A GBNF string literal matching `text` exactly.
fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn literals_escape_quotes_backslashes_and_controls() {
        assert_eq!(literal("a\"b\\c\nd\u{1}"), r#""a\"b\\c\nd\x01""#);
    }

    #[test]
    fn prefixing_renames_rules_but_not_literals_classes_or_counts() {
        let g = "root ::= \"{\" space a-b [a-z\\]]{0,15} \"x y\" # note\nspace ::= | \" \"\n";
        assert_eq!(
            prefix_rules(g, "t0-"),
            "t0-root ::= \"{\" t0-space t0-a-b [a-z\\]]{0,15} \"x y\" \nt0-space ::= | \" \"\n"
        );
    }

    #[test]
    fn each_tool_gets_its_own_rules_and_a_call_alternative() {
        let a =
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        let b = json!({"type": "object", "properties": {"s": {"type": "string"}}});
        let g = tool_call_grammar(&[
            GrammarTool {
                name: "calc__add",
                schema: &a,
            },
            GrammarTool {
                name: "say",
                schema: &b,
            },
        ]);
        assert!(
            g.starts_with("root ::= \"<tool_call>\\n\" ( call-0 | call-1 ) \"\\n</tool_call>\""),
            "{g}"
        );
        assert!(
            g.contains(
                "call-0 ::= \"{\\\"name\\\": \\\"calc__add\\\", \\\"arguments\\\": \" t0-root"
            ),
            "{g}"
        );
        assert!(g.contains("\nt0-root ::= "), "{g}");
        assert!(g.contains("\nt1-root ::= "), "{g}");
        // Every rule is defined once.
        let defs: Vec<&str> = g.lines().filter_map(|l| l.split(" ::= ").next()).collect();
        let mut unique = defs.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(defs.len(), unique.len(), "{g}");
    }
}
