//! How lines answer each kind of question without a terminal.

use serde_json::json;
use weft_core::awaiting::{AwaitAnswer, AwaitItem, Confirmation, Elicitation};
use weft_core::elicitation::{ElicitationAction, ElicitationMode};

use super::{answer, read};
use crate::cli::ask::AskError;

fn lines(item: &AwaitItem, text: &str) -> Result<AwaitAnswer, AskError> {
    read(item, &mut text.as_bytes())
}

fn form(schema: serde_json::Value) -> AwaitItem {
    AwaitItem::Elicitation(Elicitation {
        id: "e".into(),
        tool_call_id: "c".into(),
        tool: "mcp.ask".into(),
        message: "Who?".into(),
        mode: ElicitationMode::Form {
            requested_schema: schema,
        },
    })
}

#[test]
fn a_confirmation_takes_y_or_n_with_a_reason() {
    let item = AwaitItem::Confirmation(Confirmation {
        id: "c".into(),
        tool_name: "fs.delete".into(),
        tool_call_id: "1".into(),
        payload: json!({}),
    });
    let denied = lines(&item, "no: too risky\n").unwrap();
    assert_eq!(
        denied,
        AwaitAnswer::Confirmation {
            approved: false,
            reason: Some("too risky".into())
        }
    );
    let approved = lines(&item, "Y\n").unwrap();
    assert!(matches!(
        approved,
        AwaitAnswer::Confirmation { approved: true, .. }
    ));
    let err = lines(&item, "maybe\ny\n").unwrap_err().to_string();
    assert_eq!(err, "`maybe` is not y, yes, n or no");
    assert!(matches!(lines(&item, ""), Err(AskError::Closed)));
}

#[test]
fn a_form_takes_a_json_object_its_only_required_field_or_a_refusal() {
    let item = form(json!({"type": "object", "properties": {
        "name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name"]}));
    let accepted = |content| AwaitAnswer::Elicitation {
        action: ElicitationAction::Accept,
        content: Some(content),
    };
    assert_eq!(
        lines(&item, "{\"name\": \"Ada\", \"age\": 36}\n").unwrap(),
        accepted(json!({"name": "Ada", "age": 36}))
    );
    assert_eq!(
        lines(&item, "Ada\n").unwrap(),
        accepted(json!({"name": "Ada"}))
    );
    assert_eq!(
        lines(&item, "decline\n").unwrap(),
        AwaitAnswer::Elicitation {
            action: ElicitationAction::Decline,
            content: None
        }
    );
    // A JSON object that breaks the form is refused, not asked again.
    let err = lines(&item, "{\"age\": 36}\n").unwrap_err().to_string();
    assert!(err.starts_with("the answer does not fit: "), "{err}");
    // Two required fields: only a JSON object answers.
    let two = form(json!({"type": "object", "properties": {
        "a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a", "b"]}));
    let err = lines(&two, "x\n").unwrap_err().to_string();
    assert_eq!(err, "`x` is not a JSON object of the form's fields");
    // A number picks from a field's enum.
    let tone = form(json!({"type": "object", "properties": {
        "tone": {"type": "string", "enum": ["formal", "plain"]}}, "required": ["tone"]}));
    assert_eq!(
        lines(&tone, "2\n").unwrap(),
        accepted(json!({"tone": "plain"}))
    );
}

#[test]
fn a_whole_answer_as_json_is_taken_as_it_is() {
    let item = form(json!({"type": "object", "properties": {"name": {"type": "string"}}}));
    let whole = r#"{"kind": "elicitation", "action": "cancel"}"#;
    let mut given = Some(whole.to_owned());
    let got = answer(&item, &mut || given.take().ok_or(AskError::Closed)).unwrap();
    assert_eq!(
        got,
        AwaitAnswer::Elicitation {
            action: ElicitationAction::Cancel,
            content: None
        }
    );
}
