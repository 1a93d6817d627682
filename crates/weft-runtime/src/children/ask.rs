//! A child's questions asked through its parent's call: each await item of
//! a child run becomes a question of the parent's running call (an
//! elicitation form, or the child's own elicitation as it is), and the
//! human's response becomes the child's answer.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use weft_core::awaiting::{AwaitAnswer, AwaitItem, Question};
use weft_core::elicitation::{ElicitationAction, ElicitationRequest, ElicitationResponse};

/// The question of the parent's call that stands for `item`; none for an
/// item a human cannot answer (external tool results).
pub(crate) fn question(item: &AwaitItem) -> Option<ElicitationRequest> {
    match item {
        AwaitItem::Clarification(c) => Some(ElicitationRequest::form(
            c.question.clone(),
            json!({
                "type": "object",
                "properties": {"answer": {"type": "string", "description": "Your answer"}},
                "required": ["answer"],
            }),
        )),
        AwaitItem::Confirmation(c) => Some(ElicitationRequest::form(
            format!("Allow `{}` with {}?", c.tool_name, c.payload),
            json!({
                "type": "object",
                "properties": {
                    "approved": {"type": "boolean", "description": "Whether the call may run"},
                    "reason": {"type": "string", "description": "Why, when denied"},
                },
                "required": ["approved"],
            }),
        )),
        AwaitItem::Questions(q) => {
            let properties: Map<String, Value> = q
                .questions
                .iter()
                .map(|q| (q.id.clone(), choice(q)))
                .collect();
            let required: Vec<&str> = q.questions.iter().map(|q| q.id.as_str()).collect();
            Some(ElicitationRequest::form(
                q.title
                    .clone()
                    .unwrap_or_else(|| format!("Questions about `{}`", q.tool_name)),
                json!({"type": "object", "properties": properties, "required": required}),
            ))
        }
        AwaitItem::Elicitation(e) => Some(ElicitationRequest {
            message: e.message.clone(),
            mode: e.mode.clone(),
        }),
        AwaitItem::ExternalTools(_) => None,
    }
}

fn choice(q: &Question) -> Value {
    let ids: Vec<&str> = q.options.iter().map(|o| o.id.as_str()).collect();
    let labels: Vec<String> = q
        .options
        .iter()
        .map(|o| format!("{} = {}", o.id, o.label))
        .collect();
    let description = format!("{} ({})", q.prompt, labels.join(", "));
    if q.allow_multiple {
        json!({"type": "array", "items": {"type": "string", "enum": ids}, "description": description})
    } else {
        json!({"type": "string", "enum": ids, "description": description})
    }
}

/// The child's answer to `item` from the human's `response`; `None` when
/// the human dismissed the question, so the child cannot go on.
pub(crate) fn answer(item: &AwaitItem, response: ElicitationResponse) -> Option<AwaitAnswer> {
    let ElicitationResponse { action, content } = response;
    let field = |name: &str| content.as_ref().and_then(|c| c.get(name)).cloned();
    match (item, action) {
        (AwaitItem::Elicitation(_), action) => Some(AwaitAnswer::Elicitation {
            action,
            content: match action {
                ElicitationAction::Accept => content,
                _ => None,
            },
        }),
        (_, ElicitationAction::Cancel) => None,
        (AwaitItem::Confirmation(_), ElicitationAction::Decline) => {
            Some(AwaitAnswer::Confirmation {
                approved: false,
                reason: Some("declined".to_owned()),
            })
        }
        (_, ElicitationAction::Decline) => None,
        (AwaitItem::Clarification(_), ElicitationAction::Accept) => {
            Some(AwaitAnswer::Clarification {
                text: field("answer")?.as_str()?.to_owned(),
            })
        }
        (AwaitItem::Confirmation(_), ElicitationAction::Accept) => {
            Some(AwaitAnswer::Confirmation {
                approved: field("approved")?.as_bool()?,
                reason: field("reason").and_then(|r| r.as_str().map(str::to_owned)),
            })
        }
        (AwaitItem::Questions(q), ElicitationAction::Accept) => {
            let mut answers = BTreeMap::new();
            for question in &q.questions {
                let chosen = match field(&question.id)? {
                    Value::String(s) => vec![s],
                    Value::Array(items) => items
                        .into_iter()
                        .map(|v| v.as_str().map(str::to_owned))
                        .collect::<Option<Vec<_>>>()?,
                    _ => return None,
                };
                answers.insert(question.id.clone(), chosen);
            }
            Some(AwaitAnswer::Questions { answers })
        }
        (AwaitItem::ExternalTools(_), _) => None,
    }
}

#[cfg(test)]
mod tests {
    use weft_core::AwaitItemId;
    use weft_core::awaiting::{Clarification, Confirmation, QuestionOption, Questions};
    use weft_core::elicitation::ElicitationMode;
    use weft_core::tool::ToolIdent;

    use super::*;

    fn accept(content: Value) -> ElicitationResponse {
        ElicitationResponse {
            action: ElicitationAction::Accept,
            content: Some(content),
        }
    }

    #[test]
    fn each_kind_round_trips_through_a_form_the_machine_accepts() {
        let clarification = AwaitItem::Clarification(Clarification {
            id: AwaitItemId::new("c"),
            question: "Which city?".into(),
            missing_fields: vec![],
            restrict_to_tool: None,
            example_input: None,
            clarifying_prompt: None,
        });
        let asked = question(&clarification).unwrap();
        assert_eq!(asked.message, "Which city?");
        assert_eq!(
            answer(&clarification, accept(json!({"answer": "Oslo"}))),
            Some(AwaitAnswer::Clarification {
                text: "Oslo".into()
            })
        );
        assert_eq!(answer(&clarification, accept(json!({}))), None);

        let confirmation = AwaitItem::Confirmation(Confirmation {
            id: AwaitItemId::new("k"),
            tool_name: ToolIdent::new("fs.delete"),
            tool_call_id: weft_core::ToolCallId::new("call_1"),
            payload: json!({"path": "/tmp/x"}),
        });
        assert!(
            question(&confirmation)
                .unwrap()
                .message
                .contains("fs.delete")
        );
        assert_eq!(
            answer(
                &confirmation,
                ElicitationResponse {
                    action: ElicitationAction::Decline,
                    content: None
                }
            ),
            Some(AwaitAnswer::Confirmation {
                approved: false,
                reason: Some("declined".into())
            })
        );

        let option = |id: &str| QuestionOption {
            id: id.into(),
            label: id.to_uppercase(),
        };
        let questions = AwaitItem::Questions(Questions {
            id: AwaitItemId::new("q"),
            tool_name: ToolIdent::new("t.pick"),
            tool_call_id: weft_core::ToolCallId::new("call_2"),
            payload: json!({}),
            title: None,
            questions: vec![
                Question {
                    id: "size".into(),
                    prompt: "Size?".into(),
                    options: vec![option("s"), option("m")],
                    allow_multiple: false,
                },
                Question {
                    id: "extras".into(),
                    prompt: "Extras?".into(),
                    options: vec![option("cheese"), option("ham")],
                    allow_multiple: true,
                },
            ],
        });
        let asked = question(&questions).unwrap();
        let ElicitationMode::Form { requested_schema } = &asked.mode else {
            panic!("{asked:?}");
        };
        assert_eq!(
            requested_schema["properties"]["size"]["enum"],
            json!(["s", "m"])
        );
        assert_eq!(requested_schema["properties"]["extras"]["type"], "array");
        let got = answer(
            &questions,
            accept(json!({"size": "m", "extras": ["cheese", "ham"]})),
        )
        .unwrap();
        // The child's machine accepts what the form produced.
        questions.validate(&got).unwrap();
        // Cancelling any question stops the child.
        assert_eq!(
            answer(
                &questions,
                ElicitationResponse {
                    action: ElicitationAction::Cancel,
                    content: None
                }
            ),
            None
        );
    }
}
