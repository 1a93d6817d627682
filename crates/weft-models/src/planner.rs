//! The model planner: weft's default [`Planner`], deciding each turn by
//! asking a [`ModelClient`].
//!
//! The system prompt is the prompt [`SYSTEM_PROMPT`] rendered through the
//! run's prompt registry (`PlannerContext::render_prompt_or`: an override in
//! the run's scope, else the agent's template, else
//! [`DEFAULT_SYSTEM_TEMPLATE`], which is the agent instruction), then the
//! toolset instructions, then the reminders due this turn (safety first):
//! reminders reach the model as system context, never as a user message,
//! and no override can leave them out. The tools are the ones the run
//! allows this turn (`input.tools`), renamed for the provider (see
//! [`crate::names`]). The answer streams through the input's
//! [`PlannerEvents`] as it arrives; tool calls become
//! [`ToolCallRequest::raw`] requests that the run machine validates (an
//! unknown tool or malformed arguments goes through its invalid-call
//! resolution, never a crash here). When the runtime forces finalization the
//! model is asked for a final answer with tools disabled.
//!
//! Answers stream by default ([`Streaming`]); a server that fails a streamed
//! request with tools before sending anything (some OpenAI-compatible
//! servers cannot stream tool calls) is asked again for a whole answer, and
//! from then on this planner asks it for whole answers whenever tools are
//! offered. A whole answer reaches the event sink as the chunks a stream
//! would have carried. An answer that reports no usage is counted at about
//! four bytes per token. Usage (each `usage` event and the call's summary)
//! carries its cost at the model's price when one is known
//! ([`crate::price`]).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use async_trait::async_trait;
use weft_core::ToolCallId;
use weft_core::message::{Message, Part, Role, Thinking};
use weft_core::model::{ModelClient, ModelError, ModelRequest, ToolChoice, Usage};
use weft_core::planner::{
    Decision, PlanInput, PlanResult, PlanResumeInput, Planner, PlannerError, PlannerEvents,
    Termination, ToolCallRequest,
};
use weft_core::tool::{Labels, ToolSpec};

use crate::names::{ToolNames, encode};
use crate::price::{ModelPrice, Pricing};

mod answer;
mod ask_user;
mod setup;

pub use ask_user::{ASK_TOOL, CHOICE, MAX_OPTION, MAX_OPTIONS, MAX_QUESTION};
use ask_user::{ask_tool_spec, asked};

/// The name of the prompt the model planner renders as its system prompt.
pub const SYSTEM_PROMPT: &str = "system";

/// The system prompt's template when neither the agent nor an override
/// gives one. Its variables: `instruction`, `toolset_instructions` (a list),
/// `agent_id`, `run_id`, `session_id` and `labels` (a map).
pub const DEFAULT_SYSTEM_TEMPLATE: &str = "{{ instruction }}";

/// How the model planner prompts its model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelPlannerConfig {
    /// The agent's instruction, first in the system prompt.
    pub instruction: String,
    /// Instructions contributed by the agent's toolsets, in order.
    pub toolset_instructions: Vec<String>,
    /// Output token limit per model call.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Token budget for extended thinking / reasoning.
    pub thinking_budget: Option<u32>,
    /// Whether and which tool the model must call (weft tool names).
    pub tool_choice: ToolChoice,
    /// Keep `tool_choice` on the turns that follow tool results; by default
    /// it applies until the run has tool results and then goes back to
    /// `Auto`, so a forced call cannot loop (as in the OpenAI Agents SDK).
    pub keep_tool_choice: bool,
    /// Whether answers stream.
    pub streaming: Streaming,
    /// Offer the model the [`ASK_TOOL`], through which it asks the user a
    /// question: the turn becomes a clarification await, and the answer
    /// reaches the model as the user's next message.
    pub ask_tool: bool,
    /// The model's price; when absent, the built-in list price of a
    /// well-known model ([`crate::price`]), else none and usage has no cost.
    pub price: Option<ModelPrice>,
}

/// Whether the model planner asks for streamed answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Streaming {
    /// Stream; when a streamed request with tools fails before its first
    /// chunk, ask for a whole answer instead, and keep doing so for requests
    /// with tools.
    #[default]
    Auto,
    /// Always stream.
    Always,
    /// Never stream: ask for whole answers (`stream = false`).
    Never,
}

/// A [`Planner`] over any [`ModelClient`]; see the module docs.
#[derive(Clone)]
pub struct ModelPlanner {
    model: Arc<dyn ModelClient>,
    config: ModelPlannerConfig,
    /// Set once the server failed a streamed request with tools (`Auto`).
    whole_with_tools: Arc<AtomicBool>,
    /// What the model's tokens cost, when known.
    pricing: Option<Pricing>,
}

impl std::fmt::Debug for ModelPlanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelPlanner")
            .field("model", &self.model.id())
            .field("config", &self.config)
            .finish()
    }
}

impl ModelPlanner {
    /// A planner asking `model`, prompted by `config`.
    pub fn new(model: Arc<dyn ModelClient>, config: ModelPlannerConfig) -> Self {
        let pricing = Pricing::for_model(model.id(), config.price);
        Self {
            model,
            config,
            whole_with_tools: Arc::new(AtomicBool::new(false)),
            pricing,
        }
    }

    /// The price this planner's usage is costed at, if known.
    pub fn pricing(&self) -> Option<&Pricing> {
        self.pricing.as_ref()
    }

    /// The request this planner sends for `input`, and the name table to
    /// decode the answer; fails when the system prompt does not render.
    pub fn request(
        &self,
        input: &PlanInput<'_>,
        finalize: Option<&Termination>,
    ) -> Result<(ModelRequest, ToolNames), PlannerError> {
        let mut names = ToolNames::new(input.tools.iter().map(|t| t.name.as_str()));
        let messages: Vec<Message> = input
            .messages
            .iter()
            .map(|m| {
                let parts = m
                    .parts
                    .iter()
                    .map(|p| match p {
                        Part::ToolUse { id, name, input } => {
                            names.add(name);
                            Part::ToolUse {
                                id: id.clone(),
                                name: encode(name),
                                input: input.clone(),
                            }
                        }
                        other => other.clone(),
                    })
                    .collect();
                Message {
                    role: m.role,
                    parts,
                }
            })
            .collect();
        let mut tools: Vec<ToolSpec> = input
            .tools
            .iter()
            .map(|t| ToolSpec {
                name: encode(t.name.as_str()).as_str().into(),
                ..t.clone()
            })
            .collect();
        if self.config.ask_tool && finalize.is_none() {
            tools.push(ask_tool_spec());
        }
        let request = ModelRequest {
            system: self.system_prompt(input, finalize)?,
            messages,
            tools,
            tool_choice: self.tool_choice(input, finalize),
            max_tokens: self.config.max_tokens,
            temperature: self.config.temperature,
            thinking_budget: self.config.thinking_budget,
            ..ModelRequest::default()
        };
        Ok((request, names))
    }

    fn tool_choice(&self, input: &PlanInput<'_>, finalize: Option<&Termination>) -> ToolChoice {
        if finalize.is_some() {
            return ToolChoice::None;
        }
        let after_tools = input.messages.last().is_some_and(|m| m.role == Role::Tool);
        if after_tools && !self.config.keep_tool_choice {
            return ToolChoice::Auto;
        }
        match &self.config.tool_choice {
            ToolChoice::Tool(name) => ToolChoice::Tool(encode(name)),
            other => other.clone(),
        }
    }

    fn system_prompt(
        &self,
        input: &PlanInput<'_>,
        finalize: Option<&Termination>,
    ) -> Result<Option<String>, PlannerError> {
        let vars = serde_json::json!({
            "instruction": self.config.instruction,
            "toolset_instructions": self.config.toolset_instructions,
            "agent_id": input.run.agent_id,
            "run_id": input.run.run_id,
            "session_id": input.run.session_id,
            "labels": *input.run.labels,
        });
        let base = input
            .context
            .render_prompt_or(SYSTEM_PROMPT, DEFAULT_SYSTEM_TEMPLATE, &vars)?;
        let mut sections: Vec<String> = Vec::new();
        if !base.trim().is_empty() {
            sections.push(base);
        }
        sections.extend(
            self.config
                .toolset_instructions
                .iter()
                .filter(|s| !s.trim().is_empty())
                .cloned(),
        );
        sections.extend(
            input
                .reminders
                .iter()
                .filter(|r| !r.text.trim().is_empty())
                .map(|r| r.text.clone()),
        );
        if let Some(t) = finalize {
            sections.push(format!(
                "Tools are no longer available ({}). Answer the user now with what you have.",
                t.message
            ));
        }
        Ok((!sections.is_empty()).then(|| sections.join("\n\n")))
    }

    async fn plan(
        &self,
        input: PlanInput<'_>,
        finalize: Option<&Termination>,
    ) -> Result<PlanResult, PlannerError> {
        use tracing::Instrument as _;
        let (request, names) = self.request(&input, finalize)?;
        self.record_setup(&input, &request);
        let events = DecodingEvents {
            inner: input.events,
            names: &names,
            pricing: self.pricing.as_ref(),
        };
        let span = crate::trace::chat_span(&*self.model, &request, &names);
        let mut summary = match self.ask(&request, &events).instrument(span.clone()).await {
            Ok(summary) => summary,
            Err((kind, e)) => {
                crate::trace::chat_failed(&span, kind);
                return Err(e);
            }
        };
        crate::trace::chat_ended(&span, &summary, &names);
        if let Some(pricing) = &self.pricing {
            summary.usage = pricing.priced(summary.usage);
        }
        input.events.model_output(self.model.id(), &summary);
        let mut preamble: Vec<Part> = summary.thinking.into_iter().map(Part::Thinking).collect();
        let mut result = if summary.tool_calls.is_empty() || finalize.is_some() {
            PlanResult::new(Decision::FinalResponse {
                message: Message::assistant(summary.text),
            })
        } else if let Some(item) = self
            .config
            .ask_tool
            .then(|| summary.tool_calls.iter().find_map(asked))
            .flatten()
        {
            // The model asks the user: the turn is a clarification or a
            // multiple-choice question (the turn's other calls wait for the
            // model to ask for them again).
            if !summary.text.is_empty() {
                preamble.push(Part::Text { text: summary.text });
            }
            PlanResult::new(Decision::Await {
                preamble,
                items: vec![item],
            })
        } else {
            if !summary.text.is_empty() {
                preamble.push(Part::Text { text: summary.text });
            }
            let calls = summary
                .tool_calls
                .into_iter()
                .map(|c| ToolCallRequest::raw(c.id, names.decode(&c.name), c.arguments))
                .collect();
            PlanResult::new(Decision::ToolCalls { preamble, calls })
        };
        result.streamed = true;
        result.usage = Some(summary.usage);
        Ok(result)
    }

    fn error(&self, e: &ModelError) -> PlannerError {
        PlannerError {
            message: format!("model {}: {e}", self.model.id()),
            retryable: e.is_retryable(),
        }
    }
}

#[async_trait]
impl Planner for ModelPlanner {
    async fn plan_start(&self, input: PlanInput<'_>) -> Result<PlanResult, PlannerError> {
        self.plan(input, None).await
    }

    async fn plan_resume(&self, input: PlanResumeInput<'_>) -> Result<PlanResult, PlannerError> {
        self.plan(input.base, input.finalize).await
    }

    fn model_id(&self) -> Option<&str> {
        Some(self.model.id())
    }
}

/// A model error's kind, as the `error.type` of the call's span.
fn error_kind(e: &ModelError) -> &'static str {
    match e {
        ModelError::Config { .. } => "config",
        ModelError::Http { .. } => "http",
        ModelError::Timeout { .. } => "timeout",
        ModelError::Connection { .. } => "connection",
        ModelError::Truncated { .. } => "truncated",
        ModelError::Malformed { .. } => "malformed",
        ModelError::Stream { .. } => "stream",
        ModelError::Overloaded { .. } => "overloaded",
        ModelError::Other { .. } => "other",
    }
}

/// Forwards events, giving tool-call deltas their weft tool names and
/// usage its cost at the model's price.
struct DecodingEvents<'a> {
    inner: &'a dyn PlannerEvents,
    names: &'a ToolNames,
    pricing: Option<&'a Pricing>,
}

impl PlannerEvents for DecodingEvents<'_> {
    fn assistant_chunk(&self, text: &str) {
        self.inner.assistant_chunk(text);
    }
    fn tool_call_args_delta(&self, call_id: &ToolCallId, tool: &str, delta: &str) {
        self.inner
            .tool_call_args_delta(call_id, &self.names.decode(tool), delta);
    }
    fn thinking_block(&self, thinking: &Thinking) {
        self.inner.thinking_block(thinking);
    }
    fn planner_thought(&self, text: &str, labels: &Labels) {
        self.inner.planner_thought(text, labels);
    }
    fn usage_delta(&self, usage: &Usage) {
        match self.pricing {
            // Usage events carry what changed; each change is costed on
            // its own, so a run's costs sum like its tokens.
            Some(pricing) => self.inner.usage_delta(&pricing.priced(*usage)),
            None => self.inner.usage_delta(usage),
        }
    }
}
