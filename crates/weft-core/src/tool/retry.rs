//! Retry hints: what a failed tool call tells the planner about trying again.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{FieldIssue, FieldIssueKind, ToolIdent};

/// Structured guidance for the planner after a tool failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryHint {
    /// Why the call failed.
    pub reason: RetryReason,
    /// The tool concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<ToolIdent>,
    /// Whether the next turn should offer only this tool.
    #[serde(default)]
    pub restrict_to_tool: bool,
    /// Fields the arguments lacked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_fields: Vec<String>,
    /// A valid example of the arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub example_input: Option<Value>,
    /// The arguments that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_input: Option<Value>,
    /// A question to ask the human, when the planner cannot fix it alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clarifying_question: Option<String>,
    /// Free-form guidance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl RetryHint {
    /// A hint with only a reason.
    pub fn new(reason: RetryReason) -> Self {
        Self {
            reason,
            tool: None,
            restrict_to_tool: false,
            missing_fields: Vec::new(),
            example_input: None,
            prior_input: None,
            clarifying_question: None,
            message: None,
        }
    }

    /// The hint for arguments of `tool` that break its schema with
    /// `issues`: missing fields when some are missing (with `example`, a
    /// valid input, when one is known), invalid arguments otherwise; the
    /// failed arguments go back as the prior input.
    pub fn for_issues(
        tool: &ToolIdent,
        arguments: &Value,
        issues: &[FieldIssue],
        example: Option<&Value>,
    ) -> Self {
        let missing: Vec<String> = issues
            .iter()
            .filter(|i| i.kind == FieldIssueKind::Missing)
            .map(|i| i.field.clone())
            .collect();
        let mut hint = if missing.is_empty() {
            Self::new(RetryReason::InvalidArguments)
        } else {
            let mut hint = Self::new(RetryReason::MissingFields);
            hint.missing_fields = missing;
            hint.example_input = example.cloned();
            hint
        };
        hint.tool = Some(tool.clone());
        hint.prior_input = Some(arguments.clone());
        hint
    }

    /// Sets the tool concerned.
    pub fn for_tool(mut self, tool: ToolIdent) -> Self {
        self.tool = Some(tool);
        self
    }

    /// Sets the free-form guidance.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
}

/// Why a tool call failed, for retry decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryReason {
    /// The arguments were wrong.
    InvalidArguments,
    /// Required fields were missing.
    MissingFields,
    /// The tool's response could not be understood.
    MalformedResponse,
    /// The call took too long.
    Timeout,
    /// The tool or its backend refused for rate limiting.
    RateLimited,
    /// The tool could not be reached or was interrupted.
    ToolUnavailable,
}

/// Implemented by domain errors that know how a planner should react to them.
pub trait RetryHintProvider {
    /// The hint for this error, if any.
    fn retry_hint(&self) -> Option<RetryHint> {
        None
    }
}
