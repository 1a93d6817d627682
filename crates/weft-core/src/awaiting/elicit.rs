//! The elicitation await item: a running tool's question (a form of typed
//! fields, or a URL to open), and the check of its answers against the
//! form's requested schema (required fields, primitive types, offered values).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::AnswerError;
use crate::elicitation::{ElicitationAction, ElicitationMode};
use crate::ids::{AwaitItemId, ToolCallId};
use crate::tool::ToolIdent;

/// A running tool call asking the human for input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Elicitation {
    /// The item's id.
    pub id: AwaitItemId,
    /// The call that asks (it keeps running while it waits).
    pub tool_call_id: ToolCallId,
    /// The tool that asks.
    pub tool: ToolIdent,
    /// What it asks, in words.
    pub message: String,
    /// A form to fill in, or a URL to open.
    #[serde(flatten)]
    pub mode: ElicitationMode,
}

impl Elicitation {
    /// Checks an answer: accepting a form needs content that fits its
    /// schema; declining, cancelling and accepting a URL carry no content.
    pub(super) fn validate(
        &self,
        action: ElicitationAction,
        content: Option<&Value>,
    ) -> Result<(), AnswerError> {
        match (action, &self.mode) {
            (ElicitationAction::Accept, ElicitationMode::Form { requested_schema }) => {
                match content {
                    Some(Value::Object(fields)) => check_form(requested_schema, fields),
                    _ => Err(AnswerError::ElicitationContentNotObject),
                }
            }
            (action, _) if content.is_some() => {
                Err(AnswerError::ElicitationContentNotAllowed { action })
            }
            _ => Ok(()),
        }
    }
}

fn check_form(schema: &Value, fields: &Map<String, Value>) -> Result<(), AnswerError> {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        if fields.get(name).is_none_or(Value::is_null) {
            return Err(AnswerError::MissingElicitationField {
                field: name.to_owned(),
            });
        }
    }
    for (name, value) in fields {
        let Some(property) = properties.get(name) else {
            return Err(AnswerError::UnknownElicitationField {
                field: name.clone(),
            });
        };
        check_field(name, property, value)?;
    }
    Ok(())
}

fn check_field(name: &str, property: &Value, value: &Value) -> Result<(), AnswerError> {
    let wrong = |expected: &str| AnswerError::ElicitationFieldType {
        field: name.to_owned(),
        expected: expected.to_owned(),
    };
    match property.get("type").and_then(Value::as_str) {
        Some("string") => {
            let s = value.as_str().ok_or_else(|| wrong("a string"))?;
            check_offered(name, property, s)
        }
        Some("number") if !value.is_number() => Err(wrong("a number")),
        Some("integer") if !(value.is_i64() || value.is_u64()) => Err(wrong("an integer")),
        Some("boolean") if !value.is_boolean() => Err(wrong("a boolean")),
        Some("array") => {
            let items = value
                .as_array()
                .ok_or_else(|| wrong("an array of strings"))?;
            let offered = property.get("items").unwrap_or(&Value::Null);
            for item in items {
                let s = item.as_str().ok_or_else(|| wrong("an array of strings"))?;
                check_offered(name, offered, s)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// A string against `enum`, or the `const`s of `oneOf`/`anyOf`, when the property lists them.
fn check_offered(name: &str, property: &Value, value: &str) -> Result<(), AnswerError> {
    let mut offered = property
        .get("enum")
        .and_then(Value::as_array)
        .map(|e| e.iter().filter_map(Value::as_str).collect::<Vec<_>>());
    for key in ["oneOf", "anyOf"] {
        if let Some(options) = property.get(key).and_then(Value::as_array) {
            let consts = options
                .iter()
                .filter_map(|o| o.get("const").and_then(Value::as_str));
            offered.get_or_insert_with(Vec::new).extend(consts);
        }
    }
    match offered {
        Some(values) if !values.contains(&value) => Err(AnswerError::ElicitationValueNotOffered {
            field: name.to_owned(),
            value: value.to_owned(),
        }),
        _ => Ok(()),
    }
}
