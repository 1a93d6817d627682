//! Why an answer was rejected: [`AnswerError`], one variant per rule, each
//! naming what it is about (a question, an option, a call, a form field).

use serde::{Deserialize, Serialize};

use super::AwaitKind;
use crate::elicitation::ElicitationAction;
use crate::ids::ToolCallId;

/// Why an answer was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum AnswerError {
    /// The answer is of another kind than the item.
    #[error("item expects a {expected} answer, got {got}")]
    WrongKind {
        /// What the item takes.
        expected: AwaitKind,
        /// What was given.
        got: AwaitKind,
    },
    /// A clarification answer was blank.
    #[error("clarification answer is empty")]
    EmptyClarification,
    /// An answer names a question the item does not ask.
    #[error("unknown question id `{question}`")]
    UnknownQuestion {
        /// The question id given.
        question: String,
    },
    /// A question was left unanswered.
    #[error("question `{question}` has no answer")]
    MissingQuestion {
        /// The question id.
        question: String,
    },
    /// Several options were chosen for a single-choice question.
    #[error("question `{question}` allows a single option")]
    SingleChoiceOnly {
        /// The question id.
        question: String,
    },
    /// An option was chosen that the question does not offer.
    #[error("option `{option}` is not offered by question `{question}`")]
    OptionNotOffered {
        /// The question id.
        question: String,
        /// The option id given.
        option: String,
    },
    /// The same option was chosen twice.
    #[error("option `{option}` chosen twice for question `{question}`")]
    DuplicateOption {
        /// The question id.
        question: String,
        /// The option id.
        option: String,
    },
    /// A result names a call the item does not hold.
    #[error("unknown external tool call `{tool_call_id}`")]
    UnknownToolCall {
        /// The call id given.
        tool_call_id: ToolCallId,
    },
    /// A call got two results.
    #[error("external tool call `{tool_call_id}` answered twice")]
    DuplicateToolCall {
        /// The call id.
        tool_call_id: ToolCallId,
    },
    /// A call got no result.
    #[error("external tool call `{tool_call_id}` has no result")]
    MissingToolCall {
        /// The call id.
        tool_call_id: ToolCallId,
    },
    /// A declined or cancelled elicitation (or an accepted URL one) carries content.
    #[error("an elicitation answered `{action}` carries no content")]
    ElicitationContentNotAllowed {
        /// The action given.
        action: ElicitationAction,
    },
    /// An accepted form's content is missing or not a JSON object.
    #[error("an accepted form needs `content`, a JSON object of its fields")]
    ElicitationContentNotObject,
    /// A field the form requires has no value.
    #[error("form field `{field}` is required")]
    MissingElicitationField {
        /// The field.
        field: String,
    },
    /// A value for a field the form does not ask.
    #[error("form field `{field}` is not asked")]
    UnknownElicitationField {
        /// The field.
        field: String,
    },
    /// A field's value has the wrong type.
    #[error("form field `{field}` must be {expected}")]
    ElicitationFieldType {
        /// The field.
        field: String,
        /// The type it takes (`string`, `number`, `integer`, `boolean`, `array of strings`).
        expected: String,
    },
    /// A field's value is not one of the values it offers.
    #[error("form field `{field}` does not offer `{value}`")]
    ElicitationValueNotOffered {
        /// The field.
        field: String,
        /// The value given.
        value: String,
    },
    /// A field's value breaks a constraint of its property.
    #[error("form field `{field}` {detail} (`{constraint}`)")]
    ElicitationConstraint {
        /// The field.
        field: String,
        /// The keyword broken: `minimum`, `maximum`, `exclusiveMinimum`,
        /// `exclusiveMaximum`, `minLength`, `maxLength`, `format`,
        /// `minItems` or `maxItems`.
        constraint: String,
        /// What the value must be, in words.
        detail: String,
    },
}

impl AnswerError {
    /// The form field the error is about, for elicitation answers.
    pub fn field(&self) -> Option<&str> {
        match self {
            AnswerError::MissingElicitationField { field }
            | AnswerError::UnknownElicitationField { field }
            | AnswerError::ElicitationFieldType { field, .. }
            | AnswerError::ElicitationValueNotOffered { field, .. }
            | AnswerError::ElicitationConstraint { field, .. } => Some(field),
            _ => None,
        }
    }
}
