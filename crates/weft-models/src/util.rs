//! Small helpers shared by the provider modules: shortening lines for error
//! messages, parsing JSON into typed errors, assembling summaries, and the
//! request fields every API spells the same way (Anthropic and Bedrock also
//! their alternating messages).

use serde::Deserialize;
use serde_json::{Map, Value, json};
use weft_core::message::{Media, MediaSource, Message, Part, Role};
use weft_core::model::{ModelError, ModelRequest, ModelSummary, StreamAssembler, StreamChunk};
use weft_core::planner::NoopEvents;

/// Longest line quoted in an error message, in characters.
const MAX_QUOTED: usize = 200;

/// `line`, cut to a length fit for an error message.
pub(crate) fn shorten(line: &str) -> String {
    match line.char_indices().nth(MAX_QUOTED) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

/// Parses one event's data, naming the offending line on failure.
pub(crate) fn parse_data<'a, T: Deserialize<'a>>(data: &'a str) -> Result<T, ModelError> {
    serde_json::from_str(data).map_err(|e| ModelError::Malformed {
        line: shorten(data),
        message: e.to_string(),
    })
}

/// Folds a complete chunk list into a summary, without events.
pub(crate) fn assemble(chunks: Vec<StreamChunk>) -> Result<ModelSummary, ModelError> {
    let mut asm = StreamAssembler::new();
    for chunk in chunks {
        asm.push(chunk, &NoopEvents)
            .map_err(|e| ModelError::Malformed {
                line: String::new(),
                message: e.to_string(),
            })?;
    }
    Ok(asm.finish(&NoopEvents))
}

/// Inserts the sampling settings `req` sets: `temperature`, then `top_p`.
pub(crate) fn insert_sampling(body: &mut Map<String, Value>, req: &ModelRequest) {
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = req.top_p {
        body.insert("top_p".into(), json!(p));
    }
}

/// An image as the URL OpenAI's APIs take: its own, or a `data:` URL.
pub(crate) fn image_url(media: &Media) -> String {
    match &media.source {
        MediaSource::Base64(data) => format!("data:{};base64,{data}", media.media_type),
        MediaSource::Url(url) => url.clone(),
    }
}

/// The request's system text: its system prompt, then the text of any
/// system-role messages, joined by blank lines; `None` when there is none.
pub(crate) fn system_text(req: &ModelRequest) -> Option<String> {
    let mut system: Vec<String> = req.system.iter().cloned().collect();
    system.extend(
        req.messages
            .iter()
            .filter(|m| m.role == weft_core::message::Role::System)
            .map(weft_core::message::Message::joined_text),
    );
    (!system.is_empty()).then(|| system.join("\n\n"))
}

/// A request's messages as Anthropic and Bedrock take them: roles alternate
/// (user and tool messages are both `user`; consecutive ones merge), system
/// messages are left out (they go apart), a message without a `block` is
/// dropped, and tool results open their user message, before any text.
pub(crate) fn alternating_messages(
    input: &[Message],
    block: impl Fn(&Part) -> Option<Value>,
    is_tool_result: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in input {
        let role = match m.role {
            Role::System => continue,
            Role::User | Role::Tool => "user",
            Role::Assistant => "assistant",
        };
        let mut blocks: Vec<Value> = m.parts.iter().filter_map(&block).collect();
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((r, prev)) if *r == role => {
                if role == "user" && blocks.iter().any(&is_tool_result) {
                    let (mut results, rest): (Vec<Value>, Vec<Value>) =
                        prev.drain(..).partition(&is_tool_result);
                    results.append(&mut blocks);
                    results.extend(rest);
                    *prev = results;
                } else {
                    prev.append(&mut blocks);
                }
            }
            _ => out.push((role, blocks)),
        }
    }
    out.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}
