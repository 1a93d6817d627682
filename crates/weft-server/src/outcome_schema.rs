//! OpenAPI schemas of how runs end: outcomes, failures and the limits
//! that force a final answer. They document weft-core's serde shapes and
//! are never built.

#![allow(dead_code)] // These types exist for their schemas only.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::message_schema::MessageSchema;

/// How a run ended, tagged by `kind`.
#[derive(Serialize, ToSchema)]
#[schema(as = RunOutcome)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum RunOutcomeSchema {
    /// The planner answered.
    Response {
        /// The answer.
        message: MessageSchema,
        /// The limit that forced the answer, if one did.
        termination: Option<TerminationSchema>,
    },
    /// A nested run produced its parent's tool result.
    ToolResult {
        /// The result.
        result: Value,
        /// The limit that forced the answer, if one did.
        termination: Option<TerminationSchema>,
    },
    /// The run failed.
    Failed {
        /// Why.
        failure: RunFailureSchema,
    },
    /// The run was cancelled.
    Cancelled {
        /// Why.
        reason: String,
    },
}

/// Why a run failed, tagged by `kind`.
#[derive(Serialize, ToSchema)]
#[schema(as = RunFailure)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum RunFailureSchema {
    /// A tool call stayed invalid under the invalid-call policy.
    InvalidToolCall {
        /// The tool named.
        tool_name: String,
        /// The call.
        tool_call_id: String,
        /// What was wrong with it.
        #[schema(value_type = Object)]
        reason: Value,
    },
    /// The planner failed.
    Planner {
        /// Its message.
        message: String,
    },
    /// The forced final answer did not come in time.
    FinalizerTimeout {
        /// The limit that forced it.
        termination: TerminationSchema,
    },
    /// The session's memory could not be read or stored.
    SessionMemory {
        /// What failed.
        message: String,
    },
    /// The driver fed the run machine out of turn.
    Protocol {
        /// What the machine said.
        message: String,
    },
    /// Written by earlier versions only.
    Other {
        /// What happened.
        message: String,
    },
}

/// The runtime forcing a run to finalize.
#[derive(Serialize, ToSchema)]
#[schema(as = Termination)]
pub(crate) struct TerminationSchema {
    /// Which limit.
    reason: TerminationReasonSchema,
    /// For humans.
    message: String,
}

/// The limits that force finalization.
#[derive(Serialize, ToSchema)]
#[schema(as = TerminationReason)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TerminationReasonSchema {
    /// The run's time budget ran out.
    TimeBudget,
    /// Too many tool calls.
    ToolCap,
    /// Too many failed tool calls.
    FailureCap,
    /// Too many planner turns.
    TurnCap,
}
