//! The Anthropic Messages fake: the API's request rules and its stream.
//!
//! Rules (error messages as the API words them):
//! - `model`, `max_tokens` and `messages` are required; roles are `user`
//!   and `assistant`; text blocks are non-empty.
//! - A request whose messages hold `tool_use` or `tool_result` blocks must
//!   define tools; `tool_choice` only with tools.
//! - Each `tool_use` is answered by a `tool_result` in the next message,
//!   and results come before anything else in it; a `tool_result` answers a
//!   `tool_use` of the previous message.
//! - With thinking on: `budget_tokens` ≥ 1,024 and below `max_tokens`; no
//!   `tool_choice` that forces a tool; the last assistant message that calls
//!   tools starts with a thinking block; every thinking block is one the
//!   API issued, with its signature unchanged.

use serde_json::{Value, json};

use crate::{Api, Issued, Rejection, Reply, View, invalid, sse};

fn reject(message: impl Into<String>) -> Rejection {
    invalid(Api::Anthropic, "", &message.into())
}

/// Checks a request body against the rules; its [`View`] when it keeps them.
pub fn check(req: &Value, issued: &Issued) -> Result<View, Rejection> {
    if !req["model"].is_string() {
        return Err(reject("model: Field required"));
    }
    let max_tokens = req["max_tokens"]
        .as_u64()
        .ok_or_else(|| reject("max_tokens: Field required"))?;
    let messages = req["messages"]
        .as_array()
        .ok_or_else(|| reject("messages: Field required"))?;
    let tools: Vec<String> = match &req["tools"] {
        Value::Null => Vec::new(),
        Value::Array(tools) => tools
            .iter()
            .map(|t| {
                t["name"]
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| reject("tools.0.name: Field required"))
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(reject("tools: Input should be a valid list")),
    };
    let choice = req["tool_choice"]["type"].as_str();
    if !req["tool_choice"].is_null() && tools.is_empty() {
        return Err(reject(
            "tool_choice may only be specified while providing tools.",
        ));
    }
    let thinking = req["thinking"]["type"] == "enabled";
    if thinking {
        let budget = req["thinking"]["budget_tokens"].as_u64().unwrap_or(0);
        if budget < 1024 {
            return Err(reject(
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
            ));
        }
        if max_tokens <= budget {
            return Err(reject(
                "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size",
            ));
        }
        if matches!(choice, Some("any" | "tool")) {
            return Err(reject(
                "Thinking may not be enabled when tool_choice forces tool use.",
            ));
        }
    }
    let mut view = View {
        tools,
        forbidden: choice == Some("none"),
        ..View::default()
    };
    // The tool_use ids of the previous message, waiting for their results.
    let mut open: Vec<String> = Vec::new();
    // The last assistant message, when it calls tools.
    let mut last_calling_assistant: Option<usize> = None;
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        if role != "user" && role != "assistant" {
            return Err(reject(format!(
                "messages.{i}.role: Input should be 'user' or 'assistant'"
            )));
        }
        let blocks: Vec<Value> = match &m["content"] {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(b) => b.clone(),
            _ => return Err(reject(format!("messages.{i}.content: Field required"))),
        };
        if blocks.is_empty() {
            return Err(reject(format!(
                "messages.{i}: all messages must have non-empty content except for the optional final assistant message"
            )));
        }
        let mut answered: Vec<String> = Vec::new();
        let mut calls: Vec<String> = Vec::new();
        let mut seen_other = false;
        for (j, b) in blocks.iter().enumerate() {
            match (role, b["type"].as_str().unwrap_or_default()) {
                (_, "text") => {
                    if b["text"].as_str().is_none_or(str::is_empty) {
                        return Err(reject("messages: text content blocks must be non-empty"));
                    }
                    seen_other = true;
                }
                ("assistant", "tool_use") => {
                    calls.push(b["id"].as_str().unwrap_or_default().to_owned());
                    view.calls
                        .push(b["name"].as_str().unwrap_or_default().to_owned());
                }
                ("user", "tool_result") => {
                    let id = b["tool_use_id"].as_str().unwrap_or_default().to_owned();
                    if !open.contains(&id) {
                        return Err(reject(format!(
                            "messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                        )));
                    }
                    if seen_other {
                        return Err(reject(format!(
                            "messages.{i}.content.{j}: `tool_result` blocks must come first in the message, before any other content"
                        )));
                    }
                    view.results += 1;
                    answered.push(id);
                }
                ("assistant", "thinking") => {
                    let text = b["thinking"].as_str().unwrap_or_default();
                    let sig = b["signature"].as_str().unwrap_or_default();
                    let known = issued
                        .lock()
                        .is_ok_and(|m| m.values().any(|(t, s)| t == text && s == sig));
                    if !known {
                        return Err(reject(format!(
                            "messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
                        )));
                    }
                }
                ("assistant", "redacted_thinking") => {}
                (role, kind) => {
                    return Err(reject(format!(
                        "messages.{i}.content.{j}: a `{kind}` block is not allowed in a `{role}` message"
                    )));
                }
            }
        }
        let missing: Vec<&String> = open.iter().filter(|id| !answered.contains(id)).collect();
        if !missing.is_empty() {
            let ids: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
            return Err(reject(format!(
                "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                ids.join(", ")
            )));
        }
        if role == "assistant" {
            last_calling_assistant = (!calls.is_empty()).then_some(i);
        }
        open = calls;
    }
    if !open.is_empty() {
        return Err(reject(format!(
            "messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
            messages.len(),
            open.join(", ")
        )));
    }
    if (!view.calls.is_empty() || view.results > 0) && view.tools.is_empty() {
        return Err(reject(
            "Requests which include `tool_use` or `tool_result` blocks must define tools.",
        ));
    }
    if thinking && let Some(i) = last_calling_assistant {
        let first = messages[i]["content"][0]["type"].as_str().unwrap_or("text");
        if first != "thinking" && first != "redacted_thinking" {
            return Err(reject(format!(
                "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
            )));
        }
    }
    Ok(view)
}

/// The stream answering request `n` with `reply`; a tool call is preceded
/// by a signed thinking block when `thinking`.
pub fn stream(reply: &Reply, thinking: bool, n: usize, issued: &Issued) -> String {
    let mut ev: Vec<(Option<&str>, Value)> = vec![(
        Some("message_start"),
        json!({"type": "message_start", "message": {"id": format!("msg_{n}"), "type": "message",
            "role": "assistant", "model": "claude-fake", "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": {"input_tokens": 40, "output_tokens": 1}}}),
    )];
    let mut index = 0;
    let stop = match reply {
        Reply::Call { name, args } => {
            if thinking {
                let text = format!("I should call {name} (turn {n}).");
                let sig = format!("sig-{n}-{:x}", text.len() * 7919 + n);
                if let Ok(mut m) = issued.lock() {
                    m.insert(format!("thinking/{n}"), (text.clone(), sig.clone()));
                }
                ev.push((
                    Some("content_block_start"),
                    json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
                ));
                ev.push((
                    Some("content_block_delta"),
                    json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": text}}),
                ));
                ev.push((
                    Some("content_block_delta"),
                    json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "signature_delta", "signature": sig}}),
                ));
                ev.push((
                    Some("content_block_stop"),
                    json!({"type": "content_block_stop", "index": 0}),
                ));
                index = 1;
            }
            let args = args.to_string();
            let (a, b) = args.split_at(args.len() / 2);
            ev.push((Some("content_block_start"), json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": format!("toolu_{n}"), "name": name, "input": {}}})));
            ev.push((Some("ping"), json!({"type": "ping"})));
            for part in [a, b] {
                ev.push((
                    Some("content_block_delta"),
                    json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": part}}),
                ));
            }
            "tool_use"
        }
        Reply::Text(text) => {
            ev.push((
                Some("content_block_start"),
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
            ));
            ev.push((
                Some("content_block_delta"),
                json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": text}}),
            ));
            "end_turn"
        }
    };
    ev.push((
        Some("content_block_stop"),
        json!({"type": "content_block_stop", "index": index}),
    ));
    ev.push((
        Some("message_delta"),
        json!({"type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 9}}),
    ));
    ev.push((Some("message_stop"), json!({"type": "message_stop"})));
    sse::frame(&ev)
}
