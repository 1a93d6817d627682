//! Tool call validation: the catalog the machine checks calls against, and
//! the invalid-call resolution protocol.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::ToolCallId;
use crate::planner::CallArguments;
use crate::tool::{FieldIssue, RetryHint, ToolIdent, ToolSpec};

/// The tools a run knows, with their argument validation.
pub trait ToolCatalog {
    /// The spec of the tool called `name`, if known.
    fn spec(&self, name: &str) -> Option<&ToolSpec>;

    /// The names of every known tool.
    fn names(&self) -> Vec<ToolIdent>;

    /// Checks `arguments` against the tool's input schema.
    fn validate(&self, spec: &ToolSpec, arguments: &Value) -> Result<(), Vec<FieldIssue>>;

    /// The retry hint the planner gets with a call of `spec` whose
    /// `arguments` broke its schema with `issues`. The default names the
    /// missing fields and the failed arguments; a catalog that can make a
    /// valid example input adds it.
    fn retry_hint(&self, spec: &ToolSpec, arguments: &Value, issues: &[FieldIssue]) -> RetryHint {
        RetryHint::for_issues(&spec.name, arguments, issues, None)
    }
}

/// Why a requested tool call is invalid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum InvalidReason {
    /// No tool has this name.
    UnknownTool,
    /// The tool exists but the policy does not allow it this turn.
    NotAllowed,
    /// The arguments are not valid JSON.
    MalformedJson {
        /// The parser's message.
        message: String,
    },
    /// The arguments violate the tool's input schema.
    SchemaViolation {
        /// What is wrong, field by field.
        issues: Vec<FieldIssue>,
    },
}

impl InvalidReason {
    /// The reason in words, for feedback to a model.
    pub fn describe(&self, tool: &str) -> String {
        match self {
            InvalidReason::UnknownTool => format!("there is no tool named `{tool}`"),
            InvalidReason::NotAllowed => format!("tool `{tool}` is not allowed now"),
            InvalidReason::MalformedJson { message } => {
                format!("the arguments for `{tool}` are not valid JSON: {message}")
            }
            InvalidReason::SchemaViolation { issues } => {
                let mut s = format!("the arguments for `{tool}` do not match its schema:");
                for i in issues {
                    let field = if i.field.is_empty() {
                        "(root)"
                    } else {
                        &i.field
                    };
                    s.push_str(&format!(" {field}: {};", i.message));
                }
                s
            }
        }
    }
}

/// What the driver needs to decide about an invalid tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvalidToolCallContext {
    /// The tool name as requested.
    pub tool_name: String,
    /// The call's id.
    pub tool_call_id: ToolCallId,
    /// The arguments as requested.
    pub arguments: CallArguments,
    /// What is wrong.
    pub reason: InvalidReason,
    /// The tools that are allowed this turn.
    pub available: Vec<ToolIdent>,
    /// How many more times this turn may be retried.
    pub retries_left: u32,
}

/// The driver's answer to an invalid tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Resolution {
    /// End the run with a failure.
    Fail,
    /// Plan the turn again, telling the planner what was wrong.
    Retry {
        /// Feedback recorded as the invalid call's result.
        feedback: String,
    },
    /// Call this tool instead (it must be allowed); the arguments are checked
    /// again. Only for a call naming an unknown or not allowed tool: a call
    /// with invalid arguments is retried, skipped or failed.
    Repair {
        /// The tool to call.
        tool: ToolIdent,
    },
    /// Record `reason` as the call's result and execute nothing of this turn.
    Skip {
        /// Recorded as the call's error result.
        reason: String,
    },
}

impl Resolution {
    /// The resolution's name: `fail`, `retry`, `repair` or `skip`.
    pub fn name(&self) -> &'static str {
        match self {
            Resolution::Fail => "fail",
            Resolution::Retry { .. } => "retry",
            Resolution::Repair { .. } => "repair",
            Resolution::Skip { .. } => "skip",
        }
    }
}

/// What feeding a plan result (or a resolution) led to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PlanOutcome {
    /// The decision was accepted; ask for the next step.
    Continue {
        /// The planner already streamed its final answer
        /// (`PlanResult::streamed`). Unset for a final response, the
        /// machine shows the answer itself: an `AssistantChunk` event with
        /// its whole text comes before the run's end (as in loom-mcp, whose
        /// runtime publishes the final assistant-message hook only for an
        /// answer that was not streamed). Always unset when the decision
        /// was not a final one.
        response_hook_suppressed: bool,
    },
    /// A tool call is invalid; answer with [`super::RunMachine::resolve`].
    NeedsResolution(Box<InvalidToolCallContext>),
    /// The turn will be planned again with feedback.
    TurnRetried,
}
