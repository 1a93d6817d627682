//! The Bedrock fake's answers: a `ConverseStream` answer as event stream
//! frames (`aws-smithy-eventstream`: `:event-type`, `:content-type` and
//! `:message-type` headers, a JSON payload padded with a `p` field as the
//! service pads it), and a `Converse` answer as JSON.

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use serde_json::{Value, json};

use crate::{Issued, Reply};

/// One event frame: `kind` with `payload`.
pub fn event_frame(kind: &str, payload: &Value) -> Vec<u8> {
    frame(":event-type", kind, "event", payload)
}

/// One exception frame (an error raised mid-stream): `kind` (e.g.
/// `throttlingException`) with its message.
pub fn exception_frame(kind: &str, message: &str) -> Vec<u8> {
    frame(
        ":exception-type",
        kind,
        "exception",
        &json!({"message": message}),
    )
}

/// A JSON frame whose `type_header` names `kind`, of `:message-type` `message_type`.
fn frame(
    type_header: &'static str,
    kind: &str,
    message_type: &'static str,
    payload: &Value,
) -> Vec<u8> {
    let message = Message::new(payload.to_string().into_bytes())
        .add_header(Header::new(
            type_header,
            HeaderValue::String(kind.to_owned().into()),
        ))
        .add_header(Header::new(
            ":content-type",
            HeaderValue::String("application/json".into()),
        ))
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String(message_type.into()),
        ));
    let mut out = Vec::new();
    let _ = write_message_to(&message, &mut out);
    out
}

/// The content of the answer to request `n`: reasoning (signed, recorded
/// in `issued`) before a call when `thinking`, then the call or the text.
fn content(reply: &Reply, thinking: bool, n: usize, issued: &Issued) -> Vec<Value> {
    let mut blocks = Vec::new();
    match reply {
        Reply::Call { name, args } => {
            if thinking {
                let text = format!("I should call {name} (turn {n}).");
                let sig = format!("RXVjZmFrZXNpZw-{n}");
                if let Ok(mut m) = issued.lock() {
                    m.insert(format!("bedrock-sig/{sig}"), (text.clone(), sig.clone()));
                }
                blocks.push(json!({"reasoningContent": {"reasoningText": {"text": text, "signature": sig}}}));
            }
            blocks.push(json!({"toolUse": {"toolUseId": format!("tooluse_fake{n}"), "name": name, "input": args}}));
        }
        Reply::Text(text) => blocks.push(json!({"text": text})),
    }
    blocks
}

fn usage() -> Value {
    json!({"inputTokens": 40, "outputTokens": 9, "totalTokens": 61,
        "cacheReadInputTokens": 12, "cacheWriteInputTokens": 0})
}

fn stop_reason(reply: &Reply) -> &'static str {
    match reply {
        Reply::Call { .. } => "tool_use",
        Reply::Text(_) => "end_turn",
    }
}

/// The `ConverseStream` answer to request `n` with `reply`.
pub fn stream(reply: &Reply, thinking: bool, n: usize, issued: &Issued) -> Vec<u8> {
    let pad = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0";
    let mut events: Vec<(&str, Value)> = vec![("messageStart", json!({"role": "assistant"}))];
    for (index, block) in content(reply, thinking, n, issued).into_iter().enumerate() {
        if let Some(r) = block.get("reasoningContent") {
            let t = &r["reasoningText"];
            events.push((
                "contentBlockDelta",
                json!({"contentBlockIndex": index,
                "delta": {"reasoningContent": {"text": t["text"]}}}),
            ));
            events.push((
                "contentBlockDelta",
                json!({"contentBlockIndex": index,
                "delta": {"reasoningContent": {"signature": t["signature"]}}}),
            ));
        } else if let Some(call) = block.get("toolUse") {
            events.push((
                "contentBlockStart",
                json!({"contentBlockIndex": index,
                "start": {"toolUse": {"toolUseId": call["toolUseId"], "name": call["name"]}}}),
            ));
            let input = call["input"].to_string();
            let (a, b) = input.split_at(input.len() / 2);
            for part in [a, b] {
                events.push((
                    "contentBlockDelta",
                    json!({"contentBlockIndex": index,
                    "delta": {"toolUse": {"input": part}}}),
                ));
            }
        } else if let Some(text) = block["text"].as_str() {
            let mid = (0..=text.len() / 2)
                .rev()
                .find(|i| text.is_char_boundary(*i))
                .unwrap_or(0);
            let (a, b) = text.split_at(mid);
            for part in [a, b] {
                events.push((
                    "contentBlockDelta",
                    json!({"contentBlockIndex": index,
                    "delta": {"text": part}}),
                ));
            }
        }
        events.push(("contentBlockStop", json!({"contentBlockIndex": index})));
    }
    events.push(("messageStop", json!({"stopReason": stop_reason(reply)})));
    events.push((
        "metadata",
        json!({"usage": usage(), "metrics": {"latencyMs": 321}}),
    ));
    let mut out = Vec::new();
    for (i, (kind, mut payload)) in events.into_iter().enumerate() {
        payload["p"] = json!(&pad[..(i * 7) % pad.len()]);
        out.extend(event_frame(kind, &payload));
    }
    out
}

/// The `Converse` answer to request `n` with `reply`.
pub fn whole(reply: &Reply, thinking: bool, n: usize, issued: &Issued) -> Value {
    json!({
        "output": {"message": {"role": "assistant", "content": content(reply, thinking, n, issued)}},
        "stopReason": stop_reason(reply),
        "usage": usage(),
        "metrics": {"latencyMs": 321}
    })
}
