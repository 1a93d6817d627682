//! Building Chat Completions request bodies from a [`ModelRequest`].
//!
//! The system prompt is the first message; assistant tool calls carry their
//! arguments as JSON text; each tool result is its own `tool` message;
//! thinking from other providers is dropped (Chat has no way to carry it).
//! An assistant message's content is a string for compatible servers
//! (never `null`, which some cannot take). The request rules of
//! [`crate::rules`] are kept before anything is encoded.

use serde_json::{Map, Value, json};
use weft_core::message::{Message, Part, Role, joined_model_text};
use weft_core::model::{ModelRequest, ToolChoice};

use super::ChatFlavor;
use crate::rules;
use crate::util::{image_url, insert_sampling};

/// The JSON body for `model`, streaming or not, keeping the request rules
/// of [`crate::rules`].
pub fn build(flavor: ChatFlavor, model: &str, req: &ModelRequest, stream: bool) -> Value {
    let req = &*rules::conform(req);
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    let mut messages = Vec::new();
    if let Some(system) = &req.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    for m in &req.messages {
        push_message(flavor, m, &mut messages);
    }
    body.insert("messages".into(), Value::Array(messages));
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name.as_str(), "description": t.description, "parameters": t.input_schema}})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = tool_choice(
            &req.tool_choice,
            |name| json!({"type": "function", "function": {"name": name}}),
        );
        body.insert("tool_choice".into(), choice);
    }
    if let Some(n) = req.max_tokens {
        let key = match flavor {
            ChatFlavor::OpenAi => "max_completion_tokens",
            ChatFlavor::Compat => "max_tokens",
        };
        body.insert(key.into(), json!(n));
    }
    insert_sampling(&mut body, req);
    if let Some(s) = req.seed {
        body.insert("seed".into(), json!(s));
    }
    if !req.stop.is_empty() {
        body.insert("stop".into(), json!(req.stop));
    }
    if let (Some(budget), ChatFlavor::OpenAi) = (req.thinking_budget, flavor) {
        body.insert("reasoning_effort".into(), json!(effort(budget)));
    }
    if stream {
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

/// An OpenAI `tool_choice`: a mode word, or `one(name)` for a single tool.
pub(crate) fn tool_choice(choice: &ToolChoice, one: impl FnOnce(&str) -> Value) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => one(name.as_str()),
    }
}

/// The reasoning effort matching a thinking budget.
pub(crate) fn effort(budget: u32) -> &'static str {
    match budget {
        0..2048 => "low",
        2048..8192 => "medium",
        _ => "high",
    }
}

fn push_message(flavor: ChatFlavor, m: &Message, out: &mut Vec<Value>) {
    match m.role {
        Role::System => out.push(json!({"role": "system", "content": m.joined_text()})),
        Role::Assistant => {
            let text = m.joined_text();
            let calls: Vec<Value> = m
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::ToolUse { id, name, input } => Some(json!({
                        "id": id.as_str(), "type": "function",
                        "function": {"name": name, "arguments": input.to_string()}})),
                    _ => None,
                })
                .collect();
            // OpenAI takes `null` beside tool calls; compatible servers
            // (llama.cpp's among them) need a string.
            let content = match flavor {
                ChatFlavor::OpenAi if text.is_empty() => Value::Null,
                _ => json!(text),
            };
            let mut msg = json!({"role": "assistant", "content": content});
            if !calls.is_empty() {
                msg["tool_calls"] = Value::Array(calls);
            }
            out.push(msg);
        }
        Role::User | Role::Tool => {
            let mut user = Vec::new();
            for p in &m.parts {
                match p {
                    Part::ToolResult {
                        tool_use_id,
                        content,
                        ..
                    } => out.push(json!({"role": "tool", "tool_call_id": tool_use_id.as_str(),
                        "content": joined_model_text(content)})),
                    Part::Text { text } => user.push(json!({"type": "text", "text": text})),
                    Part::Resource(r) => {
                        user.push(json!({"type": "text", "text": r.model_text()}));
                    }
                    Part::Image(media) => {
                        user.push(
                            json!({"type": "image_url", "image_url": {"url": image_url(media)}}),
                        );
                    }
                    _ => {}
                }
            }
            if user.is_empty() {
                return;
            }
            let all_text = user.iter().all(|p| p["type"] == "text");
            let content = if all_text {
                json!(joined_model_text(&m.parts))
            } else {
                Value::Array(user)
            };
            out.push(json!({"role": "user", "content": content}));
        }
    }
}
