//! The planner contract: the [`Planner`] trait, what it is given, what it may
//! do while planning, and the [`PlanResult`] it returns.
//!
//! One planner instance serves many runs concurrently. It keeps no per-run
//! state of its own: per-run state lives in the run (see
//! [`PlannerContext::state_get`]), so a run can be recovered on another process.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::awaiting::AwaitItem;
use crate::ids::{AgentId, RunId, SessionId, ToolCallId, TurnId};
use crate::message::{Message, Part, Thinking};
use crate::model::{ModelClient, ModelSummary, Usage};
use crate::run::{ToolOutputs, Transcript};
use crate::tool::{Labels, ToolSpec};

pub use crate::reminder::{Reminder, ReminderTier};

/// The decider of a run.
#[async_trait]
pub trait Planner: Send + Sync {
    /// Decides the first turn of a run.
    async fn plan_start(&self, input: PlanInput<'_>) -> Result<PlanResult, PlannerError>;

    /// Decides the next turn after a tool batch or an await.
    async fn plan_resume(&self, input: PlanResumeInput<'_>) -> Result<PlanResult, PlannerError>;

    /// The model this planner asks, as `provider/model`, when it asks one:
    /// what the tokens of its [`PlanResult::usage`] are counted against.
    fn model_id(&self) -> Option<&str> {
        None
    }
}

/// What every planning call is given.
#[derive(Clone, Copy)]
pub struct PlanInput<'a> {
    /// The run's conversation so far: initial messages, assistant turns, tool results.
    pub messages: &'a Transcript,
    /// Which run, session and turn this is.
    pub run: &'a RunContext,
    /// Services for the planner: state, memory, models, prompts, reminders.
    pub context: &'a dyn PlannerContext,
    /// Where to stream what the planner produces.
    pub events: &'a dyn PlannerEvents,
    /// Reminders due this turn, safety first: system context for the
    /// model (the system prompt), never a user message.
    pub reminders: &'a [Reminder],
    /// Tools the planner may request this turn. On a finalizing turn
    /// (`PlanResumeInput::finalize`) the tools the run offered before,
    /// to declare to a provider that needs them for the transcript's tool
    /// calls, never to call.
    pub tools: &'a [ToolSpec],
}

/// What a resume call is given in addition.
#[derive(Clone, Copy)]
pub struct PlanResumeInput<'a> {
    /// The common input.
    pub base: PlanInput<'a>,
    /// Every tool output of the run so far, in order.
    pub tool_outputs: &'a ToolOutputs,
    /// When set, the runtime is forcing finalization: answer without tools.
    pub finalize: Option<&'a Termination>,
}

/// Identifies the run a planning call belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunContext {
    /// The agent.
    pub agent_id: AgentId,
    /// The run.
    pub run_id: RunId,
    /// The run's session.
    pub session_id: SessionId,
    /// The current turn.
    pub turn_id: TurnId,
    /// The run's labels.
    #[serde(default)]
    pub labels: Arc<Labels>,
}

/// Services the runtime offers a planner during one planning call.
pub trait PlannerContext: Send + Sync {
    /// The agent being planned for.
    fn agent_id(&self) -> &AgentId;
    /// The run being planned for.
    fn run_id(&self) -> &RunId;
    /// Reads per-run state.
    fn state_get(&self, key: &str) -> Option<Value>;
    /// Writes per-run state; it is stored with the run.
    fn state_set(&self, key: &str, value: Value);
    /// The session's memory, read-only.
    fn memory(&self) -> &dyn MemoryView;
    /// Stores a value in the session's memory once the planning call is
    /// over, for this run's later turns and the session's later runs.
    /// Contexts without a session store keep nothing.
    fn remember(&self, _key: &str, _value: Value) {}
    /// A model client by id.
    fn model(&self, id: &str) -> Option<Arc<dyn ModelClient>>;
    /// Renders a named prompt template with `vars`.
    fn render_prompt(&self, name: &str, vars: &Value) -> Result<String, PlannerError>;
    /// Renders the prompt `name` as the run's prompt registry resolves it
    /// (an override in the run's scope, else the agent's template), or the
    /// template `fallback` when neither defines it. The runtime records each
    /// render as a `prompt_rendered` event; this default renders `fallback`.
    fn render_prompt_or(
        &self,
        name: &str,
        fallback: &str,
        vars: &Value,
    ) -> Result<String, PlannerError> {
        crate::prompt::render_template(&crate::prompt::PromptTemplate::new(name, fallback), vars)
            .map_err(PlannerError::from)
    }
    /// Adds (or replaces, by id) a reminder for later turns.
    fn add_reminder(&self, reminder: Reminder);
    /// Removes a reminder by id.
    fn remove_reminder(&self, id: &str);
}

/// A read-only view of a session's memory.
pub trait MemoryView: Send + Sync {
    /// A remembered value by key.
    fn get(&self, key: &str) -> Option<Value>;
    /// The session's earlier messages, oldest first.
    fn history(&self) -> &[Message];
}

/// A memory view with nothing in it.
#[derive(Debug, Default, Clone, Copy)]
pub struct EmptyMemory;

impl MemoryView for EmptyMemory {
    fn get(&self, _key: &str) -> Option<Value> {
        None
    }
    fn history(&self) -> &[Message] {
        &[]
    }
}

/// Where a planner streams what it produces while planning.
pub trait PlannerEvents: Send + Sync {
    /// A fragment of assistant text.
    fn assistant_chunk(&self, text: &str);
    /// A fragment of a tool call's arguments.
    fn tool_call_args_delta(&self, call_id: &ToolCallId, tool: &str, delta: &str);
    /// A complete thinking block.
    fn thinking_block(&self, thinking: &Thinking);
    /// A planner's own note about its reasoning.
    fn planner_thought(&self, text: &str, labels: &Labels);
    /// Tokens used by a model call.
    fn usage_delta(&self, usage: &Usage);
    /// A model call's whole answer, once assembled (recorded for replay).
    fn model_output(&self, _model: &str, _output: &ModelSummary) {}
    /// A prompt rendered through the prompt registry.
    fn prompt_rendered(&self, _rendered: &crate::prompt::PromptRendered) {}
}

/// A [`PlannerEvents`] sink that drops everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopEvents;

impl PlannerEvents for NoopEvents {
    fn assistant_chunk(&self, _: &str) {}
    fn tool_call_args_delta(&self, _: &ToolCallId, _: &str, _: &str) {}
    fn thinking_block(&self, _: &Thinking) {}
    fn planner_thought(&self, _: &str, _: &Labels) {}
    fn usage_delta(&self, _: &Usage) {}
}

/// What a planner decided for one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanResult {
    /// The decision.
    pub decision: Decision,
    /// Notes for observers: each becomes a `planner_thought` event of the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The planner already streamed the assistant text through its event sink.
    #[serde(default)]
    pub streamed: bool,
    /// Tokens used while planning this turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

impl PlanResult {
    /// A result with just a decision.
    pub fn new(decision: Decision) -> Self {
        Self {
            decision,
            notes: Vec::new(),
            streamed: false,
            usage: None,
        }
    }

    /// Requests tool calls.
    pub fn tool_calls(calls: Vec<ToolCallRequest>) -> Self {
        Self::new(Decision::ToolCalls {
            preamble: Vec::new(),
            calls,
        })
    }

    /// Answers with assistant text.
    pub fn final_text(text: impl Into<String>) -> Self {
        Self::new(Decision::FinalResponse {
            message: Message::assistant(text),
        })
    }

    /// Pauses for the given await items.
    pub fn await_items(items: Vec<AwaitItem>) -> Self {
        Self::new(Decision::Await {
            preamble: Vec::new(),
            items,
        })
    }
}

/// The one decision of a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Decision {
    /// Call these tools, then resume.
    ToolCalls {
        /// Assistant parts (text, thinking) produced before the calls.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        preamble: Vec<Part>,
        /// The calls, in order.
        calls: Vec<ToolCallRequest>,
    },
    /// The run's answer.
    FinalResponse {
        /// The assistant message.
        message: Message,
    },
    /// The result of the parent's tool call, for a nested run that owns it.
    FinalToolResult {
        /// The result.
        result: Value,
    },
    /// Pause until every item is answered.
    Await {
        /// Assistant parts produced before pausing.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        preamble: Vec<Part>,
        /// The items, in order.
        items: Vec<AwaitItem>,
    },
}

/// One tool call a planner requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    /// The call's id; the run assigns one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ToolCallId>,
    /// The tool's name as the planner wrote it; it may be unknown.
    pub name: String,
    /// The arguments, parsed or as raw text.
    pub arguments: CallArguments,
    /// The parent call, for nested runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<ToolCallId>,
}

impl ToolCallRequest {
    /// A call of `name` with parsed arguments.
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: None,
            name: name.into(),
            arguments: CallArguments::Json(arguments),
            parent_tool_call_id: None,
        }
    }

    /// A call of `name` with arguments as raw text, parsed by the run.
    pub fn raw(
        id: impl Into<ToolCallId>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: Some(id.into()),
            name: name.into(),
            arguments: CallArguments::Raw(arguments.into()),
            parent_tool_call_id: None,
        }
    }

    /// Sets the call's id.
    pub fn with_id(mut self, id: impl Into<ToolCallId>) -> Self {
        self.id = Some(id.into());
        self
    }
}

/// Tool call arguments: parsed JSON, or raw text as a model produced it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum CallArguments {
    /// Parsed JSON.
    Json(Value),
    /// Raw text, not yet parsed.
    Raw(String),
}

/// Why the runtime forces a run to finalize.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Termination {
    /// Which limit was hit.
    pub reason: TerminationReason,
    /// What happened, in words.
    pub message: String,
}

/// Limits that force finalization.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminationReason {
    /// The run's time budget ran out.
    TimeBudget,
    /// The run made as many tool calls as its policy allows.
    ToolCap,
    /// The run planned as many turns as its policy allows.
    TurnCap,
    /// Too many tool calls failed in a row.
    FailureCap,
}

/// A planner failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error("planner failed: {message}")]
pub struct PlannerError {
    /// What failed.
    pub message: String,
    /// Whether planning again may succeed.
    #[serde(default)]
    pub retryable: bool,
}

impl From<crate::prompt::PromptError> for PlannerError {
    fn from(e: crate::prompt::PromptError) -> Self {
        Self::new(e.to_string())
    }
}

impl PlannerError {
    /// A non-retryable planner error.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            retryable: false,
        }
    }
}
