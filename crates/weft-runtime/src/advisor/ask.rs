//! One advisor call: the nested request (inherited system text without the
//! guidance block, the advisor prompt, the recent conversation with its tool
//! exchanges as text, the question), streamed as advice deltas, retried once when the provider says
//! a retry may succeed, and answered with the advisor's result JSON. A
//! provider failure or an empty answer uses nothing.

use std::sync::Arc;

use futures_util::StreamExt;
use serde_json::Value;
use weft_core::ToolCallId;
use weft_core::message::{Message, Role};
use weft_core::model::{ModelError, ModelRequest, StreamChunk, ToolChoice};
use weft_core::tool::{OutputSink, ToolIdent, ToolOutput};

use super::{ADVICE_STREAM, AdvisorConfig, RESET_STREAM, SYSTEM, result, strip_guidance, window};

/// How many times the nested call is made at most.
const ATTEMPTS: u32 = 2;

/// What one advisor call needs.
pub(crate) struct AskInput {
    /// The agent's advisor.
    pub config: AdvisorConfig,
    /// The run's transcript.
    pub messages: Vec<Arc<Message>>,
    /// How many uses the run has used before this call.
    pub used: u32,
    /// The call being answered.
    pub id: ToolCallId,
    /// The tool's name.
    pub name: ToolIdent,
    /// The call's arguments.
    pub payload: Arc<Value>,
    /// Where advice deltas go.
    pub output: OutputSink,
}

/// The nested request for `question` asked in a run whose transcript is `messages`.
pub fn request(config: &AdvisorConfig, messages: &[Arc<Message>], question: &str) -> ModelRequest {
    let mut system: Vec<String> = config
        .system
        .iter()
        .map(|s| strip_guidance(s))
        .chain(
            messages
                .iter()
                .filter(|m| m.role == Role::System)
                .map(|m| strip_guidance(&m.joined_text())),
        )
        .filter(|s| !s.is_empty())
        .collect();
    system.push(SYSTEM.to_owned());
    let refs: Vec<&Message> = messages.iter().map(|m| &**m).collect();
    let mut conversation = window::as_text(window::recent(&refs));
    conversation.push(Message::user(question));
    ModelRequest {
        system: Some(system.join("\n\n")),
        messages: conversation,
        tools: Vec::new(),
        tool_choice: ToolChoice::None,
        max_tokens: Some(config.max_output_tokens.get()),
        temperature: config.temperature,
        thinking_budget: config.thinking_budget,
        ..ModelRequest::default()
    }
}

/// Answers one advisor call; see the module docs.
pub(crate) async fn ask(input: AskInput) -> ToolOutput {
    let config = &input.config;
    let model = config.model.id().to_owned();
    let max = config.max_uses_per_run.get();
    let left = max.saturating_sub(input.used);
    let answer = |v: Value| {
        ToolOutput::ok(
            input.id.clone(),
            input.name.clone(),
            input.payload.clone(),
            v,
        )
    };
    if left == 0 {
        let error = format!("all {max} advisor uses of this run are spent");
        return answer(result("limit_reached", None, Some(&error), &model, 0));
    }
    let question = input
        .payload
        .get("question")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let request = request(config, &input.messages, question);
    let mut attempt = 1;
    let outcome = loop {
        let mut streamed = false;
        match stream(config, &request, &input.output, &mut streamed).await {
            Err(e) if e.is_retryable() && attempt < ATTEMPTS => {
                attempt += 1;
                if streamed {
                    input.output.publish(RESET_STREAM, "");
                }
            }
            other => break other,
        }
    };
    match outcome {
        // An advice spends one of the run's uses, in the commit of its result.
        Ok(text) if !text.trim().is_empty() => {
            answer(result("advice", Some(text.trim()), None, &model, left - 1)).charged()
        }
        Ok(_) => answer(result(
            "error",
            None,
            Some("the advisor gave an empty answer"),
            &model,
            left,
        )),
        Err(e) => answer(result("error", None, Some(&e.to_string()), &model, left)),
    }
}

/// One nested call: its text, published delta by delta.
async fn stream(
    config: &AdvisorConfig,
    request: &ModelRequest,
    output: &OutputSink,
    streamed: &mut bool,
) -> Result<String, ModelError> {
    let mut chunks = config.model.stream(request).await?;
    let mut text = String::new();
    while let Some(chunk) = chunks.next().await {
        if let StreamChunk::TextDelta { text: delta } = chunk? {
            output.publish(ADVICE_STREAM, &delta);
            *streamed = true;
            text.push_str(&delta);
        }
    }
    Ok(text)
}
