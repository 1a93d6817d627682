//! The mapping from `jsonschema` validation errors to [`FieldIssue`]s.

use jsonschema::ValidationError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;
use weft_core::tool::{FieldIssue, FieldIssueKind};

/// Longest message kept from the validator's own wording; the instance it
/// quotes can be arbitrarily large.
const MAX_MESSAGE_CHARS: usize = 300;

/// Appends the issues `error` stands for (one per unexpected property, one otherwise).
pub(crate) fn push_issues(error: &ValidationError<'_>, out: &mut Vec<FieldIssue>) {
    let path = error.instance_path.as_str();
    match &error.kind {
        ValidationErrorKind::Required { property } => {
            let name = match property {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            out.push(FieldIssue {
                field: join_pointer(path, &name),
                kind: FieldIssueKind::Missing,
                message: format!("required field `{name}` is missing"),
            });
        }
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            out.push(FieldIssue {
                field: path.to_owned(),
                kind: FieldIssueKind::WrongType,
                message: format!("expected {expected}, got {}", json_type(&error.instance)),
            });
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            for name in unexpected {
                out.push(FieldIssue {
                    field: join_pointer(path, name),
                    kind: FieldIssueKind::Unexpected,
                    message: format!("field `{name}` is not allowed"),
                });
            }
        }
        ValidationErrorKind::FalseSchema => out.push(FieldIssue {
            field: path.to_owned(),
            kind: FieldIssueKind::Unexpected,
            message: "this field is not allowed".into(),
        }),
        _ => out.push(FieldIssue {
            field: path.to_owned(),
            kind: FieldIssueKind::Invalid,
            message: truncate(error.to_string()),
        }),
    }
}

/// `base` extended by one property, escaped as RFC 6901 requires.
pub(crate) fn join_pointer(base: &str, property: &str) -> String {
    let mut out = String::with_capacity(base.len() + property.len() + 1);
    out.push_str(base);
    out.push('/');
    for c in property.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}

/// The JSON type name of `value`, distinguishing integers from other numbers.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn truncate(mut message: String) -> String {
    if let Some((idx, _)) = message.char_indices().nth(MAX_MESSAGE_CHARS) {
        message.truncate(idx);
        message.push('…');
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_are_escaped() {
        assert_eq!(join_pointer("", "a"), "/a");
        assert_eq!(join_pointer("/x/0", "a/b~c"), "/x/0/a~1b~0c");
    }

    #[test]
    fn long_messages_are_truncated() {
        let s = truncate("é".repeat(1000));
        assert_eq!(s.chars().count(), MAX_MESSAGE_CHARS + 1);
        assert_eq!(truncate("short".into()), "short");
    }
}
