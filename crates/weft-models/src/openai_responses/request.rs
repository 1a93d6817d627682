//! Building Responses API request bodies from a [`ModelRequest`].
//!
//! Requests are sent with `store: false`, so the server keeps nothing and the
//! whole conversation travels each time: reasoning items are sent back as the
//! raw JSON text they arrived as (byte for byte, with their
//! `encrypted_content`), followed by the turn's `function_call` items and then
//! a `function_call_output` per result.

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use weft_core::message::{Message, Part, Role, Thinking, joined_model_text};
use weft_core::model::ModelRequest;

use crate::openai_chat::{effort, tool_choice};
use crate::rules;
use crate::util::{image_url, insert_sampling};

/// A Responses request body: plain fields plus `input` items, some raw.
#[derive(Debug, Serialize)]
pub struct ResponsesBody {
    /// Every field but `input`.
    #[serde(flatten)]
    pub fields: Map<String, Value>,
    /// The conversation as input items.
    pub input: Vec<InputItem>,
}

/// One input item: built here, or replayed verbatim.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum InputItem {
    /// An item sent back exactly as the provider produced it.
    Raw(Box<RawValue>),
    /// An item built from weft's messages.
    Json(Value),
}

/// Whether `model` is a reasoning model (o-series, gpt-5), which accepts
/// `reasoning` and `include: ["reasoning.encrypted_content"]`.
pub fn is_reasoning_model(model: &str) -> bool {
    let m = model.as_bytes();
    model.starts_with("gpt-5")
        || (m.first() == Some(&b'o') && m.get(1).is_some_and(u8::is_ascii_digit))
}

/// The body for `model`, streaming or not, keeping the request rules of
/// [`crate::rules`].
pub fn build(model: &str, req: &ModelRequest, stream: bool) -> ResponsesBody {
    let req = &*rules::conform(req);
    let mut f = Map::new();
    f.insert("model".into(), json!(model));
    if let Some(system) = &req.system {
        f.insert("instructions".into(), json!(system));
    }
    f.insert("store".into(), json!(false));
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| json!({"type": "function", "name": t.name.as_str(), "description": t.description, "parameters": t.input_schema}))
            .collect();
        f.insert("tools".into(), Value::Array(tools));
        let choice = tool_choice(
            &req.tool_choice,
            |name| json!({"type": "function", "name": name}),
        );
        f.insert("tool_choice".into(), choice);
    }
    if is_reasoning_model(model) || req.thinking_budget.is_some() {
        let effort = req.thinking_budget.map_or("medium", effort);
        f.insert(
            "reasoning".into(),
            json!({"effort": effort, "summary": "auto"}),
        );
        f.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    if let Some(n) = req.max_tokens {
        f.insert("max_output_tokens".into(), json!(n));
    }
    insert_sampling(&mut f, req);
    if stream {
        f.insert("stream".into(), json!(true));
    }
    let mut input = Vec::new();
    for m in &req.messages {
        push_items(m, &mut input);
    }
    ResponsesBody { fields: f, input }
}

fn push_items(m: &Message, out: &mut Vec<InputItem>) {
    match m.role {
        Role::System => out.push(InputItem::Json(
            json!({"role": "system", "content": m.joined_text()}),
        )),
        Role::Assistant => {
            for p in &m.parts {
                match p {
                    Part::Thinking(Thinking::OpenAiReasoning { item }) => {
                        // The item was valid JSON when received; a corrupted one is dropped.
                        if let Ok(raw) = RawValue::from_string(item.clone()) {
                            out.push(InputItem::Raw(raw));
                        }
                    }
                    Part::Text { text } if !text.is_empty() => out.push(InputItem::Json(json!({
                        "type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": text}]}))),
                    Part::ToolUse { id, name, input } => out.push(InputItem::Json(json!({
                        "type": "function_call", "call_id": id.as_str(), "name": name,
                        "arguments": input.to_string()}))),
                    _ => {}
                }
            }
        }
        Role::User | Role::Tool => {
            let mut content = Vec::new();
            for p in &m.parts {
                match p {
                    Part::ToolResult {
                        tool_use_id,
                        content: c,
                        ..
                    } => out.push(InputItem::Json(json!({
                        "type": "function_call_output", "call_id": tool_use_id.as_str(),
                        "output": joined_model_text(c)}))),
                    Part::Text { text } => {
                        content.push(json!({"type": "input_text", "text": text}))
                    }
                    Part::Resource(r) => {
                        content.push(json!({"type": "input_text", "text": r.model_text()}))
                    }
                    Part::Image(media) => {
                        content.push(json!({"type": "input_image", "image_url": image_url(media)}));
                    }
                    _ => {}
                }
            }
            if !content.is_empty() {
                out.push(InputItem::Json(json!({"role": "user", "content": content})));
            }
        }
    }
}
