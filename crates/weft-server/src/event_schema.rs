//! OpenAPI schemas of run events (each SSE event's `data`). They document
//! weft-core's serde shapes (which derive no schemas) and are never built;
//! outcomes are [`crate::outcome_schema`]'s.

#![allow(dead_code)] // These types exist for their schemas only.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::await_schema::{AwaitAnswerSchema, AwaitItemSchema, ToolOutputSchema};
use crate::message_schema::MessageSchema;
use crate::outcome_schema::{RunOutcomeSchema, TerminationSchema};

/// One event of a run, tagged by `type` (also the SSE `event:` name); `seq`
/// (also the SSE `id:`) numbers a run's events from 1 without gaps.
#[derive(Serialize, ToSchema)]
#[schema(as = RunEvent)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum RunEventSchema {
    /// The run was created.
    RunStarted {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// The agent.
        agent_id: String,
        /// The session.
        session_id: String,
        /// The input messages.
        input: Vec<MessageSchema>,
    },
    /// A person paused the run; a run awaiting answers says so with
    /// `await_requested` alone (logs written before that also have a
    /// `run_paused` right after each blocking `await_requested`).
    RunPaused {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// Why.
        reason: String,
    },
    /// The run goes on after a pause or an answered await.
    RunContinued {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
    },
    /// The run ended; always the last event.
    RunFinished {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// How.
        outcome: RunOutcomeSchema,
    },
    /// A planner's note about its reasoning.
    PlannerThought {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// The note.
        text: String,
        /// Labels for filtering.
        labels: Option<BTreeMap<String, String>>,
    },
    /// A fragment of assistant text.
    AssistantChunk {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// The text.
        text: String,
    },
    /// A complete thinking block (`kind`: `text`, `redacted` or `open_ai_reasoning`).
    Thinking {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// The block.
        #[schema(value_type = Object)]
        thinking: Value,
    },
    /// A fragment of a tool call's arguments, as the model streams them.
    ToolCallArgsDelta {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// The call.
        tool_call_id: String,
        /// The tool.
        tool: String,
        /// The fragment.
        delta: String,
    },
    /// A tool call began executing.
    ToolStarted {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// The call.
        tool_call_id: String,
        /// The tool.
        tool: String,
        /// Its arguments.
        payload: Value,
        /// What the call is doing, when the planner said.
        description: Option<String>,
    },
    /// Partial output of a running tool.
    ToolOutputDelta {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// The call.
        tool_call_id: String,
        /// The output channel (`stdout`, `stderr`, `log`, `progress`).
        stream: Option<String>,
        /// The fragment.
        delta: String,
    },
    /// A tool call ended.
    ToolFinished {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// Its output.
        output: ToolOutputSchema,
    },
    /// The run waits for these items.
    AwaitRequested {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// The items.
        items: Vec<AwaitItemSchema>,
    },
    /// One await item was answered.
    AwaitSatisfied {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// The item.
        item_id: String,
        /// The answer.
        answer: AwaitAnswerSchema,
    },
    /// A pending await item was withdrawn unanswered.
    AwaitWithdrawn {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// The item.
        item_id: String,
    },
    /// A model's whole answer for one planning call (`text`, `thinking`,
    /// `tool_calls` with provider names and raw arguments, `usage`,
    /// `stop_reason`), recorded for replay.
    ModelOutput {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// The model's id.
        model: String,
        /// The answer.
        #[schema(value_type = Object)]
        output: Value,
    },
    /// Tokens used.
    Usage {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// The usage.
        usage: UsageSchema,
    },
    /// The runtime forced finalization.
    Termination {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// Why.
        termination: TerminationSchema,
    },
    /// A tool call of this run started a child run (an agent used as a tool).
    ChildRunLinked {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// The parent's call.
        tool_call_id: String,
        /// The child run.
        child_run_id: String,
        /// The child's agent.
        agent_id: String,
    },
    /// An event of a child run, shown in its parent's log while the child
    /// runs (model outputs stay in the child's own log). A call that runs
    /// again after a crash may show a child's events twice: `(child_run_id,
    /// child_seq)` tells them apart.
    ChildEvent {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// The child run.
        child_run_id: String,
        /// The event's position in the child's log.
        child_seq: u64,
        /// The child's event: a `RunEvent` without `seq` and `at`, tagged
        /// by `type` the same way.
        #[schema(value_type = Object)]
        event: Value,
    },
    /// A toolset of the run's agent could not start or stopped working:
    /// its tools are not offered until it is back.
    ToolsetUnavailable {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// The toolset.
        toolset: String,
        /// Why: the start's or the listing's error.
        cause: String,
    },
    /// A toolset that was unavailable works again.
    ToolsetAvailable {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// The toolset.
        toolset: String,
    },
    /// A planner rendered a prompt through the prompt registry.
    PromptRendered {
        /// Position in the run's log.
        seq: u64,
        /// When it happened, in milliseconds since the Unix epoch.
        at: u64,
        /// The template's id (the prompt's name).
        template_id: String,
        /// The version of the template text used (a hash of it).
        version: String,
        /// The scope of the override used; absent when the agent's own
        /// template (or the planner's default) was used.
        #[serde(rename = "override")]
        #[schema(nullable = false)]
        override_scope: Option<PromptScopeSchema>,
    },
}

/// Tokens used, and their cost when the model's price is known.
#[derive(Serialize, ToSchema)]
#[schema(as = Usage)]
pub(crate) struct UsageSchema {
    /// Prompt tokens.
    input_tokens: u64,
    /// Generated tokens.
    output_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    cache_creation_tokens: u64,
    /// What these tokens cost in US dollars at the model's price (the
    /// agent's, else a built-in list price); absent when no price is known.
    /// A run's cost is the sum over its `usage` events, unknown when one
    /// with tokens has none.
    #[schema(nullable = false)]
    cost_usd: Option<f64>,
    /// Present and `true` when weft estimated the tokens (about four bytes
    /// a token) because the provider reported none.
    #[schema(nullable = false)]
    estimated: Option<bool>,
}

/// Where a prompt override applies: each part that is set must match the run.
#[derive(Serialize, ToSchema)]
#[schema(as = PromptScope)]
pub(crate) struct PromptScopeSchema {
    /// Only runs of this tenant.
    tenant: Option<String>,
    /// Only runs of this session.
    session_id: Option<String>,
    /// Only runs carrying every one of these labels.
    labels: BTreeMap<String, String>,
}
