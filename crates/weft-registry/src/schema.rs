//! Tool payload validation for the registry: JSON Schemas compiled once, and
//! violations reported as wire field issues with loom-mcp's constraint names
//! (`missing_field`, `invalid_field_type`, `invalid_enum_value`,
//! `invalid_format`, `invalid_pattern`, `invalid_range`, `invalid_length`;
//! weft adds `unexpected_field` and `invalid_value`).

use jsonschema::error::ValidationErrorKind;
use serde_json::Value;
use weft_core::tool::{FieldIssue, FieldIssueKind};

use crate::wire::WireFieldIssue;

/// Most issues reported for one payload.
const MAX_ISSUES: usize = 32;

/// A compiled payload schema.
#[derive(Debug)]
pub struct PayloadSchema {
    validator: jsonschema::Validator,
}

impl PayloadSchema {
    /// Compiles `schema`; the error is the compiler's message.
    pub fn compile(schema: &Value) -> Result<Self, String> {
        if !schema.is_object() && !schema.is_boolean() {
            return Err("a JSON Schema must be an object or a boolean".to_owned());
        }
        jsonschema::validator_for(schema)
            .map(|validator| Self { validator })
            .map_err(|e| e.to_string())
    }

    /// Checks `payload`; on failure returns at least one issue.
    pub fn validate(&self, payload: &Value) -> Result<(), Vec<WireFieldIssue>> {
        if self.validator.is_valid(payload) {
            return Ok(());
        }
        let mut out = Vec::new();
        for error in self.validator.iter_errors(payload).take(MAX_ISSUES) {
            let path = pointer_to_field(error.instance_path.as_str());
            let issue = |constraint: &str| WireFieldIssue {
                field: path.clone(),
                constraint: constraint.to_owned(),
                ..Default::default()
            };
            match &error.kind {
                ValidationErrorKind::Required { property } => {
                    let name = property
                        .as_str()
                        .map_or_else(|| property.to_string(), str::to_owned);
                    out.push(WireFieldIssue {
                        field: join(&path, &name),
                        constraint: "missing_field".into(),
                        ..Default::default()
                    });
                }
                ValidationErrorKind::Type { .. } => out.push(issue("invalid_field_type")),
                ValidationErrorKind::Enum { options } => out.push(WireFieldIssue {
                    allowed: options.as_array().map(|o| {
                        o.iter()
                            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                            .collect()
                    }),
                    ..issue("invalid_enum_value")
                }),
                ValidationErrorKind::Constant { .. } => out.push(issue("invalid_enum_value")),
                ValidationErrorKind::Format { format } => out.push(WireFieldIssue {
                    format: format.clone(),
                    ..issue("invalid_format")
                }),
                ValidationErrorKind::Pattern { pattern } => out.push(WireFieldIssue {
                    pattern: pattern.clone(),
                    ..issue("invalid_pattern")
                }),
                ValidationErrorKind::Minimum { .. }
                | ValidationErrorKind::Maximum { .. }
                | ValidationErrorKind::ExclusiveMinimum { .. }
                | ValidationErrorKind::ExclusiveMaximum { .. }
                | ValidationErrorKind::MultipleOf { .. } => out.push(issue("invalid_range")),
                ValidationErrorKind::MinLength { limit }
                | ValidationErrorKind::MinItems { limit }
                | ValidationErrorKind::MinProperties { limit } => out.push(WireFieldIssue {
                    min_len: i64::try_from(*limit).ok(),
                    ..issue("invalid_length")
                }),
                ValidationErrorKind::MaxLength { limit }
                | ValidationErrorKind::MaxItems { limit }
                | ValidationErrorKind::MaxProperties { limit } => out.push(WireFieldIssue {
                    max_len: i64::try_from(*limit).ok(),
                    ..issue("invalid_length")
                }),
                ValidationErrorKind::AdditionalProperties { unexpected }
                | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
                    for name in unexpected {
                        out.push(WireFieldIssue {
                            field: join(&path, name),
                            constraint: "unexpected_field".into(),
                            ..Default::default()
                        });
                    }
                }
                _ => out.push(issue("invalid_value")),
            }
        }
        if out.is_empty() {
            out.push(WireFieldIssue {
                constraint: "invalid_value".into(),
                ..Default::default()
            });
        }
        Err(out)
    }
}

/// `/items/0/name` → `items.0.name`.
fn pointer_to_field(pointer: &str) -> String {
    pointer
        .trim_start_matches('/')
        .split('/')
        .map(|p| p.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}

fn join(base: &str, name: &str) -> String {
    if base.is_empty() {
        name.to_owned()
    } else {
        format!("{base}.{name}")
    }
}

/// A wire issue as weft's [`FieldIssue`] (field as a JSON pointer).
pub fn to_field_issue(issue: &WireFieldIssue) -> FieldIssue {
    let kind = match issue.constraint.as_str() {
        "missing_field" => FieldIssueKind::Missing,
        "invalid_field_type" => FieldIssueKind::WrongType,
        "unexpected_field" => FieldIssueKind::Unexpected,
        _ => FieldIssueKind::Invalid,
    };
    let field = if issue.field.is_empty() {
        String::new()
    } else {
        format!("/{}", issue.field.replace('.', "/"))
    };
    FieldIssue {
        field,
        kind,
        message: issue.constraint.replace('_', " "),
    }
}

/// weft's [`FieldIssue`] as a wire issue.
pub fn from_field_issue(issue: &FieldIssue) -> WireFieldIssue {
    let constraint = match issue.kind {
        FieldIssueKind::Missing => "missing_field",
        FieldIssueKind::WrongType => "invalid_field_type",
        FieldIssueKind::Unexpected => "unexpected_field",
        FieldIssueKind::Invalid => "invalid_value",
    };
    WireFieldIssue {
        field: pointer_to_field(&issue.field),
        constraint: constraint.to_owned(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reports_loom_constraint_names() {
        let s = PayloadSchema::compile(&json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer"},
                "b": {},
                "mode": {"enum": ["fast", "slow"]},
                "name": {"type": "string", "maxLength": 3}
            },
            "required": ["a", "b"],
            "additionalProperties": false
        }))
        .unwrap();
        let issues = s
            .validate(&json!({"a": "x", "mode": "medium", "name": "long", "z": 1}))
            .unwrap_err();
        let pairs: Vec<(String, String)> = issues
            .iter()
            .map(|i| (i.field.clone(), i.constraint.clone()))
            .collect();
        for want in [
            ("b", "missing_field"),
            ("a", "invalid_field_type"),
            ("mode", "invalid_enum_value"),
            ("name", "invalid_length"),
            ("z", "unexpected_field"),
        ] {
            assert!(
                pairs.contains(&(want.0.to_owned(), want.1.to_owned())),
                "{want:?} in {pairs:?}"
            );
        }
        assert!(s.validate(&json!({"a": 1, "b": 2})).is_ok());
        assert!(PayloadSchema::compile(&json!({"type": 5})).is_err());
        assert!(PayloadSchema::compile(&json!("x")).is_err());
    }
}
