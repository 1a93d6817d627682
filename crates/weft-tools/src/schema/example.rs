//! Example arguments generated from a JSON Schema, for retry hints.

use serde_json::{Map, Value};

/// How deep nested objects, references and combinators are followed.
const MAX_DEPTH: usize = 8;

/// An example of arguments for `schema`: each required property gets a
/// placeholder of its type (its `const`, first `enum` value, `default` or
/// first `examples` entry when the schema gives one).
pub fn example_input(schema: &Value) -> Value {
    example(schema, schema, None, 0)
}

fn example(schema: &Value, root: &Value, name: Option<&str>, depth: usize) -> Value {
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    let Value::Object(obj) = schema else {
        return Value::Null;
    };
    for key in ["const", "default"] {
        if let Some(v) = obj.get(key) {
            return v.clone();
        }
    }
    for key in ["enum", "examples"] {
        if let Some(v) = obj
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
        {
            return v.clone();
        }
    }
    if let Some(target) = obj
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve(root, r))
    {
        return example(target, root, name, depth + 1);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = obj.get(key).and_then(Value::as_array) {
            let first = branches
                .iter()
                .map(|b| example(b, root, name, depth + 1))
                .find(|v| !v.is_null());
            return first.unwrap_or(Value::Null);
        }
    }
    if let Some(parts) = obj.get("allOf").and_then(Value::as_array) {
        let mut merged = Map::new();
        for part in parts {
            match example(part, root, name, depth + 1) {
                Value::Object(m) => merged.extend(m),
                other if parts.len() == 1 => return other,
                _ => {}
            }
        }
        return Value::Object(merged);
    }
    let ty = match obj.get("type") {
        Some(Value::String(t)) => Some(t.as_str()),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null"),
        _ if obj.contains_key("properties") => Some("object"),
        _ => None,
    };
    match ty {
        Some("object") => object_example(obj, root, depth),
        Some("array") => array_example(obj, root, name, depth),
        Some("string") => Value::String(format!("<{}>", name.unwrap_or("string"))),
        Some("integer") => obj
            .get("minimum")
            .filter(|m| m.is_i64() || m.is_u64())
            .cloned()
            .unwrap_or(Value::from(0)),
        Some("number") => obj.get("minimum").cloned().unwrap_or(Value::from(0.0)),
        Some("boolean") => Value::Bool(false),
        _ => Value::Null,
    }
}

fn object_example(obj: &Map<String, Value>, root: &Value, depth: usize) -> Value {
    let mut out = Map::new();
    let props = obj.get("properties").and_then(Value::as_object);
    let required = obj.get("required").and_then(Value::as_array);
    for field in required.into_iter().flatten().filter_map(Value::as_str) {
        let value = props
            .and_then(|p| p.get(field))
            .map_or(Value::Null, |s| example(s, root, Some(field), depth + 1));
        out.insert(field.to_owned(), value);
    }
    Value::Object(out)
}

fn array_example(
    obj: &Map<String, Value>,
    root: &Value,
    name: Option<&str>,
    depth: usize,
) -> Value {
    let min_items = obj.get("minItems").and_then(Value::as_u64).unwrap_or(0);
    match obj.get("items") {
        Some(items) if min_items > 0 => {
            let item = example(items, root, name, depth + 1);
            Value::Array((0..min_items.min(4)).map(|_| item.clone()).collect())
        }
        _ => Value::Array(Vec::new()),
    }
}

/// Resolves a local reference (`#/$defs/Name`); remote references are not followed.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    reference
        .strip_prefix('#')
        .and_then(|pointer| root.pointer(pointer))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn required_properties_get_typed_placeholders() {
        let schema = json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer", "minimum": 1},
                "ratio": {"type": "number"},
                "metric": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "unit": {"enum": ["c", "f"]},
                "note": {"type": ["string", "null"]},
                "optional": {"type": "string"}
            },
            "required": ["city", "days", "ratio", "metric", "tags", "unit", "note"]
        });
        assert_eq!(
            example_input(&schema),
            json!({"city": "<city>", "days": 1, "ratio": 0.0, "metric": false, "tags": [], "unit": "c", "note": "<note>"})
        );
    }

    #[test]
    fn references_and_nested_objects_are_followed() {
        let schema = json!({
            "type": "object",
            "properties": {"where": {"$ref": "#/$defs/Place"}},
            "required": ["where"],
            "$defs": {"Place": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]}}
        });
        assert_eq!(example_input(&schema), json!({"where": {"lat": 0.0}}));
    }

    #[test]
    fn recursive_schemas_terminate() {
        let schema = json!({
            "$ref": "#/$defs/Node",
            "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}, "required": ["next"]}}
        });
        assert!(example_input(&schema).is_object());
    }
}
