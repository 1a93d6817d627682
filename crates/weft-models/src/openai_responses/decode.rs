//! Decoding OpenAI Responses API streams and bodies into [`StreamChunk`]s.
//!
//! Function calls start at `response.output_item.added`, take argument
//! fragments from `response.function_call_arguments.delta` (keyed by
//! `output_index`) and are checked against `...arguments.done`. A `reasoning`
//! item is taken whole from `response.output_item.done` and kept as its raw
//! JSON text ([`Thinking::OpenAiReasoning`]): its `encrypted_content` differs
//! between `added` and `done`, and only a complete copy may be sent back.

use serde::Deserialize;
use serde_json::value::RawValue;
use weft_core::message::Thinking;
use weft_core::model::{ModelError, StopReason, StreamChunk, Usage};

use crate::decode::{EventDecoder, push_whole_call};
use crate::sse::SseEvent;
use crate::util::{parse_data, shorten};

/// The Responses stream decoder.
#[derive(Debug, Default)]
pub struct ResponsesDecoder {
    done: bool,
    /// Started function calls: output index and arguments so far.
    calls: Vec<(u32, String)>,
    saw_call: bool,
    /// Text of the current output text part, checked against its `.done` event.
    text: String,
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(default)]
    output_index: Option<u32>,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(borrow, default)]
    item: Option<&'a RawValue>,
    #[serde(default)]
    response: Option<ResponseObj>,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
struct ResponseObj {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    incomplete_details: Option<Incomplete>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Deserialize)]
struct Incomplete {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct WireError {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<CachedDetails>,
}

#[derive(Deserialize)]
struct CachedDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl WireUsage {
    fn to_usage(&self) -> Usage {
        Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cache_read_tokens: self
                .input_tokens_details
                .as_ref()
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            cache_creation_tokens: 0,
            cost_usd: None,
            estimated: false,
        }
    }
}

#[derive(Deserialize)]
struct Item {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    call_id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    arguments: String,
    #[serde(default)]
    content: Vec<ItemContent>,
}

#[derive(Deserialize)]
struct ItemContent {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: String,
}

fn item(raw: Option<&RawValue>) -> Result<(Item, &str), ModelError> {
    let raw = raw.ok_or_else(|| ModelError::Malformed {
        line: String::new(),
        message: "output item event without an item".into(),
    })?;
    Ok((parse_data::<Item>(raw.get())?, raw.get()))
}

fn stream_error(code: Option<String>, message: String) -> ModelError {
    let code = code.unwrap_or_else(|| "error".to_owned());
    ModelError::Stream {
        retryable: matches!(
            code.as_str(),
            "server_error" | "rate_limit_exceeded" | "overloaded"
        ),
        error_type: code,
        message,
    }
}

impl ResponsesDecoder {
    fn call(&mut self, index: u32) -> Result<&mut String, ModelError> {
        self.calls
            .iter_mut()
            .find(|(i, _)| *i == index)
            .map(|(_, a)| a)
            .ok_or_else(|| ModelError::Malformed {
                line: String::new(),
                message: format!(
                    "arguments for output item {index}, which is not a started function call"
                ),
            })
    }

    fn finish_response(&mut self, resp: Option<ResponseObj>, out: &mut Vec<StreamChunk>) {
        self.done = true;
        let Some(resp) = resp else { return };
        if let Some(u) = resp.usage {
            out.push(StreamChunk::Usage {
                usage: u.to_usage(),
            });
        }
        let reason = match (
            resp.status.as_deref(),
            resp.incomplete_details.and_then(|d| d.reason),
        ) {
            (Some("incomplete"), Some(r)) if r == "max_output_tokens" => StopReason::MaxTokens,
            (Some("incomplete"), Some(r)) if r == "content_filter" => StopReason::ContentFilter,
            (Some("incomplete"), Some(r)) => StopReason::Other(r),
            _ if self.saw_call => StopReason::ToolUse,
            _ => StopReason::EndTurn,
        };
        out.push(StreamChunk::Stop { reason });
    }
}

impl EventDecoder for ResponsesDecoder {
    fn event(&mut self, event: SseEvent<'_>, out: &mut Vec<StreamChunk>) -> Result<(), ModelError> {
        let ev: Event<'_> = parse_data(event.data)?;
        let index = ev.output_index.unwrap_or(0);
        match ev.kind {
            "response.output_text.delta" => {
                if let Some(text) = ev.delta.filter(|t| !t.is_empty()) {
                    self.text.push_str(&text);
                    out.push(StreamChunk::TextDelta { text });
                }
            }
            "response.output_text.done" => {
                let done = ev.text.unwrap_or_default();
                let so_far = std::mem::take(&mut self.text);
                match done.strip_prefix(so_far.as_str()) {
                    Some("") => {}
                    Some(rest) => out.push(StreamChunk::TextDelta {
                        text: rest.to_owned(),
                    }),
                    None => {
                        return Err(ModelError::Malformed {
                            line: shorten(event.data),
                            message: "output text differs from its streamed deltas".into(),
                        });
                    }
                }
            }
            "response.output_item.added" => {
                let (it, _) = item(ev.item)?;
                if it.kind == "function_call" {
                    self.saw_call = true;
                    self.calls.push((index, it.arguments.clone()));
                    out.push(StreamChunk::ToolCallStart {
                        index,
                        id: it.call_id.into(),
                        name: it.name,
                    });
                    if !it.arguments.is_empty() {
                        out.push(StreamChunk::ToolCallArgsDelta {
                            index,
                            delta: it.arguments,
                        });
                    }
                }
            }
            "response.function_call_arguments.delta" => {
                let delta = ev.delta.unwrap_or_default();
                self.call(index)?.push_str(&delta);
                if !delta.is_empty() {
                    out.push(StreamChunk::ToolCallArgsDelta { index, delta });
                }
            }
            "response.function_call_arguments.done" => {
                let done = ev.arguments.unwrap_or_default();
                let so_far = self.call(index)?;
                match done.strip_prefix(so_far.as_str()) {
                    Some("") => {}
                    Some(rest) => {
                        let delta = rest.to_owned();
                        so_far.push_str(&delta);
                        out.push(StreamChunk::ToolCallArgsDelta { index, delta });
                    }
                    None => {
                        return Err(ModelError::Malformed {
                            line: shorten(event.data),
                            message: "function call arguments differ from their streamed deltas"
                                .into(),
                        });
                    }
                }
            }
            "response.output_item.done" => {
                let (it, raw) = item(ev.item)?;
                match it.kind.as_str() {
                    "function_call" if self.calls.iter().any(|(i, _)| *i == index) => {
                        out.push(StreamChunk::ToolCallEnd { index });
                    }
                    // A call whose `added` event never came arrives whole.
                    "function_call" => {
                        self.saw_call = true;
                        self.calls.push((index, it.arguments.clone()));
                        push_whole_call(out, index, it.call_id, it.name, it.arguments);
                    }
                    "reasoning" => out.push(StreamChunk::ThinkingBlock {
                        thinking: Thinking::OpenAiReasoning {
                            item: raw.to_owned(),
                        },
                    }),
                    _ => {}
                }
            }
            "response.completed" | "response.incomplete" => self.finish_response(ev.response, out),
            "response.failed" => {
                let err = ev.response.and_then(|r| r.error);
                let (code, message) = err.map_or((None, "the response failed".to_owned()), |e| {
                    (e.code, e.message)
                });
                return Err(stream_error(code, message));
            }
            "error" => return Err(stream_error(ev.code, ev.message.unwrap_or_default())),
            _ => {}
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn terminal_event(&self) -> &'static str {
        "response.completed"
    }
}

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow, default)]
    output: Vec<&'a RawValue>,
    // Not `#[serde(flatten)]`: flattening buffers the body, which raw values cannot survive.
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    incomplete_details: Option<Incomplete>,
    #[serde(default)]
    error: Option<WireError>,
}

/// Decodes a non-streaming Responses body into chunks.
pub fn decode_body(body: &str) -> Result<Vec<StreamChunk>, ModelError> {
    let body: Body<'_> = parse_data(body)?;
    let mut dec = ResponsesDecoder::default();
    let mut out = Vec::new();
    for (i, raw) in body.output.into_iter().enumerate() {
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        let it: Item = parse_data(raw.get())?;
        match it.kind.as_str() {
            "message" => {
                for c in it.content.into_iter().filter(|c| c.kind == "output_text") {
                    out.push(StreamChunk::TextDelta { text: c.text });
                }
            }
            "function_call" => {
                dec.saw_call = true;
                push_whole_call(&mut out, index, it.call_id, it.name, it.arguments);
            }
            "reasoning" => out.push(StreamChunk::ThinkingBlock {
                thinking: Thinking::OpenAiReasoning {
                    item: raw.get().to_owned(),
                },
            }),
            _ => {}
        }
    }
    if let (Some(err), Some("failed")) = (body.error, body.status.as_deref()) {
        return Err(stream_error(err.code, err.message));
    }
    let response = ResponseObj {
        status: body.status,
        usage: body.usage,
        incomplete_details: body.incomplete_details,
        error: None,
    };
    dec.finish_response(Some(response), &mut out);
    Ok(out)
}
