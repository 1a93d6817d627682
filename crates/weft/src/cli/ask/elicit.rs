//! Answering a running tool's elicitation at the terminal: a form asks one
//! line per field, parsed by the field's type and shown with the values it
//! offers, its constraints and its default (an empty line skips an optional
//! field, or keeps the default); an answer that breaks the form's schema is
//! asked again. A URL is printed, and the human accepts once done there.
//! Either may be declined or cancelled first.

use std::io::{BufRead, Write};

use serde_json::{Map, Value};
use weft_core::awaiting::{AwaitAnswer, AwaitItem, Elicitation};
use weft_core::elicitation::{ElicitationAction, ElicitationMode};

use super::{AskError, prompt};

/// Asks for an answer to `e`, re-asking until the form's answer is valid.
pub(super) fn ask_elicitation(
    e: &Elicitation,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
) -> Result<AwaitAnswer, AskError> {
    writeln!(output, "? {} (asked by {})", e.message, e.tool)?;
    let schema = match &e.mode {
        ElicitationMode::Url { url, .. } => {
            writeln!(output, "  open {url}")?;
            let action = choose(input, output, "[y = done / n = decline / c = cancel] > ")?;
            return Ok(AwaitAnswer::Elicitation {
                action,
                content: None,
            });
        }
        ElicitationMode::Form { requested_schema } => requested_schema,
    };
    let action = choose(input, output, "[y = answer / n = decline / c = cancel] > ")?;
    if action != ElicitationAction::Accept {
        return Ok(AwaitAnswer::Elicitation {
            action,
            content: None,
        });
    }
    let item = AwaitItem::Elicitation(e.clone());
    loop {
        let answer = AwaitAnswer::Elicitation {
            action,
            content: Some(Value::Object(fill_in(schema, input, output)?)),
        };
        match item.validate(&answer) {
            Ok(()) => return Ok(e.with_defaults(answer)),
            Err(err) => writeln!(output, "  {err}; again")?,
        }
    }
}

fn choose(
    input: &mut dyn BufRead,
    output: &mut dyn Write,
    text: &str,
) -> Result<ElicitationAction, AskError> {
    loop {
        match prompt(input, output, text)?.trim().to_lowercase().as_str() {
            "y" | "yes" => return Ok(ElicitationAction::Accept),
            "n" | "no" => return Ok(ElicitationAction::Decline),
            "c" | "cancel" => return Ok(ElicitationAction::Cancel),
            _ => {}
        }
    }
}

/// One line per property of the form.
fn fill_in(
    schema: &Value,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
) -> Result<Map<String, Value>, AskError> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut fields = Map::new();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(fields);
    };
    for (name, property) in properties {
        let kind = property
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("string");
        let default = property.get("default").filter(|d| !d.is_null());
        // A field with a default may be left empty: the default applies.
        let needed = required.contains(&name.as_str()) && default.is_none();
        let label = label(name, kind, needed, property);
        let value = loop {
            let line = prompt(input, output, &format!("  {label} > "))?;
            let line = line.trim();
            if line.is_empty() && !needed {
                break None;
            }
            match parse(kind, line) {
                Some(v) => break Some(v),
                None => writeln!(output, "  please give {kind}")?,
            }
        };
        if let Some(v) = value {
            fields.insert(name.clone(), v);
        }
    }
    Ok(fields)
}

/// How a field is asked: its name and type, whether it is required, its
/// description, the values it offers, its constraints and its default.
fn label(name: &str, kind: &str, needed: bool, property: &Value) -> String {
    let mut label = format!("{name} ({kind}{})", if needed { ", required" } else { "" });
    if let Some(d) = property.get("description").and_then(Value::as_str) {
        label.push_str(&format!(" — {d}"));
    }
    let offered = offered(property).or_else(|| property.get("items").and_then(offered));
    if let Some(options) = offered {
        label.push_str(&format!(" one of {}", options.join(", ")));
    }
    let limits: Vec<String> = [
        ("minimum", "at least"),
        ("maximum", "at most"),
        ("exclusiveMinimum", "more than"),
        ("exclusiveMaximum", "less than"),
        ("minLength", "at least {} chars"),
        ("maxLength", "at most {} chars"),
        ("minItems", "at least {} items"),
        ("maxItems", "at most {} items"),
        ("format", "a valid"),
    ]
    .iter()
    .filter_map(|(key, words)| {
        let bound = property.get(*key)?;
        let bound = bound
            .as_str()
            .map_or_else(|| bound.to_string(), str::to_owned);
        Some(if words.contains("{}") {
            words.replace("{}", &bound)
        } else {
            format!("{words} {bound}")
        })
    })
    .collect();
    if !limits.is_empty() {
        label.push_str(&format!(" [{}]", limits.join(", ")));
    }
    if let Some(default) = property.get("default").filter(|d| !d.is_null()) {
        label.push_str(&format!(" (default {default}; empty keeps it)"));
    }
    label
}

/// The values a property offers: its `enum`, or the `const`s (with their
/// titles) of its `oneOf`/`anyOf`.
fn offered(property: &Value) -> Option<Vec<String>> {
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        return Some(values.iter().map(ToString::to_string).collect());
    }
    let options = ["oneOf", "anyOf"]
        .iter()
        .find_map(|key| property.get(*key).and_then(Value::as_array))?;
    Some(
        options
            .iter()
            .filter_map(|o| {
                let value = o.get("const")?;
                Some(match o.get("title").and_then(Value::as_str) {
                    Some(title) => format!("{value} ({title})"),
                    None => value.to_string(),
                })
            })
            .collect(),
    )
}

/// A field's value from a line, by the field's JSON type.
pub(super) fn parse(kind: &str, line: &str) -> Option<Value> {
    match kind {
        "integer" => line.parse::<i64>().ok().map(Value::from),
        "number" => line.parse::<f64>().ok().map(Value::from),
        "boolean" => match line.to_lowercase().as_str() {
            "y" | "yes" | "true" => Some(Value::Bool(true)),
            "n" | "no" | "false" => Some(Value::Bool(false)),
            _ => None,
        },
        "array" => Some(Value::Array(
            line.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| Value::String(s.to_owned()))
                .collect(),
        )),
        _ if line.is_empty() => None,
        _ => Some(Value::String(line.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn form() -> Elicitation {
        Elicitation {
            id: "e".into(),
            tool_call_id: "c".into(),
            tool: "mcp.ask_name".into(),
            message: "Who?".into(),
            mode: ElicitationMode::Form {
                requested_schema: json!({"type": "object", "properties": {
                    "name": {"type": "string"}, "age": {"type": "integer"}},
                    "required": ["name"]}),
            },
        }
    }

    #[test]
    fn a_form_asks_each_field_by_type_and_reasks_bad_values() {
        // Fields come in the order of the parsed schema (by name here).
        let mut input = &b"y\nold\n36\nAda\n"[..];
        let mut out = Vec::new();
        let answer = ask_elicitation(&form(), &mut input, &mut out).unwrap();
        let content = json!({"name": "Ada", "age": 36});
        assert_eq!(
            answer,
            AwaitAnswer::Elicitation {
                action: ElicitationAction::Accept,
                content: Some(content)
            }
        );
        let shown = String::from_utf8(out).unwrap();
        assert!(shown.contains("please give integer"), "{shown}");
    }

    #[test]
    fn a_form_shows_constraints_and_defaults_reasks_out_of_range_and_keeps_defaults() {
        let order = Elicitation {
            mode: ElicitationMode::Form {
                requested_schema: json!({"type": "object", "properties": {
                    "quantity": {"type": "integer", "minimum": 1, "maximum": 100},
                    "size": {"type": "string", "default": "m", "oneOf": [
                        {"const": "s", "title": "Small"}, {"const": "m", "title": "Medium"}]}},
                    "required": ["quantity", "size"]}),
            },
            ..form()
        };
        // 500 is over the maximum: the form is asked again; an empty line
        // keeps the default of the required `size`.
        let mut input = &b"y\n500\n\n7\n\n"[..];
        let mut out = Vec::new();
        let answer = ask_elicitation(&order, &mut input, &mut out).unwrap();
        assert_eq!(
            answer,
            AwaitAnswer::Elicitation {
                action: ElicitationAction::Accept,
                content: Some(json!({"quantity": 7, "size": "m"}))
            }
        );
        let shown = String::from_utf8(out).unwrap();
        assert!(
            shown.contains("quantity (integer, required) [at least 1, at most 100]"),
            "{shown}"
        );
        assert!(
            shown.contains("form field `quantity` must be at most 100"),
            "{shown}"
        );
        assert!(
            shown.contains(
                r#"size (string) one of "s" (Small), "m" (Medium) (default "m"; empty keeps it)"#
            ),
            "{shown}"
        );
        assert_eq!(shown.matches("  quantity (").count(), 2, "{shown}");
    }

    #[test]
    fn a_url_is_shown_and_a_form_may_be_declined() {
        let url = Elicitation {
            mode: ElicitationMode::Url {
                url: "https://example.test/ok".into(),
                elicitation_id: String::new(),
            },
            ..form()
        };
        let mut out = Vec::new();
        let answer = ask_elicitation(&url, &mut &b"y\n"[..], &mut out).unwrap();
        assert!(
            String::from_utf8(out)
                .unwrap()
                .contains("https://example.test/ok")
        );
        assert_eq!(
            answer,
            AwaitAnswer::Elicitation {
                action: ElicitationAction::Accept,
                content: None
            }
        );
        let declined = ask_elicitation(&form(), &mut &b"n\n"[..], &mut Vec::new()).unwrap();
        assert_eq!(
            declined,
            AwaitAnswer::Elicitation {
                action: ElicitationAction::Decline,
                content: None
            }
        );
    }
}
