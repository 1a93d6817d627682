//! Building Anthropic Messages request bodies from a [`ModelRequest`].
//!
//! Tool results travel as user-role `tool_result` blocks (consecutive user
//! messages are merged, results first, as the API requires); signed thinking
//! and redacted thinking are carried back verbatim, while unsigned thinking
//! (cut off by an error) and other providers' reasoning (OpenAI reasoning
//! items, Gemini thought signatures) are dropped. Prompt
//! caching breakpoints go after the system prompt and after the last tool.
//! The API's request rules ([`crate::rules`]) are kept before anything is
//! encoded.

use serde_json::{Map, Value, json};
use weft_core::message::{Media, MediaSource, Part, Thinking};
use weft_core::model::{ModelRequest, ToolChoice};

use crate::gemini;
use crate::rules;
use crate::util::{alternating_messages, insert_sampling, system_text};

/// Output token limit used when the request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The JSON body for `model`, streaming or not, keeping the API's request
/// rules ([`crate::rules`]): the shared ones, tool definitions whenever the
/// messages hold tool blocks, and thinking only where the API takes it.
pub fn build(model: &str, req: &ModelRequest, stream: bool) -> Value {
    let req = &*rules::conform(req);
    let declared = rules::declare_used_tools(req);
    let (tools, tool_choice) = match &declared {
        Some((tools, choice)) => (tools.as_slice(), choice),
        None => (req.tools.as_slice(), &req.tool_choice),
    };
    let thinking_budget = req.thinking_budget.filter(|_| rules::thinking_allowed(req));
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    let max_tokens = req
        .max_tokens
        .unwrap_or_else(|| thinking_budget.map_or(DEFAULT_MAX_TOKENS, |b| b + DEFAULT_MAX_TOKENS));
    body.insert("max_tokens".into(), json!(max_tokens));
    if let Some(system) = system_text(req) {
        body.insert(
            "system".into(),
            json!([{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]),
        );
    }
    body.insert(
        "messages".into(),
        Value::Array(alternating_messages(&req.messages, block, is_tool_result)),
    );
    if !tools.is_empty() {
        let mut tools: Vec<Value> = tools
            .iter()
            .map(|t| json!({"name": t.name.as_str(), "description": t.description, "input_schema": t.input_schema}))
            .collect();
        if let Some(Value::Object(last)) = tools.last_mut() {
            last.insert("cache_control".into(), json!({"type": "ephemeral"}));
        }
        body.insert("tools".into(), Value::Array(tools));
        let choice = match tool_choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
        };
        body.insert("tool_choice".into(), choice);
    }
    if let Some(budget) = thinking_budget {
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    }
    insert_sampling(&mut body, req);
    if !req.stop.is_empty() {
        body.insert("stop_sequences".into(), json!(req.stop));
    }
    if stream {
        body.insert("stream".into(), json!(true));
    }
    Value::Object(body)
}

fn is_tool_result(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("tool_result")
}

fn block(part: &Part) -> Option<Value> {
    Some(match part {
        Part::Text { text } if text.is_empty() => return None,
        Part::Text { text } => json!({"type": "text", "text": text}),
        Part::Thinking(Thinking::Text {
            text,
            signature: Some(signature),
        }) => json!({"type": "thinking", "thinking": text, "signature": signature}),
        // Gemini's thought signatures travel as redacted blocks too; not Anthropic's.
        Part::Thinking(Thinking::Redacted { data }) if !gemini::signature::is_signature(data) => {
            json!({"type": "redacted_thinking", "data": data})
        }
        Part::Thinking(_) => return None,
        Part::ToolUse { id, name, input } => {
            json!({"type": "tool_use", "id": id.as_str(), "name": name, "input": input})
        }
        Part::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => {
            let content: Vec<Value> = content.iter().filter_map(block).collect();
            let mut v = json!({"type": "tool_result", "tool_use_id": tool_use_id.as_str(), "content": content});
            if *is_error {
                v["is_error"] = json!(true);
            }
            v
        }
        Part::Image(media) => json!({"type": "image", "source": source(media)}),
        Part::Audio(_) => return None,
        Part::Resource(r) => json!({"type": "text", "text": r.model_text()}),
    })
}

fn source(media: &Media) -> Value {
    match &media.source {
        MediaSource::Base64(data) => {
            json!({"type": "base64", "media_type": media.media_type, "data": data})
        }
        MediaSource::Url(url) => json!({"type": "url", "url": url}),
    }
}
