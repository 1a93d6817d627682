//! Property tests: validation never panics on arbitrary payloads, and every
//! violation yields at least one field issue.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::ArgsValidator;

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[a-z/~]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("a".to_string()),
                    Just("b".to_string()),
                    Just("items".to_string()),
                    "[a-z]{1,3}"
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn schemas() -> Vec<ArgsValidator> {
    let schemas = [
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
               "required": ["a", "b"], "additionalProperties": false}),
        json!({"type": "object", "properties": {
            "items": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/Item"}},
            "a": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]},
            "b": {"enum": ["x", "y"]}},
            "required": ["items"],
            "$defs": {"Item": {"type": "object", "properties": {"a": {"type": "number", "minimum": 0}}, "required": ["a"]}}}),
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "unevaluatedProperties": false}),
        json!({"oneOf": [{"type": "integer"}, {"type": "object", "properties": {"b": false}}]}),
    ];
    schemas
        .iter()
        .filter_map(|s| ArgsValidator::compile(s).ok())
        .collect()
}

proptest! {
    #[test]
    fn validation_never_panics_and_violations_have_issues(payload in arb_json()) {
        let validators = schemas();
        prop_assert_eq!(validators.len(), 4);
        for v in &validators {
            if let Err(issues) = v.validate(&payload) {
                prop_assert!(!issues.is_empty());
                for issue in &issues {
                    prop_assert!(issue.field.is_empty() || issue.field.starts_with('/'));
                }
            }
        }
    }
}
