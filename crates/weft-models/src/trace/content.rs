//! Message content in the JSON structure of the OpenTelemetry GenAI
//! semantic conventions, for the opt-in attributes of the `chat` span:
//! `gen_ai.system_instructions` (a list of parts), `gen_ai.input.messages`
//! and `gen_ai.output.messages` (lists of `{"role", "parts"}` messages; an
//! output message also has its `finish_reason`).
//!
//! Parts are `{"type": "text", "content"}`, `{"type": "reasoning",
//! "content"}`, `{"type": "tool_call", "id", "name", "arguments"}`,
//! `{"type": "tool_call_response", "id", "response"}`, and `blob` / `uri`
//! parts for images and audio. Tool names are weft's own (`calc.add`),
//! decoded from the provider's through the call's [`ToolNames`]. Reasoning
//! the provider returned encrypted (redacted thinking, OpenAI reasoning
//! items) has no readable content and is left out.

use serde_json::{Value, json};
use weft_core::message::{Media, MediaSource, Message, Part, Role, Thinking};
use weft_core::model::{ModelSummary, ModelToolCall};

use crate::names::ToolNames;

/// `gen_ai.system_instructions`: the system prompt as one text part.
pub(super) fn system_instructions(system: &str) -> Value {
    json!([text(system)])
}

/// `gen_ai.input.messages`: the request's conversation.
pub(super) fn input_messages(messages: &[Message], names: &ToolNames) -> Value {
    Value::Array(
        messages
            .iter()
            .map(|m| {
                let parts: Vec<Value> = m.parts.iter().filter_map(|p| part(p, names)).collect();
                json!({"role": role(m.role), "parts": parts})
            })
            .collect(),
    )
}

/// `gen_ai.output.messages`: the answer as one assistant message.
pub(super) fn output_messages(
    summary: &ModelSummary,
    names: &ToolNames,
    finish_reason: &str,
) -> Value {
    let mut parts: Vec<Value> = summary.thinking.iter().filter_map(reasoning).collect();
    if !summary.text.is_empty() {
        parts.push(text(&summary.text));
    }
    parts.extend(summary.tool_calls.iter().map(|c| tool_call(c, names)));
    json!([{"role": "assistant", "parts": parts, "finish_reason": finish_reason}])
}

fn role(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

fn text(content: &str) -> Value {
    json!({"type": "text", "content": content})
}

fn reasoning(thinking: &Thinking) -> Option<Value> {
    match thinking {
        Thinking::Text { text, .. } => Some(json!({"type": "reasoning", "content": text})),
        Thinking::Redacted { .. } | Thinking::OpenAiReasoning { .. } => None,
    }
}

/// One part of a request message; `None` for reasoning with no readable text.
fn part(part: &Part, names: &ToolNames) -> Option<Value> {
    Some(match part {
        Part::Text { text: t } => text(t),
        Part::Thinking(thinking) => return reasoning(thinking),
        Part::ToolUse { id, name, input } => json!({
            "type": "tool_call",
            "id": id,
            "name": names.decode(name),
            "arguments": **input,
        }),
        Part::ToolResult {
            tool_use_id,
            content,
            ..
        } => json!({
            "type": "tool_call_response",
            "id": tool_use_id,
            "response": response(content),
        }),
        Part::Image(media) => media_part(media, "image"),
        Part::Audio(media) => media_part(media, "audio"),
        // What a model reads of a resource: its text rendering.
        Part::Resource(r) => text(&r.model_text()),
    })
}

/// A tool result's content: its text (the JSON a tool answered, parsed
/// back when it is JSON), or its parts when it holds more than text.
fn response(content: &[Part]) -> Value {
    let mut joined = String::new();
    for p in content {
        match p {
            Part::Text { text } => joined.push_str(text),
            _ => {
                let parts: Vec<Value> = content
                    .iter()
                    .filter_map(|p| part(p, &ToolNames::default()))
                    .collect();
                return Value::Array(parts);
            }
        }
    }
    serde_json::from_str(&joined).unwrap_or(Value::String(joined))
}

fn media_part(media: &Media, modality: &str) -> Value {
    match &media.source {
        MediaSource::Base64(data) => json!({
            "type": "blob",
            "modality": modality,
            "mime_type": media.media_type,
            "content": data,
        }),
        MediaSource::Url(url) => json!({
            "type": "uri",
            "modality": modality,
            "mime_type": media.media_type,
            "uri": url,
        }),
    }
}

/// A tool call of the answer: arguments as JSON (their raw text when the
/// model wrote something else).
fn tool_call(call: &ModelToolCall, names: &ToolNames) -> Value {
    let arguments = if call.arguments.trim().is_empty() {
        json!({})
    } else {
        serde_json::from_str(&call.arguments)
            .unwrap_or_else(|_| Value::String(call.arguments.clone()))
    };
    json!({
        "type": "tool_call",
        "id": call.id,
        "name": names.decode(&call.name),
        "arguments": arguments,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use weft_core::ToolCallId;
    use weft_core::model::StopReason;

    use super::*;

    #[test]
    fn messages_take_the_conventions_structure_with_weft_tool_names() {
        let names = ToolNames::new(["calc.add"]);
        let messages = vec![
            Message::user("What is 2 + 3?"),
            Message {
                role: Role::Assistant,
                parts: vec![
                    Part::Thinking(Thinking::Text {
                        text: "add them".into(),
                        signature: Some("sig".into()),
                    }),
                    Part::Thinking(Thinking::Redacted { data: "x".into() }),
                    Part::ToolUse {
                        id: ToolCallId::new("call_1"),
                        name: "calc__add".into(),
                        input: Arc::new(json!({"a": 2, "b": 3})),
                    },
                ],
            },
            Message {
                role: Role::Tool,
                parts: vec![Part::ToolResult {
                    tool_use_id: ToolCallId::new("call_1"),
                    content: vec![Part::Text { text: "5".into() }],
                    is_error: false,
                }],
            },
        ];
        assert_eq!(
            input_messages(&messages, &names),
            json!([
                {"role": "user", "parts": [{"type": "text", "content": "What is 2 + 3?"}]},
                {"role": "assistant", "parts": [
                    {"type": "reasoning", "content": "add them"},
                    {"type": "tool_call", "id": "call_1", "name": "calc.add",
                        "arguments": {"a": 2, "b": 3}},
                ]},
                {"role": "tool", "parts": [
                    {"type": "tool_call_response", "id": "call_1", "response": 5},
                ]},
            ])
        );
        let summary = ModelSummary {
            text: "Adding.".into(),
            tool_calls: vec![ModelToolCall {
                id: ToolCallId::new("call_2"),
                name: "calc__add".into(),
                arguments: r#"{"a":1}"#.into(),
            }],
            stop_reason: Some(StopReason::ToolUse),
            ..ModelSummary::default()
        };
        assert_eq!(
            output_messages(&summary, &names, "tool_calls"),
            json!([{"role": "assistant", "finish_reason": "tool_calls", "parts": [
                {"type": "text", "content": "Adding."},
                {"type": "tool_call", "id": "call_2", "name": "calc.add", "arguments": {"a": 1}},
            ]}])
        );
        assert_eq!(
            system_instructions("Be brief."),
            json!([{"type": "text", "content": "Be brief."}])
        );
    }

    #[test]
    fn non_json_results_and_arguments_stay_text() {
        let result = [Part::Text {
            text: "not json".into(),
        }];
        assert_eq!(response(&result), json!("not json"));
        let call = ModelToolCall {
            id: ToolCallId::new("c"),
            name: "t".into(),
            arguments: "{broken".into(),
        };
        assert_eq!(
            tool_call(&call, &ToolNames::default())["arguments"],
            json!("{broken")
        );
    }
}
