//! The `ask_user` tool the model planner may offer: its spec, and the
//! question a call of it asks. A call with only a `question` is a
//! free-text clarification; with `options` it is a multiple-choice question
//! whose chosen options come back to the model as the call's result.

use std::collections::BTreeSet;

use weft_core::awaiting::{AwaitItem, Clarification, Question, QuestionOption, Questions};
use weft_core::ids::AwaitItemId;
use weft_core::model::ModelToolCall;
use weft_core::tool::{ToolIdent, ToolSpec};

/// The name of the tool through which the model asks the user a question
/// (see [`ModelPlannerConfig::ask_tool`](crate::ModelPlannerConfig)); weft
/// tool names always hold a dot, so it names no other tool.
pub const ASK_TOOL: &str = "ask_user";

/// Longest question the model may ask through [`ASK_TOOL`], in characters.
pub const MAX_QUESTION: usize = 2_000;

/// Most options one multiple-choice question may offer.
pub const MAX_OPTIONS: usize = 10;

/// Longest option, in characters.
pub const MAX_OPTION: usize = 200;

/// The id of the one question of a multiple-choice call; the result the
/// model gets is `{"choice": [chosen options]}`.
pub const CHOICE: &str = "choice";

/// The spec of [`ASK_TOOL`].
pub(super) fn ask_tool_spec() -> ToolSpec {
    ToolSpec {
        name: ASK_TOOL.into(),
        description: "Ask the user a question when you need information only they can give; \
                      the run waits for their answer. Give `options` to let them pick \
                      (their choice comes back as this call's result), or leave them out \
                      for a free-text answer."
            .into(),
        input_schema: serde_json::json!({
            "type": "object",
            "properties": {
                "question": {"type": "string", "minLength": 1, "maxLength": MAX_QUESTION},
                "options": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1, "maxLength": MAX_OPTION},
                    "minItems": 2,
                    "maxItems": MAX_OPTIONS,
                    "uniqueItems": true
                },
                "allow_multiple": {"type": "boolean"}
            },
            "required": ["question"],
            "additionalProperties": false,
        }),
        output_schema: None,
        annotations: weft_core::tool::ToolAnnotations::default(),
        tags: vec![],
    }
}

/// What a well-formed call of [`ASK_TOOL`] asks: a clarification, or a
/// multiple-choice question tied to the call. `None` for any other call,
/// and for a call whose arguments break the spec (the model is then told
/// so like for any invalid call).
pub(super) fn asked(call: &ModelToolCall) -> Option<AwaitItem> {
    if call.name != ASK_TOOL {
        return None;
    }
    let args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
    let question = args.get("question")?.as_str()?.trim();
    if question.is_empty() || question.chars().count() > MAX_QUESTION {
        return None;
    }
    let Some(options) = args.get("options") else {
        return Some(AwaitItem::Clarification(Clarification {
            id: AwaitItemId::new(format!("ask_{}", call.id)),
            question: question.to_owned(),
            missing_fields: Vec::new(),
            restrict_to_tool: None,
            example_input: None,
            clarifying_prompt: None,
        }));
    };
    let options = choices(options)?;
    let allow_multiple = match args.get("allow_multiple") {
        None => false,
        Some(v) => v.as_bool()?,
    };
    Some(AwaitItem::Questions(Questions {
        id: AwaitItemId::new(format!("ask_{}", call.id)),
        tool_name: ToolIdent::new(ASK_TOOL),
        tool_call_id: call.id.clone(),
        payload: args.clone(),
        title: None,
        questions: vec![Question {
            id: CHOICE.to_owned(),
            prompt: question.to_owned(),
            // An option is its own id: the model reads back what it offered.
            options: options
                .into_iter()
                .map(|o| QuestionOption {
                    id: o.clone(),
                    label: o,
                })
                .collect(),
            allow_multiple,
        }],
    }))
}

/// The options of a multiple-choice call, when they keep to the spec.
fn choices(options: &serde_json::Value) -> Option<Vec<String>> {
    let list = options.as_array()?;
    if !(2..=MAX_OPTIONS).contains(&list.len()) {
        return None;
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(list.len());
    for o in list {
        let o = o.as_str()?.trim();
        if o.is_empty() || o.chars().count() > MAX_OPTION || !seen.insert(o) {
            return None;
        }
        out.push(o.to_owned());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(args: serde_json::Value) -> ModelToolCall {
        ModelToolCall {
            id: "c1".into(),
            name: ASK_TOOL.into(),
            arguments: args.to_string(),
        }
    }

    #[test]
    fn a_question_alone_is_a_clarification() {
        let item = asked(&call(serde_json::json!({"question": " Which city? "})));
        let Some(AwaitItem::Clarification(c)) = item else {
            panic!("{item:?}")
        };
        assert_eq!(c.question, "Which city?");
    }

    #[test]
    fn options_make_a_multiple_choice_question_of_the_call() {
        let item = asked(&call(serde_json::json!({
            "question": "Which city?", "options": ["Oslo", "Bergen"], "allow_multiple": true
        })));
        let Some(AwaitItem::Questions(q)) = item else {
            panic!("{item:?}")
        };
        assert_eq!(q.tool_call_id.as_str(), "c1");
        assert_eq!(q.questions.len(), 1);
        let ids: Vec<&str> = q.questions[0]
            .options
            .iter()
            .map(|o| o.id.as_str())
            .collect();
        assert_eq!(ids, ["Oslo", "Bergen"]);
        assert!(q.questions[0].allow_multiple);
    }

    #[test]
    fn options_that_break_the_spec_are_not_a_question() {
        for args in [
            serde_json::json!({"question": "?", "options": ["one"]}),
            serde_json::json!({"question": "?", "options": ["a", "a"]}),
            serde_json::json!({"question": "?", "options": ["a", ""]}),
            serde_json::json!({"question": "?", "options": ["a", 2]}),
            serde_json::json!({"question": "?", "options": "a,b"}),
            serde_json::json!({"question": "?", "options": ["a", "b"], "allow_multiple": "yes"}),
            serde_json::json!({"question": "?", "options": (0..11).map(|i| i.to_string()).collect::<Vec<_>>()}),
            serde_json::json!({"question": "  "}),
        ] {
            assert!(asked(&call(args.clone())).is_none(), "{args}");
        }
    }
}
