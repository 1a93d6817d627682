//! The elicitation await item: a running tool's question (a form of typed
//! fields, or a URL to open), and the check of its answers against the
//! form's requested schema ([`super::form`]: defaults, required fields,
//! types, offered values, constraints).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::form;
use super::{AnswerError, AwaitAnswer};
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
    /// schema once its defaults fill in the fields it leaves out;
    /// declining, cancelling and accepting a URL carry no content.
    pub(super) fn validate(
        &self,
        action: ElicitationAction,
        content: Option<&Value>,
    ) -> Result<(), AnswerError> {
        match (action, &self.mode) {
            (ElicitationAction::Accept, ElicitationMode::Form { requested_schema }) => {
                match content {
                    Some(content) => form::complete_form(requested_schema, content).map(drop),
                    _ => Err(AnswerError::ElicitationContentNotObject),
                }
            }
            (action, _) if content.is_some() => {
                Err(AnswerError::ElicitationContentNotAllowed { action })
            }
            _ => Ok(()),
        }
    }

    /// `answer` with the form's defaults for the fields an accepted
    /// content leaves out; any other answer as it is.
    pub fn with_defaults(&self, answer: AwaitAnswer) -> AwaitAnswer {
        match (answer, &self.mode) {
            (
                AwaitAnswer::Elicitation {
                    action: ElicitationAction::Accept,
                    content: Some(Value::Object(fields)),
                },
                ElicitationMode::Form { requested_schema },
            ) => AwaitAnswer::Elicitation {
                action: ElicitationAction::Accept,
                content: Some(Value::Object(form::with_defaults(requested_schema, fields))),
            },
            (answer, _) => answer,
        }
    }
}
