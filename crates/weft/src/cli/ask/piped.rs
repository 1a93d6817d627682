//! Answering awaits without a terminal: a question is shown on standard
//! error with what a line of answer looks like, and its answer is one line
//! per question, read from standard input (a pipe or a file) or given to
//! `weft runs answer`. Nothing is asked twice: a line that does not fit is
//! an error that says why.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use serde_json::{Map, Value};
use weft_core::awaiting::{AwaitAnswer, AwaitItem, Question};
use weft_core::elicitation::{ElicitationAction, ElicitationMode};
use weft_core::tool::ToolOutput;

use super::AskError;

/// Shows `item` on `out`: the question and what a line of answer is.
pub fn describe(item: &AwaitItem, out: &mut dyn Write) -> std::io::Result<()> {
    match item {
        AwaitItem::Clarification(c) => {
            writeln!(out, "? {}", c.question)?;
            if let Some(p) = &c.clarifying_prompt {
                writeln!(out, "  {p}")?;
            }
            writeln!(out, "  answer: one line of text")
        }
        AwaitItem::Questions(q) => {
            if let Some(t) = &q.title {
                writeln!(out, "? {t}")?;
            }
            for question in &q.questions {
                writeln!(out, "? {}", question.prompt)?;
                for (i, o) in question.options.iter().enumerate() {
                    writeln!(out, "  {}. {} (id {})", i + 1, o.label, o.id)?;
                }
            }
            let several = if q.questions.iter().any(|q| q.allow_multiple) {
                " (several separated by commas where allowed)"
            } else {
                ""
            };
            writeln!(
                out,
                "  answer: one line per question, an option's number, id or label{several}"
            )
        }
        AwaitItem::Confirmation(c) => {
            writeln!(out, "? allow {} {} ?", c.tool_name, c.payload)?;
            writeln!(out, "  answer: y or n (a reason may follow: `n too risky`)")
        }
        AwaitItem::Elicitation(e) => {
            writeln!(out, "? {} (asked by {})", e.message, e.tool)?;
            match &e.mode {
                ElicitationMode::Url { url, .. } => {
                    writeln!(out, "  open {url}")?;
                    writeln!(out, "  answer: done (once done there), decline or cancel")
                }
                ElicitationMode::Form { requested_schema } => {
                    for line in field_lines(requested_schema) {
                        writeln!(out, "  field {line}")?;
                    }
                    let fields = "a JSON object of the fields, decline or cancel";
                    match single_field(requested_schema) {
                        Some((name, _)) => writeln!(out, "  answer: the {name}, or {fields}"),
                        None => writeln!(out, "  answer: {fields}"),
                    }
                }
            }
        }
        AwaitItem::ExternalTools(e) => {
            for call in &e.items {
                writeln!(out, "? result of {} {}", call.tool_name, call.payload)?;
            }
            writeln!(out, "  answer: one line per call, its result as JSON")
        }
    }
}

/// Reads the answer to `item` from `input`, one line per question.
pub fn read(item: &AwaitItem, input: &mut dyn BufRead) -> Result<AwaitAnswer, AskError> {
    answer(item, &mut || {
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            return Err(AskError::Closed);
        }
        Ok(line.trim_end_matches(['\n', '\r']).to_owned())
    })
}

/// The answer to `item` from its lines, taken from `next` one per question;
/// a line holding a whole answer (`{"kind": "clarification", ...}`) is
/// taken as it is.
pub fn answer(
    item: &AwaitItem,
    next: &mut dyn FnMut() -> Result<String, AskError>,
) -> Result<AwaitAnswer, AskError> {
    let first = next()?;
    let whole = first.trim_start().starts_with('{')
        && !matches!(
            item,
            AwaitItem::Clarification(_) | AwaitItem::ExternalTools(_)
        );
    let answer = match serde_json::from_str::<AwaitAnswer>(&first) {
        Ok(a) if whole => a,
        _ => from_lines(item, first, next)?,
    };
    item.validate(&answer)
        .map_err(|e| AskError::Unfit(format!("the answer does not fit: {e}")))?;
    Ok(answer)
}

fn unfit(line: &str, wanted: &str) -> AskError {
    AskError::Unfit(format!("`{line}` is not {wanted}"))
}

fn from_lines(
    item: &AwaitItem,
    first: String,
    next: &mut dyn FnMut() -> Result<String, AskError>,
) -> Result<AwaitAnswer, AskError> {
    match item {
        AwaitItem::Clarification(_) if first.trim().is_empty() => {
            Err(unfit(&first, "an answer: the line is empty"))
        }
        AwaitItem::Clarification(_) => Ok(AwaitAnswer::Clarification { text: first }),
        AwaitItem::Questions(q) => {
            let mut answers = BTreeMap::new();
            let mut line = Some(first);
            for question in &q.questions {
                let text = match line.take() {
                    Some(l) => l,
                    None => next()?,
                };
                answers.insert(question.id.clone(), choose(question, &text)?);
            }
            Ok(AwaitAnswer::Questions { answers })
        }
        AwaitItem::Confirmation(_) => {
            let trimmed = first.trim();
            let (word, rest) = trimmed
                .split_once(char::is_whitespace)
                .unwrap_or((trimmed, ""));
            let reason = rest.trim_start_matches([':', ',', ' ']).trim();
            match word.trim_end_matches([':', ',']).to_lowercase().as_str() {
                "y" | "yes" => Ok(AwaitAnswer::Confirmation {
                    approved: true,
                    reason: None,
                }),
                "n" | "no" => Ok(AwaitAnswer::Confirmation {
                    approved: false,
                    reason: Some(reason.to_owned()).filter(|r| !r.is_empty()),
                }),
                _ => Err(unfit(&first, "y, yes, n or no")),
            }
        }
        AwaitItem::Elicitation(e) => {
            let action = |action| AwaitAnswer::Elicitation {
                action,
                content: None,
            };
            let line = first.trim();
            match (line.to_lowercase().as_str(), &e.mode) {
                ("decline", _) => return Ok(action(ElicitationAction::Decline)),
                ("cancel", _) => return Ok(action(ElicitationAction::Cancel)),
                ("done" | "y" | "yes", ElicitationMode::Url { .. }) => {
                    return Ok(action(ElicitationAction::Accept));
                }
                _ => {}
            }
            let ElicitationMode::Form { requested_schema } = &e.mode else {
                return Err(unfit(line, "done, decline or cancel"));
            };
            let content = match serde_json::from_str::<Value>(line) {
                Ok(Value::Object(fields)) => fields,
                _ => match single_field(requested_schema) {
                    Some((name, field)) => {
                        let value = field_value(field, line)
                            .ok_or_else(|| unfit(line, &format!("a value for {name}")))?;
                        Map::from_iter([(name, value)])
                    }
                    None => return Err(unfit(line, "a JSON object of the form's fields")),
                },
            };
            Ok(AwaitAnswer::Elicitation {
                action: ElicitationAction::Accept,
                content: Some(Value::Object(content)),
            })
        }
        AwaitItem::ExternalTools(e) => {
            let mut results = Vec::new();
            let mut line = Some(first);
            for call in &e.items {
                let text = match line.take() {
                    Some(l) => l,
                    None => next()?,
                };
                let value = serde_json::from_str::<Value>(&text)
                    .map_err(|err| unfit(&text, &format!("JSON: {err}")))?;
                results.push(ToolOutput::ok(
                    call.tool_call_id.clone(),
                    call.tool_name.clone(),
                    call.payload.clone(),
                    value,
                ));
            }
            Ok(AwaitAnswer::ExternalTools { results })
        }
    }
}

/// The option ids a line picks: numbers, ids or labels (several separated
/// by commas where the question allows several).
fn choose(question: &Question, line: &str) -> Result<Vec<String>, AskError> {
    let pick = |s: &str| {
        let s = s.trim();
        let by_number = s
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| question.options.get(i));
        by_number
            .or_else(|| question.options.iter().find(|o| o.id == s))
            .or_else(|| {
                question
                    .options
                    .iter()
                    .find(|o| o.label.eq_ignore_ascii_case(s))
            })
            .map(|o| o.id.clone())
    };
    let picks: Option<Vec<String>> = match pick(line) {
        Some(one) => Some(vec![one]),
        None if question.allow_multiple => line.split(',').map(pick).collect(),
        None => None,
    };
    match picks {
        Some(p) if !p.is_empty() && !line.trim().is_empty() => Ok(p),
        _ => Err(unfit(
            line,
            &format!(
                "an option of `{}` (its number, id or label)",
                question.prompt
            ),
        )),
    }
}

/// The form's only required field (or its only field), with its schema.
fn single_field(schema: &Value) -> Option<(String, &Value)> {
    let properties = schema.get("properties")?.as_object()?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    match (required.as_slice(), properties.len()) {
        ([name], _) => properties.get(*name).map(|f| ((*name).to_owned(), f)),
        ([], 1) => properties.iter().next().map(|(n, f)| (n.clone(), f)),
        _ => None,
    }
}

/// A field's value from a line, by the field's type; a number picks from
/// the field's `enum`.
fn field_value(field: &Value, line: &str) -> Option<Value> {
    if let Some(options) = field.get("enum").and_then(Value::as_array) {
        let by_number = line
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| options.get(i));
        if let Some(v) = by_number {
            return Some(v.clone());
        }
    }
    let kind = field
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string");
    super::elicit::parse(kind, line)
}

/// One line per field of a form: its name, type and description.
fn field_lines(schema: &Value) -> Vec<String> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, p)| {
            let kind = p.get("type").and_then(Value::as_str).unwrap_or("string");
            let needed = if required.contains(&name.as_str()) {
                ", required"
            } else {
                ""
            };
            let about = p
                .get("description")
                .and_then(Value::as_str)
                .map(|d| format!(" — {d}"))
                .unwrap_or_default();
            format!("{name} ({kind}{needed}){about}")
        })
        .collect()
}

#[cfg(test)]
#[path = "piped_tests.rs"]
mod tests;
