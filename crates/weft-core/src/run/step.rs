//! What the machine asks of its driver ([`Step`]) and how a run ends ([`RunOutcome`]).

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::awaiting::{AwaitAnswer, AwaitItem};
use crate::ids::ToolCallId;
use crate::message::Message;
use crate::planner::Termination;
use crate::run::catalog::{InvalidReason, InvalidToolCallContext};
use crate::tool::{ToolIdent, ToolOutput};

/// What the driver must do next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step<'a> {
    /// Call the planner (`plan_start` or `plan_resume`) and feed its result to
    /// `plan_result`. With `finalize` set, the planner must answer without tools.
    Plan {
        /// Which planner method to call.
        kind: PlanKind,
        /// Why the run is being made to finalize, if it is.
        finalize: Option<&'a Termination>,
    },
    /// A tool call is invalid: answer with `resolve`.
    Resolve {
        /// What is wrong.
        context: &'a InvalidToolCallContext,
    },
    /// Execute these calls (concurrently) and feed each result to `tool_result`.
    /// Only calls still without a result are listed.
    ExecuteTools {
        /// The calls.
        calls: PendingCalls<'a>,
    },
    /// Persist and pause until every listed item is answered through `answer`.
    Await {
        /// The items, in order.
        items: &'a [AwaitItem],
        /// The answers given so far, by item position.
        answers: &'a [Option<AwaitAnswer>],
    },
    /// The run is over.
    Finish {
        /// How it ended.
        outcome: &'a RunOutcome,
    },
}

/// Which planner method a [`Step::Plan`] calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanKind {
    /// The first turn: `plan_start`.
    Start,
    /// Every later turn: `plan_resume`.
    Resume,
}

/// The machine's phase, for messages and status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseName {
    /// Waiting for a plan result.
    Planning,
    /// Waiting for an invalid-call resolution.
    Resolving,
    /// Waiting for tool results.
    Executing,
    /// Waiting for await answers.
    Awaiting,
    /// Over.
    Finished,
}

impl fmt::Display for PhaseName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PhaseName::Planning => "planning",
            PhaseName::Resolving => "resolving an invalid tool call",
            PhaseName::Executing => "executing tools",
            PhaseName::Awaiting => "awaiting answers",
            PhaseName::Finished => "finished",
        })
    }
}

/// One tool call to execute.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id.
    pub id: ToolCallId,
    /// The tool.
    pub name: ToolIdent,
    /// Its validated arguments, shared with the events and output of the call.
    pub payload: Arc<Value>,
    /// The parent call, for nested runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<ToolCallId>,
}

/// The calls of a batch that still lack a result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PendingCalls<'a> {
    pub(crate) calls: &'a [ToolCall],
    pub(crate) results: &'a [Option<Arc<ToolOutput>>],
}

impl<'a> PendingCalls<'a> {
    /// The pending calls, in request order.
    pub fn iter(&self) -> impl Iterator<Item = &'a ToolCall> + 'a {
        let results = self.results;
        self.calls
            .iter()
            .zip(results.iter())
            .filter(|(_, r)| r.is_none())
            .map(|(c, _)| c)
    }

    /// How many calls are pending.
    pub fn len(&self) -> usize {
        self.results.iter().filter(|r| r.is_none()).count()
    }

    /// Whether no call is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunOutcome {
    /// The planner answered.
    Response {
        /// The answer.
        message: Message,
        /// The limit that forced the answer, if one did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        termination: Option<Termination>,
    },
    /// A nested run produced its parent's tool result.
    ToolResult {
        /// The result.
        result: Value,
        /// The limit that forced the answer, if one did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        termination: Option<Termination>,
    },
    /// The run failed.
    Failed {
        /// Why.
        failure: RunFailure,
    },
    /// The run was cancelled.
    Cancelled {
        /// Why.
        reason: String,
    },
}

impl RunOutcome {
    /// Whether the run produced an answer.
    pub fn is_success(&self) -> bool {
        matches!(
            self,
            RunOutcome::Response { .. } | RunOutcome::ToolResult { .. }
        )
    }
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunFailure {
    /// An invalid tool call was resolved with `Fail`.
    InvalidToolCall {
        /// The tool name as requested.
        tool_name: String,
        /// The call.
        tool_call_id: ToolCallId,
        /// What was wrong.
        reason: InvalidReason,
    },
    /// The planner failed.
    Planner {
        /// What failed.
        message: String,
    },
    /// The finalizing planner call did not answer within the grace period.
    FinalizerTimeout {
        /// The termination being finalized.
        termination: Termination,
    },
    /// The session's memory could not be read before a turn, or the
    /// turn's writes could not be stored.
    SessionMemory {
        /// What failed.
        message: String,
    },
    /// The machine refused every answer to an invalid tool call, even
    /// failing the run: a driver fed it out of turn.
    Protocol {
        /// What the machine said.
        message: String,
    },
    /// Written by versions before the failures above had names: read from
    /// old logs, never produced.
    Other {
        /// What happened.
        message: String,
    },
}
