//! Decoding Anthropic Messages responses: SSE events and whole JSON bodies
//! into [`StreamChunk`]s.
//!
//! Usage follows the rule in the fixtures' SOURCES.md: `input_tokens` comes
//! from `message_start`, overridden by `message_delta.usage.input_tokens`
//! when present, and `output_tokens` is the last `message_delta` value
//! (cumulative, not a delta). Each usage chunk carries running totals, which
//! is what [`weft_core::model::StreamAssembler`] expects.

use serde::Deserialize;
use serde_json::value::RawValue;
use weft_core::message::Thinking;
use weft_core::model::{ModelError, StopReason, StreamChunk, Usage};

use crate::decode::{EventDecoder, push_whole_call};
use crate::sse::SseEvent;
use crate::util::parse_data;

/// The Anthropic stream decoder.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    done: bool,
    /// Block indices of open tool_use blocks.
    open_tools: Vec<u32>,
    /// Running totals, so every usage chunk is complete.
    usage: Usage,
}

/// One event, flat: a tagged enum would make serde buffer every event
/// before decoding it, which halves throughput.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(default)]
    index: u32,
    #[serde(default)]
    message: Option<MessageStart>,
    #[serde(default, borrow)]
    content_block: Option<Block<'a>>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    usage: Option<WireUsage>,
}

/// A content block (text, thinking, redacted thinking, tool use): as a
/// stream's `content_block_start` opens it, or whole in a response body.
/// Flat because a raw `input` cannot sit in a tagged enum.
#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    thinking: String,
    #[serde(default)]
    signature: Option<String>,
    #[serde(default)]
    data: String,
    #[serde(default)]
    id: String,
    #[serde(default)]
    name: String,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
}

/// A `content_block_delta` delta, or a `message_delta` delta (stop reason).
#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    partial_json: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    signature: Option<String>,
    #[serde(default)]
    stop_reason: Option<String>,
}

/// Anthropic's usage object; absent fields mean "not reported".
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Overrides the fields this object reports.
    fn apply(&self, into: &mut Usage) {
        for (dst, src) in [
            (&mut into.input_tokens, self.input_tokens),
            (&mut into.output_tokens, self.output_tokens),
            (&mut into.cache_read_tokens, self.cache_read_input_tokens),
            (
                &mut into.cache_creation_tokens,
                self.cache_creation_input_tokens,
            ),
        ] {
            if let Some(v) = src {
                *dst = v;
            }
        }
    }

    fn to_usage(&self) -> Usage {
        Usage {
            input_tokens: self.input_tokens.unwrap_or(0),
            output_tokens: self.output_tokens.unwrap_or(0),
            cache_read_tokens: self.cache_read_input_tokens.unwrap_or(0),
            cache_creation_tokens: self.cache_creation_input_tokens.unwrap_or(0),
            cost_usd: None,
            estimated: false,
        }
    }
}

/// Anthropic's error object.
#[derive(Debug, Deserialize)]
pub(crate) struct WireError {
    #[serde(rename = "type")]
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) message: String,
}

fn missing(data: &str, field: &str) -> ModelError {
    ModelError::Malformed {
        line: crate::util::shorten(data),
        message: format!("missing `{field}`"),
    }
}

/// Whether an Anthropic error type is worth retrying.
pub(crate) fn retryable_error_type(kind: &str) -> bool {
    matches!(
        kind,
        "overloaded_error" | "api_error" | "rate_limit_error" | "timeout_error"
    )
}

/// Maps Anthropic's stop reason.
pub(crate) fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" => StopReason::Refusal,
        other => StopReason::Other(other.to_owned()),
    }
}

impl EventDecoder for AnthropicDecoder {
    fn event(&mut self, event: SseEvent<'_>, out: &mut Vec<StreamChunk>) -> Result<(), ModelError> {
        let ev: Event<'_> = parse_data(event.data)?;
        let index = ev.index;
        match &*ev.kind {
            "message_start" => {
                if let Some(u) = ev.message.and_then(|m| m.usage) {
                    u.apply(&mut self.usage);
                    out.push(StreamChunk::Usage { usage: self.usage });
                }
            }
            "content_block_start" => {
                let Some(block) = ev.content_block else {
                    return Err(missing(event.data, "content_block"));
                };
                match block.kind.as_str() {
                    "text" if !block.text.is_empty() => {
                        out.push(StreamChunk::TextDelta { text: block.text })
                    }
                    "thinking" => {
                        // Always open the block so a signature has something to close.
                        out.push(StreamChunk::ThinkingDelta {
                            text: block.thinking,
                        });
                        if let Some(signature) = block.signature.filter(|s| !s.is_empty()) {
                            out.push(StreamChunk::ThinkingSignature { signature });
                        }
                    }
                    "redacted_thinking" => out.push(StreamChunk::ThinkingBlock {
                        thinking: Thinking::Redacted { data: block.data },
                    }),
                    "tool_use" => {
                        self.open_tools.push(index);
                        out.push(StreamChunk::ToolCallStart {
                            index,
                            id: block.id.into(),
                            name: block.name,
                        });
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let Some(delta) = ev.delta else {
                    return Err(missing(event.data, "delta"));
                };
                match delta.kind.as_deref() {
                    Some("text_delta") => out.push(StreamChunk::TextDelta {
                        text: delta.text.unwrap_or_default(),
                    }),
                    Some("input_json_delta") => {
                        if let Some(partial) = delta.partial_json.filter(|p| !p.is_empty()) {
                            out.push(StreamChunk::ToolCallArgsDelta {
                                index,
                                delta: partial,
                            });
                        }
                    }
                    Some("thinking_delta") => out.push(StreamChunk::ThinkingDelta {
                        text: delta.thinking.unwrap_or_default(),
                    }),
                    Some("signature_delta") => out.push(StreamChunk::ThinkingSignature {
                        signature: delta.signature.unwrap_or_default(),
                    }),
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some(pos) = self.open_tools.iter().position(|i| *i == index) {
                    self.open_tools.swap_remove(pos);
                    out.push(StreamChunk::ToolCallEnd { index });
                }
            }
            "message_delta" => {
                if let Some(u) = ev.usage {
                    u.apply(&mut self.usage);
                    out.push(StreamChunk::Usage { usage: self.usage });
                }
                if let Some(reason) = ev.delta.and_then(|d| d.stop_reason) {
                    out.push(StreamChunk::Stop {
                        reason: stop_reason(&reason),
                    });
                }
            }
            "message_stop" => self.done = true,
            "error" => {
                let error = ev.error.ok_or_else(|| missing(event.data, "error"))?;
                return Err(ModelError::Stream {
                    retryable: retryable_error_type(&error.kind),
                    error_type: error.kind,
                    message: error.message,
                });
            }
            // `ping` and event types added after this client was written.
            _ => {}
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn terminal_event(&self) -> &'static str {
        "message_stop"
    }
}

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow)]
    content: Vec<Block<'a>>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

/// Decodes a non-streaming Messages response body into chunks.
pub fn decode_body(body: &str) -> Result<Vec<StreamChunk>, ModelError> {
    let body: Body<'_> = parse_data(body)?;
    let mut out = Vec::new();
    let mut index = 0u32;
    for block in body.content {
        match block.kind.as_str() {
            "text" => out.push(StreamChunk::TextDelta { text: block.text }),
            "thinking" => out.push(StreamChunk::ThinkingBlock {
                thinking: Thinking::Text {
                    text: block.thinking,
                    signature: block.signature,
                },
            }),
            "redacted_thinking" => out.push(StreamChunk::ThinkingBlock {
                thinking: Thinking::Redacted { data: block.data },
            }),
            "tool_use" => {
                let arguments = block.input.map_or("{}", |r| r.get()).to_owned();
                push_whole_call(&mut out, index, block.id, block.name, arguments);
                index += 1;
            }
            _ => {}
        }
    }
    if let Some(u) = body.usage {
        out.push(StreamChunk::Usage {
            usage: u.to_usage(),
        });
    }
    if let Some(r) = body.stop_reason {
        out.push(StreamChunk::Stop {
            reason: stop_reason(&r),
        });
    }
    Ok(out)
}
