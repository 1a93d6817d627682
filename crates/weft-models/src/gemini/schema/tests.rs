use serde_json::json;

use super::*;

#[test]
fn a_schemars_schema_translates_to_the_subset() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "AddArgs",
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "a": {"type": "number", "format": "double"},
            "b": {"type": ["integer", "null"], "format": "uint32", "minimum": 0},
            "unit": {"$ref": "#/$defs/Unit", "description": "The unit"},
            "mode": {"const": "fast"},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
            "either": {"oneOf": [{"type": "string"}, {"type": "number"}]}
        },
        "required": ["a"],
        "$defs": {"Unit": {"type": "string", "enum": ["m", "km"]}}
    });
    let out = translate("calc__add", &schema).unwrap().unwrap();
    assert_eq!(
        out,
        json!({
            "title": "AddArgs",
            "type": "OBJECT",
            "properties": {
                "a": {"type": "NUMBER", "format": "double"},
                "b": {"type": "INTEGER", "nullable": true, "minimum": 0},
                "unit": {"type": "STRING", "enum": ["m", "km"], "description": "The unit"},
                "mode": {"type": "STRING", "enum": ["fast"]},
                "tags": {"type": "ARRAY", "items": {"type": "STRING"}},
                "either": {"anyOf": [{"type": "STRING"}, {"type": "NUMBER"}]}
            },
            "required": ["a"]
        })
    );
}

#[test]
fn a_tool_without_arguments_declares_no_parameters() {
    let schema = json!({"type": "object", "properties": {}});
    assert_eq!(translate("clock__now", &schema).unwrap(), None);
    assert_eq!(
        translate("clock__now", &json!({"type": "object"})).unwrap(),
        None
    );
}

#[test]
fn what_cannot_be_translated_is_a_typed_error_naming_tool_and_keyword() {
    let cases = [
        (
            json!({"type": "object", "properties": {"x": {"not": {"type": "string"}}}}),
            "not",
            "/properties/x/not",
        ),
        (
            json!({"type": "object", "properties": {"n": {"$ref": "#"}}}),
            "$ref",
            "/properties/n/$ref",
        ),
        (
            json!({"$ref": "https://example.com/schema.json"}),
            "$ref",
            "/$ref",
        ),
        (json!({"type": "integer", "enum": [1, 2]}), "enum", "/enum"),
        (
            json!({"allOf": [{"type": "string"}, {"minLength": 1}]}),
            "allOf",
            "/allOf",
        ),
        (
            json!({"type": "object", "patternProperties": {"^x": {}}}),
            "patternProperties",
            "/patternProperties",
        ),
    ];
    for (schema, keyword, path) in cases {
        let err = translate("t__x", &schema).unwrap_err();
        assert_eq!(
            (err.tool.as_str(), err.keyword.as_str()),
            ("t__x", keyword),
            "{schema}"
        );
        assert!(err.path.starts_with(path), "{schema}: {}", err.path);
        assert!(err.to_string().contains(&format!("`{keyword}`")), "{err}");
    }
}
