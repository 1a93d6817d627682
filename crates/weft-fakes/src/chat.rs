//! The Chat Completions fake (OpenAI's, and a compatible server's): the
//! API's request rules and its stream.
//!
//! Rules (error messages as OpenAI words them, status 400):
//! - `model` and `messages` are required; roles are `system`, `developer`,
//!   `user`, `assistant` and `tool`.
//! - `tool_choice` only with `tools`.
//! - An assistant message with `tool_calls` is followed by a `tool` message
//!   for every call id before any other role; a `tool` message answers a
//!   call of that assistant message.
//! - An assistant message's `content` may be `null` only beside
//!   `tool_calls`. A compatible server (llama.cpp's, through
//!   llama-cpp-python) takes no `null` content at all: it fails the request
//!   with HTTP 500, as that server does.

use serde_json::{Value, json};

use crate::{Api, Rejection, Reply, View, invalid, openai_tools, sse};

/// Checks a request body against the rules (a compatible server's when
/// `compat`); its [`View`] when it keeps them.
pub fn check(req: &Value, compat: bool) -> Result<View, Rejection> {
    let api = if compat { Api::Compat } else { Api::OpenAiChat };
    let reject = |param: &str, message: String| invalid(api, param, &message);
    if !req["model"].is_string() {
        return Err(reject("model", "you must provide a model parameter".into()));
    }
    let messages = req["messages"]
        .as_array()
        .ok_or_else(|| reject("messages", "Missing required parameter: 'messages'.".into()))?;
    let mut view = openai_tools(api, req, |t| &t["function"]["name"])?;
    let mut open: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        let param = format!("messages.[{i}].role");
        if role != "tool" && !open.is_empty() {
            return Err(reject(
                &param,
                format!(
                    "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                    open.join(", ")
                ),
            ));
        }
        match role {
            "system" | "developer" | "user" => {}
            "assistant" => {
                let calls = m["tool_calls"].as_array().cloned().unwrap_or_default();
                if m["content"].is_null() && (compat || calls.is_empty()) {
                    let message = if compat {
                        "can only concatenate str (not \"NoneType\") to str".to_owned()
                    } else {
                        format!(
                            "Invalid value for 'messages.[{i}].content': expected a string, got null."
                        )
                    };
                    return Err(reject(&format!("messages.[{i}].content"), message));
                }
                for c in &calls {
                    open.push(c["id"].as_str().unwrap_or_default().to_owned());
                    view.calls.push(
                        c["function"]["name"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                    );
                }
            }
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap_or_default();
                let Some(at) = open.iter().position(|o| o == id) else {
                    return Err(reject(&param,
                        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.".into()));
                };
                open.remove(at);
                view.results += 1;
            }
            other => {
                return Err(reject(
                    &param,
                    format!(
                        "Invalid value: '{other}'. Supported values are: 'system', 'assistant', 'user', 'tool', 'function', and 'developer'."
                    ),
                ));
            }
        }
    }
    if !open.is_empty() {
        return Err(reject(
            &format!("messages.[{}].role", messages.len()),
            format!(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                open.join(", ")
            ),
        ));
    }
    Ok(view)
}

/// The stream answering request `n` with `reply`.
pub fn stream(reply: &Reply, n: usize) -> String {
    let chunk = |delta: Value, finish: Value| {
        (
            None,
            json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion.chunk", "created": 1,
            "model": "gpt-fake", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let mut ev = Vec::new();
    match reply {
        Reply::Call { name, args } => {
            let args = args.to_string();
            let (a, b) = args.split_at(args.len() / 2);
            ev.push(chunk(json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
                "id": format!("call_{n}"), "type": "function", "function": {"name": name, "arguments": ""}}]}), Value::Null));
            for part in [a, b] {
                ev.push(chunk(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}),
                    Value::Null,
                ));
            }
            ev.push(chunk(json!({}), json!("tool_calls")));
        }
        Reply::Text(text) => {
            ev.push(chunk(
                json!({"role": "assistant", "content": ""}),
                Value::Null,
            ));
            ev.push(chunk(json!({"content": text}), Value::Null));
            ev.push(chunk(json!({}), json!("stop")));
        }
    }
    ev.push((
        None,
        json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion.chunk", "created": 1,
        "model": "gpt-fake", "choices": [],
        "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}}),
    ));
    let mut body = sse::frame(&ev);
    body.push_str("data: [DONE]\n\n");
    body
}
