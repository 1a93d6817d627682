//! Argument validation against JSON Schema: compiled validators, the mapping
//! of schema violations to [`FieldIssue`]s, and the retry hints built from
//! them. Shared by typed tools ([`crate::typed`]) and the run's catalog
//! ([`crate::catalog`]), so both report violations the same way.

mod example;
mod issues;

pub(crate) use issues::join_pointer;
#[cfg(test)]
mod proptests;

use serde_json::{Map, Value};
use weft_core::tool::{FieldIssue, FieldIssueKind, RetryHint, ToolError, ToolIdent};

use crate::toolset::ToolFailure;

pub use example::example_input;

/// Why a schema could not be compiled into a validator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON Schema: {message}")]
pub struct SchemaError {
    /// The compiler's message.
    pub message: String,
}

/// A tool's input schema compiled once, ready to check arguments quickly.
///
/// A `null` (absent) payload is checked as `{}` when the schema describes an
/// object: it passes when the tool has no required fields and otherwise
/// fails with one [`FieldIssueKind::Missing`] issue per required field. It is
/// never silently accepted for a tool with required fields.
#[derive(Debug)]
pub struct ArgsValidator {
    validator: jsonschema::Validator,
    example: Value,
    object_root: bool,
}

impl ArgsValidator {
    /// Compiles `schema`.
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        let validator = jsonschema::validator_for(schema).map_err(|e| SchemaError {
            message: e.to_string(),
        })?;
        Ok(Self {
            validator,
            example: example_input(schema),
            object_root: is_object_schema(schema),
        })
    }

    /// Checks `args`; on failure every violation is reported as at least one field issue.
    pub fn validate(&self, args: &Value) -> Result<(), Vec<FieldIssue>> {
        let empty;
        let args = if args.is_null() && self.object_root {
            empty = Value::Object(Map::new());
            &empty
        } else {
            args
        };
        if self.validator.is_valid(args) {
            return Ok(());
        }
        let mut out = Vec::new();
        for error in self.validator.iter_errors(args) {
            issues::push_issues(&error, &mut out);
        }
        if out.is_empty() {
            out.push(FieldIssue {
                field: String::new(),
                kind: FieldIssueKind::Invalid,
                message: "the arguments do not match the input schema".into(),
            });
        }
        Err(out)
    }

    /// The payload a handler should deserialize: `{}` in place of `null` for object schemas.
    pub fn normalize(&self, args: Value) -> Value {
        if args.is_null() && self.object_root {
            Value::Object(Map::new())
        } else {
            args
        }
    }

    /// An example of valid arguments: each required property with a placeholder of its type.
    pub fn example_input(&self) -> &Value {
        &self.example
    }

    /// The failure to report for `issues` found in `args` for `tool`.
    pub fn failure(&self, tool: &ToolIdent, args: &Value, issues: Vec<FieldIssue>) -> ToolFailure {
        invalid_arguments(tool, args, issues, Some(&self.example))
    }
}

/// Whether `schema` describes a JSON object at its root.
fn is_object_schema(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => schema.get("properties").is_some(),
    }
}

/// The `invalid_arguments` failure for `issues`, with its retry hint.
///
/// The hint's reason is `missing_fields` (listing the missing fields as JSON
/// pointers, with `example` as the example input) when a required field is
/// missing, and `invalid_arguments` otherwise.
pub fn invalid_arguments(
    tool: &ToolIdent,
    args: &Value,
    issues: Vec<FieldIssue>,
    example: Option<&Value>,
) -> ToolFailure {
    let hint = RetryHint::for_issues(tool, args, &issues, example);
    let mut message = format!("invalid arguments for `{tool}`:");
    for issue in &issues {
        let field = if issue.field.is_empty() {
            "(root)"
        } else {
            &issue.field
        };
        message.push_str(&format!(" {field}: {};", issue.message));
    }
    ToolFailure {
        error: ToolError::new(ToolError::INVALID_ARGUMENTS, message).with_field_issues(issues),
        retry_hint: Some(hint),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use weft_core::tool::RetryReason;

    use super::*;

    fn add_schema() -> Value {
        json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": false
        })
    }

    #[test]
    fn valid_arguments_pass() {
        let v = ArgsValidator::compile(&add_schema()).unwrap();
        assert_eq!(v.validate(&json!({"a": 1, "b": 2})), Ok(()));
    }

    #[test]
    fn null_payload_with_required_fields_reports_each_missing_field() {
        let v = ArgsValidator::compile(&add_schema()).unwrap();
        let issues = v.validate(&Value::Null).unwrap_err();
        let fields: Vec<_> = issues.iter().map(|i| (i.field.as_str(), i.kind)).collect();
        assert!(fields.contains(&("/a", FieldIssueKind::Missing)));
        assert!(fields.contains(&("/b", FieldIssueKind::Missing)));
    }

    #[test]
    fn null_payload_without_required_fields_passes() {
        let v = ArgsValidator::compile(
            &json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        )
        .unwrap();
        assert_eq!(v.validate(&Value::Null), Ok(()));
        assert_eq!(v.normalize(Value::Null), json!({}));
    }

    #[test]
    fn kinds_are_mapped() {
        let v = ArgsValidator::compile(&add_schema()).unwrap();
        let issues = v
            .validate(&json!({"a": "x", "b": 1, "c": true}))
            .unwrap_err();
        assert!(issues.contains(&FieldIssue {
            field: "/a".into(),
            kind: FieldIssueKind::WrongType,
            message: "expected integer, got string".into(),
        }));
        assert!(
            issues
                .iter()
                .any(|i| i.field == "/c" && i.kind == FieldIssueKind::Unexpected)
        );
        let issues = ArgsValidator::compile(&json!({"type": "integer", "minimum": 3}))
            .unwrap()
            .validate(&json!(1))
            .unwrap_err();
        assert_eq!(issues[0].kind, FieldIssueKind::Invalid);
        assert_eq!(issues[0].field, "");
    }

    #[test]
    fn nested_and_escaped_pointers() {
        let schema = json!({
            "type": "object",
            "properties": {"items": {"type": "array", "items": {
                "type": "object", "properties": {"a/b": {"type": "string"}}, "required": ["a/b"]}}},
        });
        let issues = ArgsValidator::compile(&schema)
            .unwrap()
            .validate(&json!({"items": [{}]}))
            .unwrap_err();
        assert_eq!(issues[0].field, "/items/0/a~1b");
        assert_eq!(issues[0].kind, FieldIssueKind::Missing);
    }

    #[test]
    fn missing_fields_hint_carries_an_example() {
        let v = ArgsValidator::compile(&add_schema()).unwrap();
        let args = json!({"a": 1});
        let issues = v.validate(&args).unwrap_err();
        let failure = v.failure(&ToolIdent::from("calc.add"), &args, issues);
        assert_eq!(failure.error.code, ToolError::INVALID_ARGUMENTS);
        let hint = failure.retry_hint.unwrap();
        assert_eq!(hint.reason, RetryReason::MissingFields);
        assert_eq!(hint.missing_fields, vec!["/b".to_string()]);
        assert_eq!(hint.example_input, Some(json!({"a": 0, "b": 0})));
        assert_eq!(hint.prior_input, Some(args));
        assert_eq!(hint.tool, Some(ToolIdent::from("calc.add")));
    }

    #[test]
    fn wrong_type_hint_is_invalid_arguments() {
        let v = ArgsValidator::compile(&add_schema()).unwrap();
        let args = json!({"a": 1, "b": "2"});
        let failure = v.failure(
            &ToolIdent::from("calc.add"),
            &args,
            v.validate(&args).unwrap_err(),
        );
        let hint = failure.retry_hint.unwrap();
        assert_eq!(hint.reason, RetryReason::InvalidArguments);
        assert_eq!(hint.example_input, None);
    }

    #[test]
    fn bad_schema_is_an_error() {
        assert!(ArgsValidator::compile(&json!({"type": 12})).is_err());
    }
}
