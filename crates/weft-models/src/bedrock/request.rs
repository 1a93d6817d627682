//! Building Converse request bodies from a [`ModelRequest`] (the same body
//! for `Converse` and `ConverseStream`; the model is in the URL).
//!
//! The system prompt is `system`; the conversation is `messages` of `user`
//! and `assistant` turns, consecutive turns of one role merged and tool
//! results first in theirs. Signed reasoning goes back as
//! `reasoningContent.reasoningText` with its signature byte for byte, and
//! redacted reasoning as `redactedContent`; unsigned reasoning and other
//! providers' (OpenAI reasoning items, Gemini thought signatures) is left
//! out. Tools are `toolConfig.tools[].toolSpec`s, and a `toolConfig` goes
//! with every request whose messages hold `toolUse` or `toolResult` blocks
//! (Bedrock refuses them otherwise), declaring the tools the transcript
//! calls when the request defines none. Converse's `toolChoice` cannot
//! forbid tools (it is `auto`, `any` or `tool`): a turn that forbids them
//! keeps their declarations and says so in its system prompt
//! ([`NO_TOOLS_NOW`]). Thinking is Anthropic's, for Claude models only, in
//! `additionalModelRequestFields`, under Anthropic's rules
//! ([`rules::thinking_allowed`]).

use serde_json::{Map, Value, json};
use weft_core::message::{MediaSource, Part, Thinking, joined_model_text};
use weft_core::model::{ModelRequest, ToolChoice};

use crate::anthropic::DEFAULT_MAX_TOKENS;
use crate::gemini;
use crate::rules;
use crate::util::{alternating_messages, system_text};

/// The system prompt's last line on a turn that forbids tool calls.
pub const NO_TOOLS_NOW: &str =
    "No tool can be called in this turn: answer in text with what you have.";

/// Whether `model` (a model id, an inference profile id or ARN) is an
/// Anthropic Claude model, which takes Anthropic's thinking settings.
pub fn is_claude(model: &str) -> bool {
    model.contains("anthropic.")
}

/// The JSON body of a Converse request for `model`.
pub fn build(model: &str, req: &ModelRequest) -> Value {
    let req = &*rules::conform(req);
    let declared = rules::declare_used_tools(req);
    let (tools, tool_choice) = match &declared {
        Some((tools, choice)) => (tools.as_slice(), choice),
        None => (req.tools.as_slice(), &req.tool_choice),
    };
    let thinking = req
        .thinking_budget
        .filter(|_| is_claude(model) && rules::thinking_allowed(req));
    let mut body = Map::new();
    let mut system = Vec::new();
    if let Some(text) = system_text(req) {
        system.push(json!({"text": text}));
    }
    if !tools.is_empty() && *tool_choice == ToolChoice::None {
        system.push(json!({"text": NO_TOOLS_NOW}));
    }
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    body.insert(
        "messages".into(),
        Value::Array(alternating_messages(&req.messages, block, is_tool_result)),
    );
    let max_tokens = req
        .max_tokens
        .unwrap_or_else(|| thinking.map_or(DEFAULT_MAX_TOKENS, |b| b + DEFAULT_MAX_TOKENS));
    let mut inference = Map::new();
    inference.insert("maxTokens".into(), json!(max_tokens));
    if let Some(t) = req.temperature {
        inference.insert("temperature".into(), json!(t));
    }
    if let Some(p) = req.top_p {
        inference.insert("topP".into(), json!(p));
    }
    if !req.stop.is_empty() {
        inference.insert("stopSequences".into(), json!(req.stop));
    }
    body.insert("inferenceConfig".into(), Value::Object(inference));
    if !tools.is_empty() {
        let specs: Vec<Value> = tools
            .iter()
            .map(|t| {
                let mut spec =
                    json!({"name": t.name.as_str(), "inputSchema": {"json": t.input_schema}});
                if !t.description.is_empty() {
                    spec["description"] = json!(t.description);
                }
                json!({"toolSpec": spec})
            })
            .collect();
        let mut config = json!({"tools": specs});
        let choice = match tool_choice {
            ToolChoice::Auto | ToolChoice::None => None,
            ToolChoice::Required => Some(json!({"any": {}})),
            ToolChoice::Tool(name) => Some(json!({"tool": {"name": name}})),
        };
        if let Some(choice) = choice {
            config["toolChoice"] = choice;
        }
        body.insert("toolConfig".into(), config);
    }
    if let Some(budget) = thinking {
        body.insert(
            "additionalModelRequestFields".into(),
            json!({"thinking": {"type": "enabled", "budget_tokens": budget}}),
        );
    }
    Value::Object(body)
}

fn is_tool_result(v: &Value) -> bool {
    v.get("toolResult").is_some()
}

fn block(part: &Part) -> Option<Value> {
    Some(match part {
        Part::Text { text } if text.is_empty() => return None,
        Part::Text { text } => json!({"text": text}),
        Part::Thinking(Thinking::Text {
            text,
            signature: Some(signature),
        }) => {
            json!({"reasoningContent": {"reasoningText": {"text": text, "signature": signature}}})
        }
        Part::Thinking(Thinking::Redacted { data }) if !gemini::signature::is_signature(data) => {
            json!({"reasoningContent": {"redactedContent": data}})
        }
        Part::Thinking(_) => return None,
        Part::ToolUse { id, name, input } => {
            let input = match &**input {
                Value::Object(_) => (**input).clone(),
                Value::Null => json!({}),
                other => json!({"value": other}),
            };
            json!({"toolUse": {"toolUseId": id.as_str(), "name": name, "input": input}})
        }
        Part::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => {
            let text = joined_model_text(content);
            let content = if text.is_empty() {
                json!([{"json": {}}])
            } else {
                json!([{"text": text}])
            };
            let status = if *is_error { "error" } else { "success" };
            json!({"toolResult": {"toolUseId": tool_use_id.as_str(), "content": content, "status": status}})
        }
        Part::Image(media) => match &media.source {
            MediaSource::Base64(data) => {
                let format = media
                    .media_type
                    .strip_prefix("image/")
                    .unwrap_or(&media.media_type);
                let format = if format == "jpg" { "jpeg" } else { format };
                json!({"image": {"format": format, "source": {"bytes": data}}})
            }
            // Converse takes image bytes or S3 locations, not URLs.
            MediaSource::Url(url) => json!({"text": format!("[image: {url}]")}),
        },
        Part::Audio(_) => return None,
        Part::Resource(r) => json!({"text": r.model_text()}),
    })
}
