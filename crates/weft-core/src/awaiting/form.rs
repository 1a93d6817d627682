//! A form's answer against its requested schema, MCP's restricted flat
//! object of primitive properties: the properties' `default`s (SEP-1034)
//! fill in the fields the answer leaves out, then every field is checked:
//! required, of its type, one of the values offered (`enum`, or the
//! `const`s of `oneOf`/`anyOf`), and within its property's constraints
//! (`minimum`/`maximum`, `minLength`/`maxLength`, `format`,
//! `minItems`/`maxItems`).

use serde_json::{Map, Value};

use super::AnswerError;
use super::format;

/// `content` with the defaults of the fields it leaves out (absent or
/// `null`), then checked against `schema`; the completed content.
pub fn complete_form(schema: &Value, content: &Value) -> Result<Value, AnswerError> {
    let Value::Object(fields) = content else {
        return Err(AnswerError::ElicitationContentNotObject);
    };
    let fields = with_defaults(schema, fields.clone());
    check_form(schema, &fields)?;
    Ok(Value::Object(fields))
}

/// `fields` with the default of every property they leave out.
pub(super) fn with_defaults(schema: &Value, mut fields: Map<String, Value>) -> Map<String, Value> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return fields;
    };
    for (name, property) in properties {
        let Some(default) = property.get("default").filter(|d| !d.is_null()) else {
            continue;
        };
        if fields.get(name).is_none_or(Value::is_null) {
            fields.insert(name.clone(), default.clone());
        }
    }
    fields
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
            check_offered(name, property, s)?;
            check_string(name, property, s)
        }
        Some("number") => {
            let n = value.as_f64().ok_or_else(|| wrong("a number"))?;
            check_range(name, property, n)
        }
        Some("integer") => {
            if !(value.is_i64() || value.is_u64()) {
                return Err(wrong("an integer"));
            }
            check_range(name, property, value.as_f64().unwrap_or_default())
        }
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
            check_count(name, property, "minItems", "maxItems", items.len(), "items")
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

/// A string's length (in characters) and `format`.
fn check_string(name: &str, property: &Value, value: &str) -> Result<(), AnswerError> {
    let length = value.chars().count();
    check_count(
        name,
        property,
        "minLength",
        "maxLength",
        length,
        "characters",
    )?;
    let Some(wanted) = property.get("format").and_then(Value::as_str) else {
        return Ok(());
    };
    match format::matches(wanted, value) {
        Some(false) => Err(broken(name, "format", format!("is not a valid {wanted}"))),
        _ => Ok(()),
    }
}

/// A number against `minimum`, `maximum`, `exclusiveMinimum` and `exclusiveMaximum`.
fn check_range(name: &str, property: &Value, n: f64) -> Result<(), AnswerError> {
    let bound = |key: &str| property.get(key).and_then(Value::as_f64);
    let shown = |key: &str| {
        property
            .get(key)
            .map(ToString::to_string)
            .unwrap_or_default()
    };
    if bound("minimum").is_some_and(|m| n < m) {
        return Err(broken(
            name,
            "minimum",
            format!("must be at least {}", shown("minimum")),
        ));
    }
    if bound("maximum").is_some_and(|m| n > m) {
        return Err(broken(
            name,
            "maximum",
            format!("must be at most {}", shown("maximum")),
        ));
    }
    if bound("exclusiveMinimum").is_some_and(|m| n <= m) {
        let detail = format!("must be more than {}", shown("exclusiveMinimum"));
        return Err(broken(name, "exclusiveMinimum", detail));
    }
    if bound("exclusiveMaximum").is_some_and(|m| n >= m) {
        let detail = format!("must be less than {}", shown("exclusiveMaximum"));
        return Err(broken(name, "exclusiveMaximum", detail));
    }
    Ok(())
}

/// A count (a string's characters, an array's items) against its bounds.
fn check_count(
    name: &str,
    property: &Value,
    min: &str,
    max: &str,
    count: usize,
    unit: &str,
) -> Result<(), AnswerError> {
    let bound = |key: &str| property.get(key).and_then(Value::as_u64);
    let count = u64::try_from(count).unwrap_or(u64::MAX);
    if let Some(m) = bound(min).filter(|&m| count < m) {
        return Err(broken(name, min, format!("needs at least {m} {unit}")));
    }
    if let Some(m) = bound(max).filter(|&m| count > m) {
        return Err(broken(name, max, format!("takes at most {m} {unit}")));
    }
    Ok(())
}

fn broken(name: &str, constraint: &str, detail: String) -> AnswerError {
    AnswerError::ElicitationConstraint {
        field: name.to_owned(),
        constraint: constraint.to_owned(),
        detail,
    }
}
