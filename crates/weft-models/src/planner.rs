//! The model planner: weft's default [`Planner`], deciding each turn by
//! asking a [`ModelClient`].
//!
//! The system prompt is the agent instruction, then the toolset
//! instructions, then the active reminders. The tools are the ones the run
//! allows this turn (`input.tools`), renamed for the provider (see
//! [`crate::names`]). The answer streams through the input's
//! [`PlannerEvents`] as it arrives; tool calls become
//! [`ToolCallRequest::raw`] requests that the run machine validates (an
//! unknown tool or malformed arguments goes through its invalid-call
//! resolution, never a crash here). When the runtime forces finalization the
//! model is asked for a final answer with tools disabled.

use std::sync::Arc;

use async_trait::async_trait;
use futures_util::StreamExt;
use weft_core::ToolCallId;
use weft_core::message::{Message, Part, Role, Thinking};
use weft_core::model::{ModelClient, ModelError, ModelRequest, StreamAssembler, ToolChoice, Usage};
use weft_core::planner::{
    Decision, PlanInput, PlanResult, PlanResumeInput, Planner, PlannerError, PlannerEvents,
    Termination, ToolCallRequest,
};
use weft_core::tool::{Labels, ToolSpec};

use crate::names::{ToolNames, encode};

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
}

/// A [`Planner`] over any [`ModelClient`]; see the module docs.
#[derive(Clone)]
pub struct ModelPlanner {
    model: Arc<dyn ModelClient>,
    config: ModelPlannerConfig,
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
        Self { model, config }
    }

    /// The request this planner sends for `input`, and the name table to decode the answer.
    pub fn request(
        &self,
        input: &PlanInput<'_>,
        finalize: Option<&Termination>,
    ) -> (ModelRequest, ToolNames) {
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
        let tools: Vec<ToolSpec> = input
            .tools
            .iter()
            .map(|t| ToolSpec {
                name: encode(t.name.as_str()).as_str().into(),
                ..t.clone()
            })
            .collect();
        let request = ModelRequest {
            system: self.system_prompt(input, finalize),
            messages,
            tools,
            tool_choice: self.tool_choice(input, finalize),
            max_tokens: self.config.max_tokens,
            temperature: self.config.temperature,
            thinking_budget: self.config.thinking_budget,
            ..ModelRequest::default()
        };
        (request, names)
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
    ) -> Option<String> {
        let mut sections: Vec<String> = Vec::new();
        if !self.config.instruction.trim().is_empty() {
            sections.push(self.config.instruction.clone());
        }
        sections.extend(
            self.config
                .toolset_instructions
                .iter()
                .filter(|s| !s.trim().is_empty())
                .cloned(),
        );
        sections.extend(input.reminders.iter().map(|r| r.text.clone()));
        if let Some(t) = finalize {
            sections.push(format!(
                "Tools are no longer available ({}). Answer the user now with what you have.",
                t.message
            ));
        }
        (!sections.is_empty()).then(|| sections.join("\n\n"))
    }

    async fn plan(
        &self,
        input: PlanInput<'_>,
        finalize: Option<&Termination>,
    ) -> Result<PlanResult, PlannerError> {
        let (request, names) = self.request(&input, finalize);
        let events = DecodingEvents {
            inner: input.events,
            names: &names,
        };
        let mut stream = self
            .model
            .stream(&request)
            .await
            .map_err(|e| self.error(&e))?;
        let mut asm = StreamAssembler::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| self.error(&e))?;
            asm.push(chunk, &events).map_err(|e| PlannerError {
                message: format!("model {} sent an inconsistent stream: {e}", self.model.id()),
                retryable: true,
            })?;
        }
        let summary = asm.finish(&events);
        let mut preamble: Vec<Part> = summary.thinking.into_iter().map(Part::Thinking).collect();
        let mut result = if summary.tool_calls.is_empty() || finalize.is_some() {
            PlanResult::new(Decision::FinalResponse {
                message: Message::assistant(summary.text),
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
}

/// Forwards events, giving tool-call deltas their weft tool names.
struct DecodingEvents<'a> {
    inner: &'a dyn PlannerEvents,
    names: &'a ToolNames,
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
        self.inner.usage_delta(usage);
    }
}
