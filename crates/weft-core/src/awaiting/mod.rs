//! Await barriers: what a run waits for from a human or an outside system, and
//! the validation of the answers.
//!
//! An await is an ordered list of [`AwaitItem`]s; the run continues only when
//! every item has a valid [`AwaitAnswer`]. Validation is strict: an answer of
//! the wrong kind, for an unknown question, naming an option that was not
//! offered, or missing an external tool result is rejected and changes nothing.
//! Elicitations (a running tool's questions) are in [`elicit`], their forms'
//! checks in [`form`] and [`format`], the reasons an answer is rejected in
//! [`error`].

mod elicit;
mod error;
mod form;
#[cfg(test)]
mod form_tests;
mod format;

pub use elicit::Elicitation;
pub use error::AnswerError;
pub use form::complete_form;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::elicitation::{ElicitationAction, ElicitationResponse};
use crate::ids::{AwaitItemId, ToolCallId};
use crate::tool::{ToolIdent, ToolOutput};

/// One thing an await waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AwaitItem {
    /// A free-text answer to a question.
    Clarification(Clarification),
    /// Structured multiple-choice questions tied to a tool call.
    Questions(Questions),
    /// Tool calls executed outside the runtime, whose results are provided.
    ExternalTools(ExternalTools),
    /// Approval of a tool call before it executes.
    Confirmation(Confirmation),
    /// A running tool call's question (a form, or a URL to open).
    Elicitation(Elicitation),
}

impl AwaitItem {
    /// The item's id.
    pub fn id(&self) -> &AwaitItemId {
        match self {
            AwaitItem::Clarification(c) => &c.id,
            AwaitItem::Questions(q) => &q.id,
            AwaitItem::ExternalTools(e) => &e.id,
            AwaitItem::Confirmation(c) => &c.id,
            AwaitItem::Elicitation(e) => &e.id,
        }
    }

    /// The answer kind this item takes.
    pub fn kind(&self) -> AwaitKind {
        match self {
            AwaitItem::Clarification(_) => AwaitKind::Clarification,
            AwaitItem::Questions(_) => AwaitKind::Questions,
            AwaitItem::ExternalTools(_) => AwaitKind::ExternalTools,
            AwaitItem::Confirmation(_) => AwaitKind::Confirmation,
            AwaitItem::Elicitation(_) => AwaitKind::Elicitation,
        }
    }

    /// Checks that `answer` satisfies this item.
    pub fn validate(&self, answer: &AwaitAnswer) -> Result<(), AnswerError> {
        match (self, answer) {
            (AwaitItem::Clarification(_), AwaitAnswer::Clarification { text }) => {
                if text.trim().is_empty() {
                    return Err(AnswerError::EmptyClarification);
                }
                Ok(())
            }
            (AwaitItem::Questions(q), AwaitAnswer::Questions { answers }) => q.validate(answers),
            (AwaitItem::ExternalTools(e), AwaitAnswer::ExternalTools { results }) => {
                e.validate(results)
            }
            (AwaitItem::Confirmation(_), AwaitAnswer::Confirmation { .. }) => Ok(()),
            (AwaitItem::Elicitation(e), AwaitAnswer::Elicitation { action, content }) => {
                e.validate(*action, content.as_ref())
            }
            (item, answer) => Err(AnswerError::WrongKind {
                expected: item.kind(),
                got: answer.kind(),
            }),
        }
    }
}

/// The kinds of await items and answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AwaitKind {
    /// Free-text clarification.
    Clarification,
    /// Multiple-choice questions.
    Questions,
    /// External tool results.
    ExternalTools,
    /// Approve or deny a tool call.
    Confirmation,
    /// Accept, decline or cancel a running tool's question.
    Elicitation,
}

impl std::fmt::Display for AwaitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AwaitKind::Clarification => "clarification",
            AwaitKind::Questions => "questions",
            AwaitKind::ExternalTools => "external_tools",
            AwaitKind::Confirmation => "confirmation",
            AwaitKind::Elicitation => "elicitation",
        })
    }
}

/// A free-text question to the human.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Clarification {
    /// The item's id.
    pub id: AwaitItemId,
    /// The question.
    pub question: String,
    /// Argument fields the planner lacks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_fields: Vec<String>,
    /// The tool the answer is for, when the next turn should offer only it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restrict_to_tool: Option<ToolIdent>,
    /// An example of valid arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub example_input: Option<Value>,
    /// A prompt to show alongside the question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clarifying_prompt: Option<String>,
}

/// Multiple-choice questions raised by a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Questions {
    /// The item's id.
    pub id: AwaitItemId,
    /// The tool that asks.
    pub tool_name: ToolIdent,
    /// The tool call the answers are the result of.
    pub tool_call_id: ToolCallId,
    /// The call's arguments.
    #[serde(default)]
    pub payload: Value,
    /// A title for the form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The questions, in order.
    pub questions: Vec<Question>,
}

impl Questions {
    fn validate(&self, answers: &BTreeMap<String, Vec<String>>) -> Result<(), AnswerError> {
        for id in answers.keys() {
            if !self.questions.iter().any(|q| &q.id == id) {
                return Err(AnswerError::UnknownQuestion {
                    question: id.clone(),
                });
            }
        }
        for q in &self.questions {
            let chosen = answers
                .get(&q.id)
                .ok_or_else(|| AnswerError::MissingQuestion {
                    question: q.id.clone(),
                })?;
            if chosen.is_empty() {
                return Err(AnswerError::MissingQuestion {
                    question: q.id.clone(),
                });
            }
            if chosen.len() > 1 && !q.allow_multiple {
                return Err(AnswerError::SingleChoiceOnly {
                    question: q.id.clone(),
                });
            }
            for (i, option) in chosen.iter().enumerate() {
                if !q.options.iter().any(|o| &o.id == option) {
                    return Err(AnswerError::OptionNotOffered {
                        question: q.id.clone(),
                        option: option.clone(),
                    });
                }
                if chosen[..i].contains(option) {
                    return Err(AnswerError::DuplicateOption {
                        question: q.id.clone(),
                        option: option.clone(),
                    });
                }
            }
        }
        Ok(())
    }
}

/// One multiple-choice question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    /// The question's id.
    pub id: String,
    /// The question text.
    pub prompt: String,
    /// The options offered.
    pub options: Vec<QuestionOption>,
    /// Whether several options may be chosen.
    #[serde(default)]
    pub allow_multiple: bool,
}

/// One option of a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionOption {
    /// The option's id.
    pub id: String,
    /// What the human sees.
    pub label: String,
}

/// Tool calls to be executed outside the runtime.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExternalTools {
    /// The item's id.
    pub id: AwaitItemId,
    /// The calls, in order.
    pub items: Vec<ExternalToolCall>,
}

impl ExternalTools {
    fn validate(&self, results: &[ToolOutput]) -> Result<(), AnswerError> {
        for (i, r) in results.iter().enumerate() {
            if !self.items.iter().any(|c| c.tool_call_id == r.tool_call_id) {
                return Err(AnswerError::UnknownToolCall {
                    tool_call_id: r.tool_call_id.clone(),
                });
            }
            if results[..i]
                .iter()
                .any(|p| p.tool_call_id == r.tool_call_id)
            {
                return Err(AnswerError::DuplicateToolCall {
                    tool_call_id: r.tool_call_id.clone(),
                });
            }
        }
        for c in &self.items {
            if !results.iter().any(|r| r.tool_call_id == c.tool_call_id) {
                return Err(AnswerError::MissingToolCall {
                    tool_call_id: c.tool_call_id.clone(),
                });
            }
        }
        Ok(())
    }
}

/// One call to execute outside the runtime.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExternalToolCall {
    /// The tool.
    pub tool_name: ToolIdent,
    /// The call's id.
    pub tool_call_id: ToolCallId,
    /// The call's arguments.
    #[serde(default)]
    pub payload: Value,
}

/// A tool call that needs a human's approval before it executes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Confirmation {
    /// The item's id.
    pub id: AwaitItemId,
    /// The tool.
    pub tool_name: ToolIdent,
    /// The call's id.
    pub tool_call_id: ToolCallId,
    /// The call's arguments.
    #[serde(default)]
    pub payload: Value,
}

/// The answer to one await item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AwaitAnswer {
    /// Free text for a clarification.
    Clarification {
        /// The human's answer.
        text: String,
    },
    /// Chosen option ids, by question id.
    Questions {
        /// Option ids chosen for each question.
        answers: BTreeMap<String, Vec<String>>,
    },
    /// One result per external tool call.
    ExternalTools {
        /// The results.
        results: Vec<ToolOutput>,
    },
    /// Approval or denial of a tool call.
    Confirmation {
        /// Whether the call may execute.
        approved: bool,
        /// Why, shown to the planner when denied.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// What the human did with a running tool's question.
    Elicitation {
        /// Accept, decline or cancel.
        action: ElicitationAction,
        /// The form's fields, when accepting a form.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<Value>,
    },
}

impl AwaitAnswer {
    /// The answer's kind.
    pub fn kind(&self) -> AwaitKind {
        match self {
            AwaitAnswer::Clarification { .. } => AwaitKind::Clarification,
            AwaitAnswer::Questions { .. } => AwaitKind::Questions,
            AwaitAnswer::ExternalTools { .. } => AwaitKind::ExternalTools,
            AwaitAnswer::Confirmation { .. } => AwaitKind::Confirmation,
            AwaitAnswer::Elicitation { .. } => AwaitKind::Elicitation,
        }
    }

    /// What the asking tool gets back, for an elicitation answer.
    pub fn elicitation_response(&self) -> Option<ElicitationResponse> {
        match self {
            AwaitAnswer::Elicitation { action, content } => Some(ElicitationResponse {
                action: *action,
                content: content.clone(),
            }),
            _ => None,
        }
    }
}
