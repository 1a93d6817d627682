//! An agent file's TOML error as shown: the parser's message, with its
//! caret on the offending key when the parser points at the key's table
//! (an unknown field of `[planner]`, whose `kind` picks the fields, is
//! reported at `[planner]`; the key's own line and column are found here).

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// `error`, raised parsing `text`, as a message with line, column and caret.
pub(super) fn message(text: &str, error: &toml::de::Error) -> String {
    let Some(span) = error.span() else {
        return error.to_string();
    };
    let Some(field) = unknown_field(error.message()) else {
        return error.to_string();
    };
    let Ok(root) = DeTable::parse(text) else {
        return error.to_string();
    };
    let mut shown = match key_span(root.get_ref(), root.span(), &span, field) {
        Some(key) if key != span => render(text, key, error.message()),
        _ => error.to_string(),
    };
    if field == "api_key" && error.message().contains("`api_key_env`") {
        shown.push_str(
            "an agent file holds no key: `api_key_env` names the environment variable that does\n",
        );
    }
    shown
}

/// The field of an "unknown field `x`, expected ..." message.
fn unknown_field(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split_once('`').map(|(field, _)| field)
}

/// The span of key `field` in the table spanning `table_span` (or one
/// nested in it) that spans `target`.
fn key_span(
    table: &DeTable<'_>,
    table_span: Range<usize>,
    target: &Range<usize>,
    field: &str,
) -> Option<Range<usize>> {
    if table_span == *target
        && let Some((key, _)) = table.iter().find(|(k, _)| k.get_ref().as_ref() == field)
    {
        return Some(key.span());
    }
    table
        .values()
        .find_map(|value| value_key_span(value, target, field))
}

fn value_key_span(
    value: &Spanned<DeValue<'_>>,
    target: &Range<usize>,
    field: &str,
) -> Option<Range<usize>> {
    match value.get_ref() {
        DeValue::Table(table) => key_span(table, value.span(), target, field),
        DeValue::Array(items) => items
            .iter()
            .find_map(|item| value_key_span(item, target, field)),
        _ => None,
    }
}

/// The message as the TOML parser shows its own: where, the line, a caret
/// under the span, then what is wrong.
fn render(text: &str, span: Range<usize>, what: &str) -> String {
    let start = span.start.min(text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_no = text[..line_start].matches('\n').count() + 1;
    let column = text[line_start..start].chars().count() + 1;
    let content = text[line_start..].split('\n').next().unwrap_or_default();
    let width = text
        .get(start..span.end.min(line_start + content.len()))
        .map_or(1, |s| s.chars().count().max(1));
    let gutter = " ".repeat(line_no.to_string().len() + 1);
    format!(
        "TOML parse error at line {line_no}, column {column}\n{gutter}|\n{line_no} | {content}\n\
         {gutter}|{pad}{carets}\n{what}\n",
        pad = " ".repeat(column),
        carets = "^".repeat(width),
    )
}
