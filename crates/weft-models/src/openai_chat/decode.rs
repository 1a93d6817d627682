//! Decoding Chat Completions responses: streamed chunks (tool calls
//! assembled by `index`, the id only on a call's first fragment; the
//! `include_usage` chunk with empty `choices`; `data: [DONE]`) and whole
//! JSON bodies.

use serde::Deserialize;
use weft_core::model::{ModelError, StopReason, StreamChunk, Usage};

use crate::decode::{EventDecoder, push_whole_call};
use crate::sse::SseEvent;
use crate::util::parse_data;

/// The Chat Completions stream decoder.
#[derive(Debug, Default)]
pub struct ChatDecoder {
    done: bool,
    /// Accept a stream that ends after `finish_reason` without `[DONE]`
    /// (some compatible servers omit it).
    lenient_end: bool,
    finished: bool,
    started: Vec<u32>,
    /// The model refused: its refusal text streams as text, the stop reason says so.
    refused: bool,
}

impl ChatDecoder {
    /// A decoder; `lenient_end` accepts streams without `[DONE]` once a
    /// `finish_reason` was seen.
    pub fn new(lenient_end: bool) -> Self {
        Self {
            lenient_end,
            ..Self::default()
        }
    }
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: First<Choice>,
    #[serde(default)]
    usage: Option<ChatUsage>,
    #[serde(default)]
    error: Option<StreamError>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<CallDelta>>,
}

#[derive(Deserialize)]
struct CallDelta {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// Chat usage: prompt and completion tokens, with cached prompt tokens.
#[derive(Deserialize)]
pub(crate) struct ChatUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl ChatUsage {
    pub(crate) fn to_usage(&self) -> Usage {
        Usage {
            input_tokens: self.prompt_tokens,
            output_tokens: self.completion_tokens,
            cache_read_tokens: self
                .prompt_tokens_details
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
struct StreamError {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    code: Option<serde_json::Value>,
    #[serde(default)]
    message: String,
}

/// The first element of a JSON array, the rest skipped without allocating.
struct First<T>(Option<T>);

impl<T> Default for First<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for First<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for V<T> {
            type Value = First<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array or null")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(First(None))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let first = seq.next_element()?;
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(First(first))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// Maps a Chat finish reason.
pub(crate) fn finish_reason(reason: &str) -> StopReason {
    match reason {
        "stop" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::ContentFilter,
        other => StopReason::Other(other.to_owned()),
    }
}

impl EventDecoder for ChatDecoder {
    fn event(&mut self, event: SseEvent<'_>, out: &mut Vec<StreamChunk>) -> Result<(), ModelError> {
        if event.data.trim_end() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Chunk = parse_data(event.data)?;
        if let Some(e) = chunk.error {
            let kind = e
                .kind
                .or_else(|| e.code.and_then(|c| c.as_str().map(str::to_owned)))
                .unwrap_or_else(|| "error".to_owned());
            return Err(ModelError::Stream {
                retryable: matches!(
                    kind.as_str(),
                    "server_error" | "rate_limit_exceeded" | "overloaded_error"
                ),
                error_type: kind,
                message: e.message,
            });
        }
        // Only the first choice is read: weft never asks for n > 1.
        if let First(Some(choice)) = chunk.choices {
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    out.push(StreamChunk::TextDelta { text });
                }
                if let Some(text) = delta.refusal.filter(|t| !t.is_empty()) {
                    self.refused = true;
                    out.push(StreamChunk::TextDelta { text });
                }
                for (pos, call) in delta.tool_calls.into_iter().flatten().enumerate() {
                    let index = call.index.unwrap_or(u32::try_from(pos).unwrap_or(u32::MAX));
                    let (name, args) = call
                        .function
                        .map_or((None, None), |f| (f.name, f.arguments));
                    if !self.started.contains(&index) {
                        self.started.push(index);
                        out.push(StreamChunk::ToolCallStart {
                            index,
                            // Some compatible servers send no id; one must be unique across turns.
                            id: call
                                .id
                                .unwrap_or_else(|| {
                                    format!("call_{index}_{:016x}", fastrand::u64(..))
                                })
                                .into(),
                            name: name.unwrap_or_default(),
                        });
                    }
                    if let Some(delta) = args.filter(|a| !a.is_empty()) {
                        out.push(StreamChunk::ToolCallArgsDelta { index, delta });
                    }
                }
            }
            if let Some(reason) = choice.finish_reason {
                for index in self.started.drain(..) {
                    out.push(StreamChunk::ToolCallEnd { index });
                }
                let reason = if self.refused {
                    StopReason::Refusal
                } else {
                    finish_reason(&reason)
                };
                out.push(StreamChunk::Stop { reason });
                self.finished = true;
            }
        }
        if let Some(u) = chunk.usage {
            out.push(StreamChunk::Usage {
                usage: u.to_usage(),
            });
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn terminal_event(&self) -> &'static str {
        "data: [DONE]"
    }

    fn complete_at_eof(&self) -> bool {
        self.done || (self.lenient_end && self.finished)
    }
}

#[derive(Deserialize)]
struct Body {
    #[serde(default)]
    choices: Vec<BodyChoice>,
    #[serde(default)]
    usage: Option<ChatUsage>,
}

#[derive(Deserialize)]
struct BodyChoice {
    message: BodyMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct BodyMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<BodyCall>>,
}

#[derive(Deserialize)]
struct BodyCall {
    id: String,
    function: BodyFunction,
}

#[derive(Deserialize)]
struct BodyFunction {
    name: String,
    #[serde(default)]
    arguments: String,
}

/// Decodes a non-streaming Chat Completions body into chunks.
pub fn decode_body(body: &str) -> Result<Vec<StreamChunk>, ModelError> {
    let body: Body = parse_data(body)?;
    let mut out = Vec::new();
    if let Some(choice) = body.choices.into_iter().next() {
        if let Some(text) = choice.message.content.filter(|t| !t.is_empty()) {
            out.push(StreamChunk::TextDelta { text });
        }
        let refusal = choice.message.refusal.filter(|t| !t.is_empty());
        let refused = refusal.is_some();
        if let Some(text) = refusal {
            out.push(StreamChunk::TextDelta { text });
        }
        for (i, call) in choice.message.tool_calls.into_iter().flatten().enumerate() {
            let index = u32::try_from(i).unwrap_or(u32::MAX);
            let BodyFunction { name, arguments } = call.function;
            push_whole_call(&mut out, index, call.id, name, arguments);
        }
        if let Some(r) = choice.finish_reason {
            let reason = if refused {
                StopReason::Refusal
            } else {
                finish_reason(&r)
            };
            out.push(StreamChunk::Stop { reason });
        }
    }
    if let Some(u) = body.usage {
        out.push(StreamChunk::Usage {
            usage: u.to_usage(),
        });
    }
    Ok(out)
}
