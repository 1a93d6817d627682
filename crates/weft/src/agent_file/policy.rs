//! The `[policy]` section of agent files: caps, budgets and the tool policy.

use std::num::NonZeroU32;

use serde::Deserialize;

/// The policy section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// Most planner turns per run.
    pub max_turns: Option<NonZeroU32>,
    /// Most tool calls per run.
    pub max_tool_calls: Option<NonZeroU32>,
    /// Most tool calls per turn.
    pub max_tool_calls_per_turn: Option<NonZeroU32>,
    /// Most failures in a row.
    pub max_consecutive_failures: Option<NonZeroU32>,
    /// Active time budget in milliseconds.
    pub time_budget_ms: Option<u64>,
    /// Grace for the finalizing turn in milliseconds.
    pub finalizer_grace_ms: Option<u64>,
    /// Retries of a turn with an invalid tool call.
    pub max_invalid_call_retries: Option<u32>,
    /// Per-call tool timeout in milliseconds.
    pub tool_timeout_ms: Option<u64>,
    /// Tools the agent may call (all when absent).
    pub allowed_tools: Option<Vec<String>>,
    /// Tools whose calls wait for a human's approval.
    #[serde(default)]
    pub confirm_tools: Vec<String>,
    /// Tools the agent may never call.
    #[serde(default)]
    pub denied_tools: Vec<String>,
    /// Only tools carrying one of these tags may be called.
    pub allowed_tags: Option<Vec<String>>,
    /// Tools carrying any of these tags may never be called.
    #[serde(default)]
    pub denied_tags: Vec<String>,
    /// Calls of tools carrying any of these tags wait for a human's approval.
    #[serde(default)]
    pub confirm_tags: Vec<String>,
    /// Calls of tools annotated destructive wait for a human's approval.
    #[serde(default)]
    pub confirm_destructive: bool,
}
