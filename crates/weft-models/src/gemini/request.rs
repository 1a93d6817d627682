//! Building Gemini `generateContent` request bodies from a [`ModelRequest`].
//!
//! The system prompt (and any system message) is `systemInstruction`; the
//! conversation is `contents` of `user` and `model` turns, consecutive
//! turns of one role merged. A model turn is its signed thought summaries,
//! its text and its `functionCall` parts, each with the thought signature it
//! arrived with ([`super::signature`]); tool results are `functionResponse`
//! parts of a user turn, in the order of the calls they answer, each
//! `response` a JSON object (`{"result": ...}` around anything else,
//! `{"error": ...}` for a failure). Tools are `functionDeclarations` with
//! schemas translated to Gemini's subset ([`super::schema`]); a finalizing
//! turn keeps them and sets the calling mode to `NONE`. The request rules of
//! [`crate::rules`] are kept before anything is encoded, and a request that
//! defines no tools while its transcript calls some declares them.

use std::collections::HashMap;

use serde_json::{Map, Value, json};
use weft_core::message::{Media, MediaSource, Message, Part, Role, joined_model_text};
use weft_core::model::{ModelError, ModelRequest, ToolChoice};

use super::schema;
use super::signature::{self, Anchor};
use crate::rules;
use crate::util::system_text;

/// Call ids weft made up for calls Gemini sent without one; they are not
/// sent back.
pub(crate) const SYNTHETIC_ID_PREFIX: &str = "gemini_call_";

/// The JSON body of a `generateContent` request (the model and whether it
/// streams are in the URL).
pub fn build(req: &ModelRequest) -> Result<Value, ModelError> {
    let req = &*rules::conform(req);
    let declared = rules::declare_used_tools(req);
    let (tools, tool_choice) = match &declared {
        Some((tools, choice)) => (tools.as_slice(), choice),
        None => (req.tools.as_slice(), &req.tool_choice),
    };
    let mut body = Map::new();
    if let Some(system) = system_text(req) {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system}]}),
        );
    }
    body.insert("contents".into(), Value::Array(contents(&req.messages)));
    if !tools.is_empty() {
        let mut declarations = Vec::with_capacity(tools.len());
        for t in tools {
            let mut d = Map::new();
            d.insert("name".into(), json!(t.name.as_str()));
            d.insert("description".into(), json!(t.description));
            let parameters = schema::translate(t.name.as_str(), &t.input_schema).map_err(|e| {
                ModelError::Config {
                    message: e.to_string(),
                }
            })?;
            if let Some(p) = parameters {
                d.insert("parameters".into(), p);
            }
            declarations.push(Value::Object(d));
        }
        body.insert(
            "tools".into(),
            json!([{"functionDeclarations": declarations}]),
        );
        let config = match tool_choice {
            ToolChoice::Auto => json!({"mode": "AUTO"}),
            ToolChoice::None => json!({"mode": "NONE"}),
            ToolChoice::Required => json!({"mode": "ANY"}),
            ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
        };
        body.insert(
            "toolConfig".into(),
            json!({"functionCallingConfig": config}),
        );
    }
    let generation = generation_config(req);
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    Ok(Value::Object(body))
}

fn generation_config(req: &ModelRequest) -> Map<String, Value> {
    let mut g = Map::new();
    if let Some(n) = req.max_tokens {
        g.insert("maxOutputTokens".into(), json!(n));
    }
    if let Some(t) = req.temperature {
        g.insert("temperature".into(), json!(t));
    }
    if let Some(p) = req.top_p {
        g.insert("topP".into(), json!(p));
    }
    if let Some(s) = req.seed {
        // Gemini's seed is an int32.
        g.insert("seed".into(), json!(s & 0x7fff_ffff));
    }
    if !req.stop.is_empty() {
        g.insert("stopSequences".into(), json!(req.stop));
    }
    if let Some(budget) = req.thinking_budget {
        g.insert(
            "thinkingConfig".into(),
            json!({"thinkingBudget": budget, "includeThoughts": true}),
        );
    }
    g
}

fn contents(input: &[Message]) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    // Call ids to tool names, and each id's position in its turn.
    let mut calls: HashMap<&str, (&str, usize)> = HashMap::new();
    for m in input {
        let (role, parts) = match m.role {
            Role::System => continue,
            Role::Assistant => {
                calls.clear();
                let mut i = 0;
                for p in &m.parts {
                    if let Part::ToolUse { id, name, .. } = p {
                        calls.insert(id.as_str(), (name.as_str(), i));
                        i += 1;
                    }
                }
                ("model", model_parts(m))
            }
            Role::User | Role::Tool => ("user", user_parts(m, &calls)),
        };
        if parts.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((r, prev)) if *r == role => {
                // Function responses open the turn, before anything else.
                let (mut responses, rest): (Vec<Value>, Vec<Value>) =
                    prev.drain(..).chain(parts).partition(is_response);
                responses.extend(rest);
                *prev = responses;
            }
            _ => out.push((role, parts)),
        }
    }
    out.into_iter()
        .map(|(role, parts)| json!({"role": role, "parts": parts}))
        .collect()
}

fn is_response(part: &Value) -> bool {
    part.get("functionResponse").is_some()
}

/// A model turn: signed thought summaries, then the text, then the calls,
/// each with its signature.
fn model_parts(m: &Message) -> Vec<Value> {
    let mut call_signatures: HashMap<String, String> = HashMap::new();
    let mut text_signature: Option<String> = None;
    let mut out = Vec::new();
    for p in &m.parts {
        let Part::Thinking(t) = p else { continue };
        match signature::parse(t) {
            Some((Anchor::Call(id), sig)) => {
                call_signatures.insert(id, sig);
            }
            Some((Anchor::Text, sig)) => text_signature = Some(sig),
            Some((Anchor::Thought(text), sig)) => {
                out.push(json!({"text": text, "thought": true, "thoughtSignature": sig}));
            }
            None => {}
        }
    }
    for p in &m.parts {
        let part = match p {
            Part::Text { text } if text.is_empty() => continue,
            Part::Text { text } => {
                let mut v = json!({"text": text});
                if let Some(sig) = text_signature.take() {
                    v["thoughtSignature"] = json!(sig);
                }
                v
            }
            Part::ToolUse { id, name, input } => {
                let mut call = json!({"name": name, "args": args(input)});
                if !id.as_str().starts_with(SYNTHETIC_ID_PREFIX) {
                    call["id"] = json!(id.as_str());
                }
                let mut v = json!({"functionCall": call});
                if let Some(sig) = call_signatures.remove(id.as_str()) {
                    v["thoughtSignature"] = json!(sig);
                }
                v
            }
            Part::Resource(r) => json!({"text": r.model_text()}),
            _ => continue,
        };
        out.push(part);
    }
    out
}

/// A call's arguments as the object Gemini takes.
fn args(input: &Value) -> Value {
    match input {
        Value::Object(_) => input.clone(),
        Value::Null => json!({}),
        other => json!({"value": other}),
    }
}

/// A user turn: function responses (in the order of their calls), then
/// text and media.
fn user_parts(m: &Message, calls: &HashMap<&str, (&str, usize)>) -> Vec<Value> {
    let mut responses: Vec<(usize, Value)> = Vec::new();
    let mut rest = Vec::new();
    for p in &m.parts {
        match p {
            Part::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                let (name, position) = calls
                    .get(tool_use_id.as_str())
                    .copied()
                    .unwrap_or(("unknown", usize::MAX));
                let mut r = json!({"name": name, "response": response(content, *is_error)});
                if !tool_use_id.as_str().starts_with(SYNTHETIC_ID_PREFIX) {
                    r["id"] = json!(tool_use_id.as_str());
                }
                responses.push((position, json!({"functionResponse": r})));
            }
            Part::Text { text } if text.is_empty() => {}
            Part::Text { text } => rest.push(json!({"text": text})),
            Part::Resource(r) => rest.push(json!({"text": r.model_text()})),
            Part::Image(media) | Part::Audio(media) => rest.push(media_part(media)),
            Part::Thinking(_) | Part::ToolUse { .. } => {}
        }
    }
    responses.sort_by_key(|(position, _)| *position);
    responses.into_iter().map(|(_, r)| r).chain(rest).collect()
}

/// A tool result as the JSON object `functionResponse.response` must be.
fn response(content: &[Part], is_error: bool) -> Value {
    let text = joined_model_text(content);
    if is_error {
        return json!({"error": text});
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(v @ Value::Object(_)) => v,
        Ok(other) => json!({"result": other}),
        Err(_) => json!({"result": text}),
    }
}

fn media_part(media: &Media) -> Value {
    match &media.source {
        MediaSource::Base64(data) => {
            json!({"inlineData": {"mimeType": media.media_type, "data": data}})
        }
        MediaSource::Url(url) => {
            json!({"fileData": {"mimeType": media.media_type, "fileUri": url}})
        }
    }
}
