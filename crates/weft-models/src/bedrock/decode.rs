//! Decoding Converse answers into [`StreamChunk`]s: the `ConverseStream`
//! events ([`ConverseDecoder`], fed by [`super::frames`]) and a whole
//! `Converse` body ([`decode_body`]).
//!
//! Text deltas are text; `reasoningContent` deltas are reasoning text, its
//! `signature` closing the reasoning block (kept byte for byte and sent back
//! on it), its `redactedContent` a redacted block; a `toolUse` block starts
//! a tool call (`contentBlockStart`), its `input` deltas are the arguments'
//! JSON text and `contentBlockStop` ends it. `messageStop` carries the stop
//! reason and `metadata` the usage (`inputTokens` excludes the cache reads
//! and writes, counted apart); the stream is done at `metadata`, and
//! complete once `messageStop` has arrived.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use weft_core::message::Thinking;
use weft_core::model::{ModelError, StopReason, StreamChunk, Usage};

use crate::decode::push_whole_call;
use crate::util::parse_data;

/// The `ConverseStream` event decoder.
#[derive(Debug, Default)]
pub struct ConverseDecoder {
    /// Content block index to tool call index, for open tool calls.
    open_calls: HashMap<u64, (u32, bool)>,
    /// Tool calls so far.
    calls: u32,
    stopped: bool,
    done: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockEvent<'a> {
    #[serde(default)]
    content_block_index: u64,
    #[serde(default, borrow)]
    start: Option<&'a RawValue>,
    #[serde(default, borrow)]
    delta: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolStart {
    tool_use_id: String,
    name: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Delta {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool_use: Option<ToolDelta>,
    #[serde(default)]
    reasoning_content: Option<ReasoningDelta>,
}

#[derive(Deserialize)]
struct ToolDelta {
    #[serde(default)]
    input: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReasoningDelta {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    signature: Option<String>,
    #[serde(default)]
    redacted_content: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StopEvent {
    stop_reason: String,
}

#[derive(Deserialize)]
struct Metadata {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_write_input_tokens: u64,
}

impl WireUsage {
    fn to_usage(&self) -> Usage {
        Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cache_read_tokens: self.cache_read_input_tokens,
            cache_creation_tokens: self.cache_write_input_tokens,
            cost_usd: None,
            estimated: false,
        }
    }
}

/// Maps Converse's `stopReason`.
pub fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "guardrail_intervened" | "content_filtered" => StopReason::ContentFilter,
        other => StopReason::Other(other.to_owned()),
    }
}

impl ConverseDecoder {
    /// Decodes one event, named by its `:event-type`.
    pub fn event(
        &mut self,
        kind: &str,
        payload: &str,
        out: &mut Vec<StreamChunk>,
    ) -> Result<(), ModelError> {
        match kind {
            "messageStart" => {}
            "contentBlockStart" => {
                let e: BlockEvent<'_> = parse_data(payload)?;
                let start: Value = e.start.map_or(Ok(Value::Null), |s| parse_data(s.get()))?;
                if let Some(tool) = start.get("toolUse") {
                    let tool: ToolStart = serde_json::from_value(tool.clone()).map_err(|err| {
                        ModelError::Malformed {
                            line: crate::util::shorten(payload),
                            message: format!("a toolUse start: {err}"),
                        }
                    })?;
                    let index = self.calls;
                    self.calls += 1;
                    self.open_calls
                        .insert(e.content_block_index, (index, false));
                    out.push(StreamChunk::ToolCallStart {
                        index,
                        id: tool.tool_use_id.into(),
                        name: tool.name,
                    });
                }
            }
            "contentBlockDelta" => {
                let e: BlockEvent<'_> = parse_data(payload)?;
                let delta: Delta = e
                    .delta
                    .map_or(Ok(Delta::default()), |d| parse_data(d.get()))?;
                self.delta(e.content_block_index, delta, out);
            }
            "contentBlockStop" => {
                let e: BlockEvent<'_> = parse_data(payload)?;
                if let Some((index, had_args)) = self.open_calls.remove(&e.content_block_index) {
                    if !had_args {
                        out.push(StreamChunk::ToolCallArgsDelta {
                            index,
                            delta: "{}".into(),
                        });
                    }
                    out.push(StreamChunk::ToolCallEnd { index });
                }
            }
            "messageStop" => {
                let e: StopEvent = parse_data(payload)?;
                self.stopped = true;
                out.push(StreamChunk::Stop {
                    reason: stop_reason(&e.stop_reason),
                });
            }
            "metadata" => {
                let e: Metadata = parse_data(payload)?;
                if let Some(u) = e.usage {
                    out.push(StreamChunk::Usage {
                        usage: u.to_usage(),
                    });
                }
                self.done = true;
            }
            // Events this client does not use.
            _ => {}
        }
        Ok(())
    }

    fn delta(&mut self, block: u64, delta: Delta, out: &mut Vec<StreamChunk>) {
        if let Some(text) = delta.text.filter(|t| !t.is_empty()) {
            out.push(StreamChunk::TextDelta { text });
        }
        if let Some(tool) = delta.tool_use
            && let Some((index, had_args)) = self.open_calls.get_mut(&block)
            && !tool.input.is_empty()
        {
            *had_args = true;
            out.push(StreamChunk::ToolCallArgsDelta {
                index: *index,
                delta: tool.input,
            });
        }
        if let Some(r) = delta.reasoning_content {
            if let Some(text) = r.text.filter(|t| !t.is_empty()) {
                out.push(StreamChunk::ThinkingDelta { text });
            }
            if let Some(signature) = r.signature {
                out.push(StreamChunk::ThinkingSignature { signature });
            }
            if let Some(data) = r.redacted_content {
                out.push(StreamChunk::ThinkingBlock {
                    thinking: Thinking::Redacted { data },
                });
            }
        }
    }

    /// Whether `metadata`, the last event, has arrived.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Whether a stream ending now is complete: after `messageStop`.
    pub fn complete_at_eof(&self) -> bool {
        self.stopped
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Body {
    output: Output,
    stop_reason: String,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Output {
    message: OutMessage,
}

#[derive(Deserialize)]
struct OutMessage {
    #[serde(default)]
    content: Vec<Value>,
}

/// Decodes a whole `Converse` answer into chunks.
pub fn decode_body(body: &str) -> Result<Vec<StreamChunk>, ModelError> {
    let body: Body = parse_data(body)?;
    let mut out = Vec::new();
    let mut calls = 0u32;
    for block in body.output.message.content {
        if let Some(text) = block.get("text").and_then(Value::as_str) {
            if !text.is_empty() {
                out.push(StreamChunk::TextDelta { text: text.into() });
            }
        } else if let Some(tool) = block.get("toolUse") {
            let id = tool
                .get("toolUseId")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
            let input = tool
                .get("input")
                .map_or_else(|| "{}".into(), Value::to_string);
            push_whole_call(&mut out, calls, id.into(), name.into(), input);
            calls += 1;
        } else if let Some(r) = block.get("reasoningContent") {
            if let Some(t) = r.get("reasoningText") {
                let text = t.get("text").and_then(Value::as_str).unwrap_or_default();
                out.push(StreamChunk::ThinkingBlock {
                    thinking: Thinking::Text {
                        text: text.into(),
                        signature: t
                            .get("signature")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                    },
                });
            } else if let Some(data) = r.get("redactedContent").and_then(Value::as_str) {
                out.push(StreamChunk::ThinkingBlock {
                    thinking: Thinking::Redacted { data: data.into() },
                });
            }
        }
    }
    if let Some(u) = body.usage {
        out.push(StreamChunk::Usage {
            usage: u.to_usage(),
        });
    }
    out.push(StreamChunk::Stop {
        reason: stop_reason(&body.stop_reason),
    });
    Ok(out)
}
