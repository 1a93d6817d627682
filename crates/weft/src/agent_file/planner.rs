//! The agent file's `[planner]` section ([`PlannerSpec`]) and the model
//! and settings a model planner asks with.

use serde::Deserialize;
use weft_core::model::ToolChoice;

use super::model::parse_tool_choice;
use super::{AgentFile, ModelSettings, PriceSpec, TurnSpec};

/// The planner section.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum PlannerSpec {
    /// Replays fixed turns.
    Scripted {
        /// The turns, in order.
        turns: Vec<TurnSpec>,
        /// The answer when the runtime forces finalization.
        #[serde(default)]
        finalize: Option<String>,
        /// Continue the turns across the runs of a session (a run starts
        /// where the session's previous run stopped).
        #[serde(default)]
        across_session: bool,
    },
    /// Asks a model (`anthropic/<model>`, `openai/<model>`, ...).
    Model {
        /// The model id.
        model: String,
        /// The server's base URL (required for `compat/` models).
        #[serde(default)]
        base_url: Option<String>,
        /// The environment variable holding the key, instead of the
        /// provider's (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `GEMINI_API_KEY`): the file
        /// names where the key is, never the key.
        #[serde(default)]
        api_key_env: Option<String>,
        /// Output token limit per call.
        #[serde(default)]
        max_tokens: Option<u32>,
        /// Sampling temperature.
        #[serde(default)]
        temperature: Option<f32>,
        /// Token budget for extended thinking (reasoning effort).
        #[serde(default)]
        thinking_budget: Option<u32>,
        /// `auto` (default), `required`, `none`, or a tool's name: what the
        /// model must call until the run has tool results.
        #[serde(default)]
        tool_choice: Option<String>,
        /// `false`: ask for whole answers; `true`: always stream; absent:
        /// stream, and fall back to whole answers for a server that fails
        /// a streamed request with tools.
        #[serde(default)]
        stream: Option<bool>,
        /// Offer the model the `ask_user` tool, through which it asks the
        /// user a question (a clarification the run waits for).
        #[serde(default)]
        ask_user: bool,
        /// `[planner.price]`: the model's price in USD per million tokens,
        /// instead of the built-in list price (see [`PriceSpec`]).
        #[serde(default)]
        price: Option<Box<PriceSpec>>,
    },
}

impl AgentFile {
    /// The model the file's planner asks; `None` for a scripted planner.
    pub fn model_id(&self) -> Option<String> {
        self.model_spec(None).map(|(id, _)| id)
    }

    /// The model and its settings the planner asks (`model` overriding the
    /// file's); `None` for a scripted planner.
    pub(super) fn model_spec(&self, model: Option<&str>) -> Option<(String, ModelSettings)> {
        match (&self.planner, model) {
            (PlannerSpec::Scripted { .. }, None) => None,
            (PlannerSpec::Scripted { .. }, Some(m)) => {
                Some((m.to_owned(), ModelSettings::default()))
            }
            (
                PlannerSpec::Model {
                    model: file_model,
                    base_url,
                    max_tokens,
                    api_key_env,
                    temperature,
                    thinking_budget,
                    tool_choice,
                    stream,
                    ask_user,
                    price,
                },
                m,
            ) => Some((
                m.unwrap_or(file_model).to_owned(),
                ModelSettings {
                    base_url: base_url.clone(),
                    api_key_env: api_key_env.clone(),
                    max_tokens: *max_tokens,
                    temperature: *temperature,
                    thinking_budget: *thinking_budget,
                    tool_choice: tool_choice
                        .as_deref()
                        .map_or(ToolChoice::Auto, parse_tool_choice),
                    streaming: match stream {
                        None => weft_models::Streaming::Auto,
                        Some(true) => weft_models::Streaming::Always,
                        Some(false) => weft_models::Streaming::Never,
                    },
                    ask_tool: *ask_user,
                    // The file's price is its own model's, not an override's.
                    price: price
                        .as_ref()
                        .filter(|_| m.is_none_or(|m| m == file_model))
                        .and_then(|p| p.price().ok()),
                },
            )),
        }
    }
}
