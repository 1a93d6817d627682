//! The Bedrock fake (the Converse API of the Bedrock runtime): SigV4
//! checked on every request ([`sigv4`]), the API's request rules, and its
//! answers ([`wire`]: `ConverseStream` event stream frames, `Converse` JSON).
//!
//! Rules (status, error type and message as the API words them; errors are
//! `{"message": ...}` with the type in `x-amzn-ErrorType`):
//! - A SigV4 signature by the known key, scoped to the fake's region and
//!   the `bedrock` service, over the request as sent (else 403).
//! - Only Converse's request fields, and only known content block members.
//! - `messages` start with a `user` message and alternate `user` and
//!   `assistant`; no message has empty `content`; no text is blank.
//! - A request whose messages hold `toolUse` or `toolResult` blocks defines
//!   `toolConfig`; each `toolUse` is answered by a `toolResult` in the next
//!   message, and each `toolResult` answers a `toolUse` of the one before.
//! - Reasoning (`reasoningContent.reasoningText`) comes back with its
//!   signature, unchanged, as the fake issued it; with Claude's thinking on
//!   (`additionalModelRequestFields.thinking`), the last assistant message
//!   calling tools starts with its reasoning.
//!
//! Converse cannot forbid tools (`toolChoice` is `auto`, `any` or `tool`):
//! a request forbids them in its system prompt, saying [`NO_TOOLS`], and
//! the fake, as a model following its instructions, answers in text.

pub mod sigv4;
pub mod wire;

use serde_json::{Value, json};

use crate::{Issued, Rejection, View};

/// What a system prompt says to forbid tool calls for the turn.
pub const NO_TOOLS: &str = "No tool can be called in this turn";

/// Converse's request fields.
const FIELDS: &[&str] = &[
    "messages",
    "system",
    "inferenceConfig",
    "toolConfig",
    "guardrailConfig",
    "additionalModelRequestFields",
    "additionalModelResponseFieldPaths",
    "promptVariables",
    "requestMetadata",
    "performanceConfig",
];

/// A content block's members.
const BLOCKS: &[&str] = &[
    "text",
    "image",
    "document",
    "video",
    "toolUse",
    "toolResult",
    "guardContent",
    "cachePoint",
    "reasoningContent",
];

/// Bedrock's error: `{"message": ...}`, the type in `x-amzn-ErrorType`.
pub(crate) fn error(status: u16, kind: &'static str, message: &str) -> Rejection {
    Rejection {
        status,
        body: json!({"message": message}),
        error_type: Some(kind),
    }
}

fn reject(message: impl Into<String>) -> Rejection {
    error(400, "ValidationException", &message.into())
}

/// A Claude error passed through by Bedrock.
fn model_error(message: impl std::fmt::Display) -> Rejection {
    reject(format!(
        "The model returned the following errors: {message}"
    ))
}

/// Checks a request body against the rules; its [`View`] when it keeps them.
pub fn check(req: &Value, issued: &Issued) -> Result<View, Rejection> {
    for key in req.as_object().into_iter().flat_map(|o| o.keys()) {
        if !FIELDS.contains(&key.as_str()) {
            return Err(reject(format!(
                "Malformed input request: extraneous key [{key}] is not permitted, please reformat your input and try again."
            )));
        }
    }
    let Some(messages) = req["messages"].as_array() else {
        return Err(reject(
            "1 validation error detected: Value null at 'messages' failed to satisfy constraint: Member must not be null",
        ));
    };
    let mut view = tools(req)?;
    let thinking = req["additionalModelRequestFields"]["thinking"]["type"] == "enabled";
    let mut open: Vec<String> = Vec::new();
    let mut tool_blocks = false;
    let mut last_calling: Option<(usize, bool)> = None;
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        if role != "user" && role != "assistant" {
            return Err(reject(format!(
                "1 validation error detected: Value '{role}' at 'messages.{i}.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]"
            )));
        }
        let want = if i % 2 == 0 { "user" } else { "assistant" };
        if role != want {
            return Err(reject(if i == 0 {
                "A conversation must start with a user message. Try again with a conversation that starts with a user message."
            } else {
                "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again."
            }));
        }
        let blocks = match m["content"].as_array() {
            Some(b) if !b.is_empty() => b,
            _ => {
                return Err(reject(format!(
                    "The content field in the Message object at messages.{i} is empty. Add a ContentBlock object to the content field and try again."
                )));
            }
        };
        let mut calls = Vec::new();
        let mut answered = Vec::new();
        for (j, b) in blocks.iter().enumerate() {
            let at = format!("messages.{i}.content.{j}");
            let keys: Vec<&String> = b.as_object().into_iter().flat_map(|o| o.keys()).collect();
            if let Some(k) = keys.iter().find(|k| !BLOCKS.contains(&k.as_str())) {
                return Err(reject(format!(
                    "Malformed input request: extraneous key [{k}] is not permitted, please reformat your input and try again."
                )));
            }
            if keys.len() != 1 {
                return Err(reject(format!(
                    "The ContentBlock object at {at} must set one of the following keys: {}.",
                    BLOCKS.join(", ")
                )));
            }
            if let Some(text) = b.get("text") {
                if text.as_str().is_none_or(|t| t.trim().is_empty()) {
                    return Err(reject(format!(
                        "The text field in the ContentBlock object at {at} is blank. Add text to the text field, and try again."
                    )));
                }
            } else if let Some(call) = b.get("toolUse") {
                tool_blocks = true;
                if role != "assistant" {
                    return Err(model_error(format!(
                        "{at}: `tool_use` blocks can only be in `assistant` messages"
                    )));
                }
                calls.push(call["toolUseId"].as_str().unwrap_or_default().to_owned());
                view.calls
                    .push(call["name"].as_str().unwrap_or_default().to_owned());
            } else if let Some(result) = b.get("toolResult") {
                tool_blocks = true;
                let id = result["toolUseId"].as_str().unwrap_or_default().to_owned();
                if role != "user" || !open.contains(&id) {
                    return Err(model_error(format!(
                        "{at}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                    )));
                }
                view.results += 1;
                answered.push(id);
            } else if let Some(r) = b.get("reasoningContent") {
                reasoning(r, &at, issued)?;
            }
        }
        let missing: Vec<&str> = open
            .iter()
            .filter(|id| !answered.contains(id))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(reject(format!(
                "Expected toolResult blocks at messages.{i}.content for the following Ids: {}",
                missing.join(", ")
            )));
        }
        if role == "assistant" && !calls.is_empty() {
            last_calling = Some((i, blocks[0].get("reasoningContent").is_some()));
        }
        open = calls;
    }
    if let Some(id) = open.first() {
        return Err(reject(format!(
            "Expected toolResult blocks at messages.{}.content for the following Ids: {id}",
            messages.len()
        )));
    }
    if tool_blocks && req.get("toolConfig").is_none() {
        return Err(reject(
            "The toolConfig field must be defined when using toolUse and toolResult content blocks.",
        ));
    }
    if let (true, Some((i, false))) = (thinking, last_calling) {
        return Err(model_error(format!(
            "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks)."
        )));
    }
    let system: String = req["system"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["text"].as_str())
        .collect();
    view.forbidden = system.contains(NO_TOOLS);
    Ok(view)
}

/// A reasoning block sent back: signed, as issued.
fn reasoning(r: &Value, at: &str, issued: &Issued) -> Result<(), Rejection> {
    if r.get("redactedContent").is_some() {
        return Ok(());
    }
    let text = r["reasoningText"]["text"].as_str().unwrap_or_default();
    let Some(sig) = r["reasoningText"]["signature"].as_str() else {
        return Err(model_error(format!(
            "{at}.thinking.signature: Field required"
        )));
    };
    let known = issued.lock().is_ok_and(|m| {
        m.get(&format!("bedrock-sig/{sig}"))
            .is_some_and(|(t, _)| t == text)
    });
    if !known {
        return Err(model_error(format!(
            "{at}: Invalid `signature` in `thinking` block"
        )));
    }
    Ok(())
}

/// The tools `toolConfig` defines (each a `toolSpec` with a JSON input schema).
fn tools(req: &Value) -> Result<View, Rejection> {
    let mut names = Vec::new();
    if let Some(config) = req.get("toolConfig") {
        let tools = config["tools"].as_array().filter(|t| !t.is_empty()).ok_or_else(|| {
            reject("1 validation error detected: Value '[]' at 'toolConfig.tools' failed to satisfy constraint: Member must have length greater than or equal to 1")
        })?;
        for (t, tool) in tools.iter().enumerate() {
            let spec = &tool["toolSpec"];
            let name = spec["name"].as_str().unwrap_or_default();
            if name.is_empty() || !spec["inputSchema"]["json"].is_object() {
                return Err(reject(format!(
                    "The toolSpec at toolConfig.tools.{t} needs a name and an inputSchema.json object."
                )));
            }
            names.push(name.to_owned());
        }
        if let Some(choice) = config.get("toolChoice") {
            let ok = choice.as_object().is_some_and(|o| {
                o.len() == 1
                    && o.keys()
                        .all(|k| ["auto", "any", "tool"].contains(&k.as_str()))
            });
            if !ok {
                return Err(reject(format!(
                    "The toolChoice {choice} is not one of auto, any or tool."
                )));
            }
        }
    }
    Ok(View {
        tools: names,
        ..View::default()
    })
}
