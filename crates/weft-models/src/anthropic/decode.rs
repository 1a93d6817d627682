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

use crate::decode::EventDecoder;
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

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        index: u32,
        content_block: Block,
    },
    ContentBlockDelta {
        index: u32,
        delta: Delta,
    },
    ContentBlockStop {
        index: u32,
    },
    MessageDelta {
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: WireError,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(clippy::enum_variant_names)] // The names are the wire's.
enum Delta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct MessageDeltaBody {
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
        match parse_data::<Event>(event.data)? {
            Event::MessageStart { message } => {
                if let Some(u) = message.usage {
                    u.apply(&mut self.usage);
                    out.push(StreamChunk::Usage { usage: self.usage });
                }
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => match content_block {
                Block::Text { text } => {
                    if !text.is_empty() {
                        out.push(StreamChunk::TextDelta { text });
                    }
                }
                Block::Thinking {
                    thinking,
                    signature,
                } => {
                    // Always open the block so a signature has something to close.
                    out.push(StreamChunk::ThinkingDelta { text: thinking });
                    if !signature.is_empty() {
                        out.push(StreamChunk::ThinkingSignature { signature });
                    }
                }
                Block::RedactedThinking { data } => out.push(StreamChunk::ThinkingBlock {
                    thinking: Thinking::Redacted { data },
                }),
                Block::ToolUse { id, name } => {
                    self.open_tools.push(index);
                    out.push(StreamChunk::ToolCallStart {
                        index,
                        id: id.into(),
                        name,
                    });
                }
                Block::Unknown => {}
            },
            Event::ContentBlockDelta { index, delta } => match delta {
                Delta::TextDelta { text } => out.push(StreamChunk::TextDelta { text }),
                Delta::InputJsonDelta { partial_json } => {
                    if !partial_json.is_empty() {
                        out.push(StreamChunk::ToolCallArgsDelta {
                            index,
                            delta: partial_json,
                        });
                    }
                }
                Delta::ThinkingDelta { thinking } => {
                    out.push(StreamChunk::ThinkingDelta { text: thinking })
                }
                Delta::SignatureDelta { signature } => {
                    out.push(StreamChunk::ThinkingSignature { signature })
                }
                Delta::Unknown => {}
            },
            Event::ContentBlockStop { index } => {
                if let Some(pos) = self.open_tools.iter().position(|i| *i == index) {
                    self.open_tools.swap_remove(pos);
                    out.push(StreamChunk::ToolCallEnd { index });
                }
            }
            Event::MessageDelta { delta, usage } => {
                if let Some(u) = usage {
                    u.apply(&mut self.usage);
                    out.push(StreamChunk::Usage { usage: self.usage });
                }
                if let Some(reason) = delta.stop_reason {
                    out.push(StreamChunk::Stop {
                        reason: stop_reason(&reason),
                    });
                }
            }
            Event::MessageStop => self.done = true,
            Event::Ping | Event::Unknown => {}
            Event::Error { error } => {
                return Err(ModelError::Stream {
                    retryable: retryable_error_type(&error.kind),
                    error_type: error.kind,
                    message: error.message,
                });
            }
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
    content: Vec<BodyBlock<'a>>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

/// A content block, flat because a raw `input` cannot sit in a tagged enum.
#[derive(Deserialize)]
struct BodyBlock<'a> {
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
                out.push(StreamChunk::ToolCallStart {
                    index,
                    id: block.id.into(),
                    name: block.name,
                });
                out.push(StreamChunk::ToolCallArgsDelta {
                    index,
                    delta: block.input.map_or("{}", |r| r.get()).to_owned(),
                });
                out.push(StreamChunk::ToolCallEnd { index });
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
