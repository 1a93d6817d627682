//! The advisor: a built-in `advisor` tool that asks a nested, tool-less model
//! for concise strategic guidance. This module owns its configuration, its
//! tool spec and guidance block, its per-run budget (kept in the run
//! machine's state, so it is committed with the call's result and survives a
//! resume), and its result JSON; [`ask`] makes the nested call and
//! [`window`] picks the conversation it sees.

mod ask;
mod toolset;
pub mod window;

use std::fmt;
use std::num::NonZeroU32;
use std::sync::Arc;

use serde_json::{Value, json};
use weft_core::model::ModelClient;
use weft_core::run::RunMachine;
use weft_core::tool::ToolIdent;

pub use ask::request;
pub(crate) use ask::{AskInput, ask};
pub use toolset::{AdvisorToolSet, spec};

/// The advisor tool's name.
pub const TOOL: &str = "advisor";
/// The longest question, in characters.
pub const MAX_QUESTION_CHARS: u64 = 2_000;
/// The default output token limit of one advice.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 16_384;
/// The run state key under which runs started before advices were charged
/// outputs kept their count; still read, never written.
pub const LEGACY_USES_KEY: &str = "weft.advisor.uses";
/// The output stream of advice deltas (`ToolOutputDelta` events).
pub const ADVICE_STREAM: &str = "advice";
/// The output stream that says the advice streamed so far is void: the
/// nested call is retried.
pub const RESET_STREAM: &str = "advice_reset";

/// The block appended to the parent's system prompt when the advisor is on;
/// stripped from the system text the advisor inherits.
pub const GUIDANCE: &str = "<advisor-guidance>\nYou can call the `advisor` tool to ask a \
stronger model for concise strategic guidance. Call it alone (never with other tools in the \
same turn) when you are stuck, when a plan has several plausible approaches, or before an \
irreversible or expensive step. Ask one specific question; do not call it for routine steps. \
Its uses per run are limited.\n</advisor-guidance>";

/// The advisor's own system prompt, after the inherited system text.
pub const SYSTEM: &str = "You are the advisor of the agent whose instructions and recent \
conversation you see. The agent asks you a question. Answer with concise strategic guidance: \
what to do next and why, in a few sentences or a short list. You cannot call tools.";

/// An agent's advisor: its model and per-run budget.
#[derive(Clone)]
pub struct AdvisorConfig {
    /// The nested model.
    pub model: Arc<dyn ModelClient>,
    /// Advices per run (never reset).
    pub max_uses_per_run: NonZeroU32,
    /// Output token limit of one advice.
    pub max_output_tokens: NonZeroU32,
    /// The parent's system prompt, inherited by the advisor with
    /// [`GUIDANCE`] stripped.
    pub system: Option<String>,
    /// Sampling temperature passed through to the nested call.
    pub temperature: Option<f32>,
    /// Thinking budget (reasoning effort) passed through to the nested call.
    pub thinking_budget: Option<u32>,
}

impl fmt::Debug for AdvisorConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdvisorConfig")
            .field("model", &self.model.id())
            .field("max_uses_per_run", &self.max_uses_per_run)
            .field("max_output_tokens", &self.max_output_tokens)
            .finish_non_exhaustive()
    }
}

impl AdvisorConfig {
    /// An advisor on `model` with `max_uses_per_run` uses and the default
    /// output limit.
    pub fn new(model: Arc<dyn ModelClient>, max_uses_per_run: NonZeroU32) -> Self {
        Self {
            model,
            max_uses_per_run,
            max_output_tokens: NonZeroU32::new(DEFAULT_MAX_OUTPUT_TOKENS)
                .unwrap_or(NonZeroU32::MIN),
            system: None,
            temperature: None,
            thinking_budget: None,
        }
    }
}

/// `text` without the guidance block.
pub fn strip_guidance(text: &str) -> String {
    text.replace(GUIDANCE, "").trim().to_owned()
}

/// How many advices the run of `machine` has used: its charged advisor
/// outputs, plus the count a run started before them kept in its state.
pub(crate) fn uses(machine: &RunMachine) -> u32 {
    let legacy = machine
        .state()
        .get(LEGACY_USES_KEY)
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(0);
    let tool = ToolIdent::new(TOOL);
    machine.uses_of(&tool).saturating_add(legacy)
}

/// The advisor's result JSON.
pub(crate) fn result(
    kind: &str,
    advice: Option<&str>,
    error: Option<&str>,
    model: &str,
    remaining_uses: u32,
) -> Value {
    json!({
        "type": kind,
        "advice": advice,
        "error": error,
        "advisor_model": model,
        "remaining_uses": remaining_uses,
    })
}

#[cfg(test)]
mod tests;
