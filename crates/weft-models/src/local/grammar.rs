//! JSON Schema to GBNF: the grammar that constrains a local model's tool
//! calls so that every call it emits parses and matches its tool's schema.
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
//! one call per turn and the run loops for more. Arguments follow the tool's
//! input schema:
//!
//! - enforced: `type` (one or several), `properties` with `required` (only
//!   declared properties are produced), `additionalProperties` when no
//!   `properties` are declared, `items` with `minItems` / `maxItems`,
//!   `enum`, `const`, `anyOf` / `oneOf` (as alternatives), single-element
//!   `allOf`, local `$ref`s (recursive ones too), string `minLength` /
//!   `maxLength`, and the sign of numbers bounded by `minimum` /
//!   `exclusiveMinimum` ≥ 0 or `maximum` / `exclusiveMaximum` < 0;
//! - not enforced (the run machine's validation still reports them to the
//!   model as an invalid call): `pattern`, `format`, other numeric bounds,
//!   `multipleOf`, `uniqueItems`, `prefixItems`, `not`, `if`/`then`, and
//!   `allOf` with several parts, which fall back to any JSON of the right type.
//!
//! Numbers are limited to 16 integer and 16 fraction digits, and whitespace
//! to one optional space, so a constrained model cannot spin on a number or
//! on blanks.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use serde_json::Value;

/// Opens a tool call in the model's output.
pub const CALL_OPEN: &str = "<tool_call>";
/// Closes a tool call in the model's output.
pub const CALL_CLOSE: &str = "</tool_call>";

/// The generic JSON rules every grammar carries.
const JSON_RULES: &str = r#"value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( string ws ":" ws value ( "," ws string ws ":" ws value )* )? ws "}"
array ::= "[" ws ( value ( "," ws value )* )? ws "]"
string ::= "\"" char* "\""
char ::= [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
number ::= "-"? integer fraction? exponent?
nonneg-number ::= integer fraction? exponent?
neg-number ::= "-" integer fraction? exponent?
integer ::= "0" | [1-9] [0-9]{0,15}
fraction ::= "." [0-9]{1,16}
exponent ::= [eE] [-+]? [0-9]{1,3}
int ::= "-"? integer
neg-int ::= "-" [1-9] [0-9]{0,15}
boolean ::= "true" | "false"
null ::= "null"
ws ::= " "?
"#;

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
    let mut g = Grammar::default();
    let mut alts = Vec::with_capacity(tools.len());
    for (i, tool) in tools.iter().enumerate() {
        let args = ToolSchema::new(&mut g, tool.schema, i).value(tool.schema, 0);
        let head = format!("{{\"name\": {}, \"arguments\": ", json_text(tool.name));
        alts.push(g.rule(&format!("call-{i}"), format!("{} {args}", literal(&head))));
    }
    if alts.is_empty() {
        alts.push("object".to_owned());
    }
    let open = literal(&format!("{CALL_OPEN}\n"));
    let close = literal(&format!("}}\n{CALL_CLOSE}"));
    let mut out = String::new();
    let _ = writeln!(out, "root ::= {open} ( {} ) {close}", alts.join(" | "));
    for (name, body) in &g.rules {
        let _ = writeln!(out, "{name} ::= {body}");
    }
    out.push_str(JSON_RULES);
    out
}

/// The rules produced so far, with unique names.
#[derive(Default)]
struct Grammar {
    rules: Vec<(String, String)>,
    taken: HashSet<String>,
}

impl Grammar {
    /// Adds a rule named after `hint` (made unique) and returns its name.
    fn rule(&mut self, hint: &str, body: String) -> String {
        let name = self.reserve(hint);
        self.rules.push((name.clone(), body));
        name
    }

    /// Reserves a unique rule name for `hint`, to be defined later.
    fn reserve(&mut self, hint: &str) -> String {
        let mut base: String = hint
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        if base.is_empty() {
            base.push('r');
        }
        let mut name = base.clone();
        let mut n = 1;
        while self.taken.contains(&name) {
            n += 1;
            name = format!("{base}-{n}");
        }
        self.taken.insert(name.clone());
        name
    }
}

/// Converts one tool's schema; `$ref`s resolve against its root.
struct ToolSchema<'g, 'a> {
    g: &'g mut Grammar,
    root: &'a Value,
    prefix: String,
    refs: HashMap<String, String>,
}

/// Nesting deeper than this falls back to any JSON value.
const MAX_DEPTH: usize = 32;

impl<'g, 'a> ToolSchema<'g, 'a> {
    fn new(g: &'g mut Grammar, root: &'a Value, index: usize) -> Self {
        Self {
            g,
            root,
            prefix: format!("t{index}"),
            refs: HashMap::new(),
        }
    }

    /// A GBNF expression for the values `schema` admits.
    fn value(&mut self, schema: &'a Value, depth: usize) -> String {
        let Some(obj) = schema.as_object() else {
            // `true` admits anything; `false` admits nothing, which a call
            // cannot honour, so the run's validation reports it instead.
            return "value".to_owned();
        };
        if depth > MAX_DEPTH {
            return "value".to_owned();
        }
        if let Some(Value::String(r)) = obj.get("$ref") {
            return self.reference(r, depth);
        }
        if let Some(c) = obj.get("const") {
            return literal(&json_text_value(c));
        }
        if let Some(Value::Array(options)) = obj.get("enum") {
            let alts: Vec<String> = options
                .iter()
                .map(|v| literal(&json_text_value(v)))
                .collect();
            if !alts.is_empty() {
                return group(&alts);
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(subs)) = obj.get(key)
                && !subs.is_empty()
            {
                let alts: Vec<String> = subs.iter().map(|s| self.value(s, depth + 1)).collect();
                return group(&alts);
            }
        }
        if let Some(Value::Array(subs)) = obj.get("allOf")
            && let [only] = subs.as_slice()
        {
            return self.value(only, depth + 1);
        }
        match obj.get("type") {
            Some(Value::String(t)) => self.typed(t, obj, depth),
            Some(Value::Array(types)) => {
                let alts: Vec<String> = types
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|t| self.typed(t, obj, depth))
                    .collect();
                if alts.is_empty() {
                    "value".to_owned()
                } else {
                    group(&alts)
                }
            }
            _ if obj.contains_key("properties") => self.typed("object", obj, depth),
            _ if obj.contains_key("items") => self.typed("array", obj, depth),
            _ => "value".to_owned(),
        }
    }

    fn reference(&mut self, r: &str, depth: usize) -> String {
        if let Some(name) = self.refs.get(r) {
            return name.clone();
        }
        let target = r.strip_prefix('#').and_then(|p| {
            if p.is_empty() {
                Some(self.root)
            } else {
                self.root.pointer(p)
            }
        });
        let Some(target) = target else {
            return "value".to_owned();
        };
        let hint = format!("{}-{}", self.prefix, r.rsplit('/').next().unwrap_or("ref"));
        let name = self.g.reserve(&hint);
        self.refs.insert(r.to_owned(), name.clone());
        let body = self.value(target, depth + 1);
        self.g.rules.push((name.clone(), body));
        name
    }

    fn typed(&mut self, t: &str, obj: &'a serde_json::Map<String, Value>, depth: usize) -> String {
        match t {
            "object" => self.object(obj, depth),
            "array" => self.array(obj, depth),
            "string" => string(obj),
            "integer" => match sign(obj) {
                Sign::NonNegative => "integer".to_owned(),
                Sign::Negative => "neg-int".to_owned(),
                Sign::Any => "int".to_owned(),
            },
            "number" => match sign(obj) {
                Sign::NonNegative => "nonneg-number".to_owned(),
                Sign::Negative => "neg-number".to_owned(),
                Sign::Any => "number".to_owned(),
            },
            "boolean" => "boolean".to_owned(),
            "null" => "null".to_owned(),
            _ => "value".to_owned(),
        }
    }

    fn object(&mut self, obj: &'a serde_json::Map<String, Value>, depth: usize) -> String {
        let Some(Value::Object(props)) = obj.get("properties") else {
            return match obj.get("additionalProperties") {
                Some(Value::Bool(false)) => literal("{}"),
                Some(extra @ Value::Object(_)) => {
                    let v = self.value(extra, depth + 1);
                    let kv = format!("string ws \":\" ws {v}");
                    format!("\"{{\" ws ( {kv} ( \",\" ws {kv} )* )? ws \"}}\"")
                }
                _ => "object".to_owned(),
            };
        };
        let required: HashSet<&str> = match obj.get("required") {
            Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
            _ => HashSet::new(),
        };
        let mut items = Vec::with_capacity(props.len());
        for (key, sub) in props {
            let v = self.value(sub, depth + 1);
            let kv = format!("{} ws \":\" ws {v}", literal(&json_text(key)));
            items.push((kv, required.contains(key.as_str())));
        }
        let body = first(&items);
        let hint = format!("{}-object", self.prefix);
        self.g.rule(&hint, format!("\"{{\" ws {body} ws \"}}\""))
    }

    fn array(&mut self, obj: &'a serde_json::Map<String, Value>, depth: usize) -> String {
        let item = match obj.get("items") {
            Some(items @ (Value::Object(_) | Value::Bool(true))) => self.value(items, depth + 1),
            _ => "value".to_owned(),
        };
        let min = obj.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        let max = obj.get("maxItems").and_then(Value::as_u64);
        if max == Some(0) {
            return literal("[]");
        }
        let rest_min = min.saturating_sub(1);
        let rest = match max {
            Some(max) => format!("{{{rest_min},{}}}", max.saturating_sub(1).max(rest_min)),
            None => format!("{{{rest_min},}}"),
        };
        let list = format!("{item} ( \",\" ws {item} ){rest}");
        let body = if min == 0 {
            format!("\"[\" ws ( {list} )? ws \"]\"")
        } else {
            format!("\"[\" ws {list} ws \"]\"")
        };
        let hint = format!("{}-array", self.prefix);
        self.g.rule(&hint, body)
    }
}

/// The object members from `items` on, nothing written before them: every
/// required member in order, optional ones where they stand, commas between.
fn first(items: &[(String, bool)]) -> String {
    let Some(((kv, required), rest)) = items.split_first() else {
        return String::new();
    };
    let with = format!("{kv}{}", after(rest));
    if *required {
        with
    } else {
        let without = first(rest);
        if without.is_empty() {
            format!("( {with} )?")
        } else {
            format!("( {with} | {without} )")
        }
    }
}

/// The object members from `items` on, something already written.
fn after(items: &[(String, bool)]) -> String {
    let mut out = String::new();
    for (kv, required) in items {
        if *required {
            let _ = write!(out, " \",\" ws {kv}");
        } else {
            let _ = write!(out, " ( \",\" ws {kv} )?");
        }
    }
    out
}

fn string(obj: &serde_json::Map<String, Value>) -> String {
    let min = obj.get("minLength").and_then(Value::as_u64);
    let max = obj.get("maxLength").and_then(Value::as_u64);
    match (min, max) {
        (None, None) => "string".to_owned(),
        (min, Some(max)) => {
            let min = min.unwrap_or(0).min(max);
            format!("\"\\\"\" char{{{min},{max}}} \"\\\"\"")
        }
        (Some(min), None) => format!("\"\\\"\" char{{{min},}} \"\\\"\""),
    }
}

enum Sign {
    NonNegative,
    Negative,
    Any,
}

fn sign(obj: &serde_json::Map<String, Value>) -> Sign {
    let num = |k: &str| obj.get(k).and_then(Value::as_f64);
    if num("minimum").is_some_and(|m| m >= 0.0) || num("exclusiveMinimum").is_some_and(|m| m >= 0.0)
    {
        Sign::NonNegative
    } else if num("maximum").is_some_and(|m| m < 0.0)
        || num("exclusiveMaximum").is_some_and(|m| m <= 0.0)
    {
        Sign::Negative
    } else {
        Sign::Any
    }
}

fn group(alts: &[String]) -> String {
    if alts.len() == 1 {
        alts[0].clone()
    } else {
        format!("( {} )", alts.join(" | "))
    }
}

/// The compact JSON text of a string.
fn json_text(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

fn json_text_value(v: &Value) -> String {
    v.to_string()
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

    fn grammar_for(schema: Value) -> String {
        tool_call_grammar(&[GrammarTool {
            name: "t",
            schema: &schema,
        }])
    }

    #[test]
    fn literals_escape_quotes_backslashes_and_controls() {
        assert_eq!(literal("a\"b\\c\nd\u{1}"), r#""a\"b\\c\nd\x01""#);
    }

    #[test]
    fn required_and_optional_members_get_their_commas() {
        let items = vec![
            ("A".to_owned(), false),
            ("B".to_owned(), true),
            ("C".to_owned(), false),
        ];
        assert_eq!(
            first(&items),
            r#"( A "," ws B ( "," ws C )? | B ( "," ws C )? )"#
        );
        let optional = vec![("A".to_owned(), false)];
        assert_eq!(first(&optional), "( A )?");
    }

    #[test]
    fn refs_become_named_rules_and_recursion_terminates() {
        let g = grammar_for(json!({
            "$defs": {"node": {"type": "object", "properties": {
                "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}}}},
            "type": "object",
            "properties": {"head": {"$ref": "#/$defs/node"}},
            "required": ["head"]
        }));
        assert!(g.contains("t0-node ::= t0-object"), "{g}");
        assert!(g.contains("( t0-node | null )"), "{g}");
    }

    #[test]
    fn non_negative_integers_have_no_sign() {
        let g = grammar_for(json!({"type": "object", "properties": {
            "n": {"type": "integer", "minimum": 0}}, "required": ["n"]}));
        assert!(g.contains(r#""\"n\"" ws ":" ws integer"#), "{g}");
    }
}
