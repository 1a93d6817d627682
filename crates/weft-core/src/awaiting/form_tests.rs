//! A form answer against every constraint MCP's elicitation schema may
//! carry, and the defaults that fill in what an answer leaves out.

use serde_json::{Value, json};

use super::*;
use crate::elicitation::{ElicitationAction, ElicitationMode};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "quantity": {"type": "integer", "minimum": 1, "maximum": 100},
            "ratio": {"type": "number", "minimum": 0.5, "maximum": 2.5},
            "code": {"type": "string", "minLength": 2, "maxLength": 4},
            "email": {"type": "string", "format": "email"},
            "site": {"type": "string", "format": "uri"},
            "day": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "date-time"},
            "color": {"type": "string", "enum": ["red", "green"]},
            "size": {"type": "string", "oneOf": [
                {"const": "s", "title": "Small"}, {"const": "m", "title": "Medium"}]},
            "tags": {"type": "array", "minItems": 1, "maxItems": 2,
                "items": {"anyOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"},
                    {"const": "c", "title": "C"}]}},
            "plan": {"type": "string", "enum": ["free", "pro"], "default": "free"},
            "notify": {"type": "boolean", "default": true}
        },
        "required": ["quantity", "plan"]
    })
}

fn form() -> Elicitation {
    Elicitation {
        id: "e".into(),
        tool_call_id: "c".into(),
        tool: "mcp.order".into(),
        message: "Order?".into(),
        mode: ElicitationMode::Form {
            requested_schema: schema(),
        },
    }
}

fn accept(content: Value) -> AwaitAnswer {
    AwaitAnswer::Elicitation {
        action: ElicitationAction::Accept,
        content: Some(content),
    }
}

/// The error an answer of `quantity: 5` plus `extra` gets.
fn refused(extra: Value) -> AnswerError {
    let mut content = json!({"quantity": 5});
    if let (Some(fields), Value::Object(more)) = (content.as_object_mut(), extra) {
        fields.extend(more);
    }
    AwaitItem::Elicitation(form())
        .validate(&accept(content))
        .unwrap_err()
}

/// The field and keyword of a broken constraint.
fn constraint(e: &AnswerError) -> (&str, &str) {
    match e {
        AnswerError::ElicitationConstraint {
            field, constraint, ..
        } => (field, constraint),
        other => panic!("expected a broken constraint, got {other:?}"),
    }
}

#[test]
fn every_constraint_refuses_a_value_outside_it_and_names_field_and_keyword() {
    let cases = [
        (json!({"quantity": 500}), ("quantity", "maximum")),
        (json!({"quantity": 0}), ("quantity", "minimum")),
        (json!({"ratio": 0.25}), ("ratio", "minimum")),
        (json!({"ratio": 3}), ("ratio", "maximum")),
        (json!({"code": "x"}), ("code", "minLength")),
        (json!({"code": "toolong"}), ("code", "maxLength")),
        (json!({"email": "not an email"}), ("email", "format")),
        (json!({"site": "no scheme"}), ("site", "format")),
        (json!({"day": "2023-02-29"}), ("day", "format")),
        (json!({"at": "2024-01-01 10:00"}), ("at", "format")),
        (json!({"tags": []}), ("tags", "minItems")),
        (json!({"tags": ["a", "b", "c"]}), ("tags", "maxItems")),
    ];
    for (extra, want) in cases {
        let err = refused(extra.clone());
        assert_eq!(constraint(&err), want, "{extra}");
        assert_eq!(err.field(), Some(want.0));
    }
    let over = refused(json!({"quantity": 500}));
    assert_eq!(
        over.to_string(),
        "form field `quantity` must be at most 100 (`maximum`)"
    );
    let wire = serde_json::to_value(&over).unwrap();
    assert_eq!(wire["error"], "elicitation_constraint");
    assert_eq!(wire["constraint"], "maximum");
}

#[test]
fn enums_and_titled_enums_refuse_values_not_offered() {
    for (extra, field) in [
        (json!({"color": "blue"}), "color"),
        (json!({"size": "Small"}), "size"),
        (json!({"tags": ["d"]}), "tags"),
        (json!({"plan": "gold"}), "plan"),
    ] {
        assert!(
            matches!(refused(extra.clone()),
                AnswerError::ElicitationValueNotOffered { field: ref f, .. } if f == field),
            "{extra}"
        );
    }
}

#[test]
fn values_within_every_constraint_pass() {
    let item = AwaitItem::Elicitation(form());
    let full = json!({
        "quantity": 100, "ratio": 2.5, "code": "ab", "email": "ada@example.com",
        "site": "https://example.test/a", "day": "2024-02-29",
        "at": "2024-02-29T10:00:00Z", "color": "red", "size": "m",
        "tags": ["a", "c"], "plan": "pro", "notify": false
    });
    item.validate(&accept(full.clone())).unwrap();
    item.validate(&accept(json!({"quantity": 1, "code": "abcd"})))
        .unwrap();
    // Nothing to fill in: the answer stays as given.
    assert_eq!(form().with_defaults(accept(full.clone())), accept(full));
}

#[test]
fn defaults_fill_in_what_an_answer_leaves_out_and_satisfy_required() {
    // `plan` is required but has a default: leaving it out is an answer.
    let item = AwaitItem::Elicitation(form());
    item.validate(&accept(json!({"quantity": 3}))).unwrap();
    assert_eq!(
        form().with_defaults(accept(json!({"quantity": 3, "notify": null}))),
        accept(json!({"quantity": 3, "plan": "free", "notify": true}))
    );
    // A value given wins over the default.
    assert_eq!(
        form().with_defaults(accept(
            json!({"quantity": 3, "plan": "pro", "notify": false})
        )),
        accept(json!({"quantity": 3, "plan": "pro", "notify": false}))
    );
    assert_eq!(
        complete_form(&schema(), &json!({"quantity": 3})).unwrap(),
        json!({"quantity": 3, "plan": "free", "notify": true})
    );
    // A field without a default is still required.
    assert_eq!(
        complete_form(&schema(), &json!({})).unwrap_err(),
        AnswerError::MissingElicitationField {
            field: "quantity".into()
        }
    );
    // Declines and URL answers are left alone.
    let declined = AwaitAnswer::Elicitation {
        action: ElicitationAction::Decline,
        content: None,
    };
    assert_eq!(form().with_defaults(declined.clone()), declined);
}
