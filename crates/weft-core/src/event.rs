//! Run events: the append-only, sequence-numbered record of what happened in a run.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::awaiting::{AwaitAnswer, AwaitItem};
use crate::ids::{AgentId, AwaitItemId, RunId, SessionId, ToolCallId};
use crate::message::{Message, Thinking};
use crate::model::{ModelSummary, Usage};
use crate::planner::Termination;
use crate::prompt::PromptScope;
use crate::run::RunOutcome;
use crate::time::Timestamp;
use crate::tool::{Labels, ToolIdent, ToolOutput};

/// The reason of the `RunPaused` that logs written before awaits stopped
/// pausing have right after each blocking `AwaitRequested`; a person's pause
/// there has another reason.
pub const OLD_AWAIT_PAUSE_REASON: &str = "awaiting answers";

/// One event of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEvent {
    /// Position in the run's log, from 1, without gaps.
    pub seq: u64,
    /// When it happened.
    pub at: Timestamp,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// The run was created.
    RunStarted {
        /// The agent.
        agent_id: AgentId,
        /// The session.
        session_id: SessionId,
        /// The input messages.
        input: Vec<Message>,
    },
    /// A person paused the run (the `pause` control); it goes on at
    /// `RunContinued`. A run awaiting answers says so with `AwaitRequested`
    /// alone: logs written before the two were told apart also have a
    /// `RunPaused` (reason "awaiting answers") right after each blocking
    /// `AwaitRequested`, which readers of old logs skip.
    RunPaused {
        /// Why.
        reason: String,
    },
    /// The run goes on after a pause or an answered await. Logs written
    /// before the word `continue` was chosen call it `run_resumed`.
    #[serde(alias = "run_resumed")]
    RunContinued,
    /// The run ended.
    RunFinished {
        /// How.
        outcome: RunOutcome,
    },
    /// A planner's note about its reasoning.
    PlannerThought {
        /// The note.
        text: String,
        /// Labels for filtering.
        #[serde(default, skip_serializing_if = "Labels::is_empty")]
        labels: Labels,
    },
    /// A fragment of assistant text.
    AssistantChunk {
        /// The text.
        text: String,
    },
    /// A complete thinking block.
    Thinking {
        /// The block.
        thinking: Thinking,
    },
    /// A fragment of a tool call's arguments, as the model streams them.
    ToolCallArgsDelta {
        /// The call.
        tool_call_id: ToolCallId,
        /// The tool.
        tool: String,
        /// The fragment.
        delta: String,
    },
    /// A tool call began executing.
    ToolStarted {
        /// The call.
        tool_call_id: ToolCallId,
        /// The tool.
        tool: ToolIdent,
        /// Its arguments.
        payload: Arc<Value>,
        /// What the call is doing, when the planner said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
    /// Partial output of a running tool.
    ToolOutputDelta {
        /// The call.
        tool_call_id: ToolCallId,
        /// The output channel (`stdout`, `stderr`, `log`, `progress`).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        stream: String,
        /// The fragment.
        delta: String,
    },
    /// A tool call ended.
    ToolFinished {
        /// Its output, shared with the run's record of it.
        output: Arc<ToolOutput>,
    },
    /// The run is waiting for these items.
    AwaitRequested {
        /// The items.
        items: Vec<AwaitItem>,
    },
    /// One await item was answered.
    AwaitSatisfied {
        /// The item.
        item_id: AwaitItemId,
        /// The answer.
        answer: AwaitAnswer,
    },
    /// A pending await item was withdrawn unanswered: the running call
    /// that asked it (an elicitation) ended, or the run did.
    AwaitWithdrawn {
        /// The item.
        item_id: AwaitItemId,
    },
    /// A model's whole answer for one planning call, as the planner
    /// assembled it: what replay feeds the planner instead of calling the
    /// model. Logs written before it was recorded lack it.
    ModelOutput {
        /// The model's id.
        model: String,
        /// The answer: text, thinking, tool calls (provider names, raw
        /// arguments), usage and stop reason. Boxed, as the variant's large
        /// parts are: every event is as large as the largest variant.
        output: Box<ModelSummary>,
    },
    /// Tokens used.
    Usage {
        /// The usage.
        usage: Usage,
    },
    /// The runtime forced finalization.
    Termination {
        /// Why.
        termination: Termination,
    },
    /// A tool call started (or, after a crash, found again) the child run
    /// that answers it: an agent called as a tool. Recorded by the parent's
    /// machine when the call reports its child
    /// ([`RunMachine::child_linked`](crate::run::RunMachine::child_linked)),
    /// committed before any of the child's events are shown.
    ChildRunLinked {
        /// The parent's call.
        tool_call_id: ToolCallId,
        /// The child run.
        child_run_id: RunId,
        /// The child's agent.
        agent_id: AgentId,
    },
    /// An event of a child run, shown in its parent's log while the child
    /// runs (model outputs stay in the child's own log). A call that runs
    /// again after a crash may show a child's events twice: `(child_run_id,
    /// child_seq)` tells them apart.
    ChildEvent {
        /// The child run.
        child_run_id: RunId,
        /// The event's position in the child's log.
        child_seq: u64,
        /// The child's event.
        event: Box<EventKind>,
    },
    /// A toolset of the run's agent could not start or stopped working:
    /// its tools are not offered, and the model is told why, until it is
    /// back. Emitted once per outage (and again if the cause changes).
    ToolsetUnavailable {
        /// The toolset.
        toolset: String,
        /// Why: the start's or the listing's error (for an MCP server, the
        /// command and what it printed last, or the HTTP status).
        cause: String,
    },
    /// A toolset that was unavailable works again.
    ToolsetAvailable {
        /// The toolset.
        toolset: String,
    },
    /// A planner rendered a prompt through the prompt registry.
    PromptRendered {
        /// The template's id (the prompt's name).
        template_id: String,
        /// The version of the template text used.
        version: String,
        /// The scope of the override used; absent when the agent's own
        /// template (or the planner's default) was used.
        #[serde(default, rename = "override", skip_serializing_if = "Option::is_none")]
        override_scope: Option<Box<PromptScope>>,
    },
}

impl EventKind {
    /// Whether this event ends the run's log.
    pub fn is_terminal(&self) -> bool {
        matches!(self, EventKind::RunFinished { .. })
    }
}
