//! Decoding Gemini `GenerateContentResponse`s (each SSE `data:` of a
//! `streamGenerateContent?alt=sse` stream is a whole one, and so is a
//! `generateContent` body) into [`StreamChunk`]s.
//!
//! Text parts are text deltas and thought parts (`thought: true`)
//! reasoning; a `functionCall` arrives whole in one part and becomes one
//! tool call, with an id made up when Gemini sends none (unique across
//! turns: the response id, else a random number, and the call's index). A
//! part's `thoughtSignature` becomes a signature block naming that part
//! ([`super::signature`]). `usageMetadata` carries running totals: prompt
//! tokens are the input (cached ones included, `cachedContentTokenCount`
//! being the cache reads), answer and thought tokens the output. The
//! stream has no terminal event: it is complete once a candidate's
//! `finishReason` (or the prompt's `blockReason`) has arrived, and is read
//! to its end for the usage that may follow.

use serde::Deserialize;
use serde_json::value::RawValue;
use weft_core::model::{ModelError, StopReason, StreamChunk, Usage};

use super::request::SYNTHETIC_ID_PREFIX;
use super::signature::{self, Anchor};
use crate::decode::{EventDecoder, push_whole_call};
use crate::sse::SseEvent;
use crate::util::parse_data;

/// The Gemini stream decoder.
#[derive(Debug, Default)]
pub struct GeminiDecoder {
    /// Tool calls so far.
    calls: u32,
    /// Whether a finish reason (or a blocked prompt) has arrived.
    finished: bool,
    /// A suffix making made-up call ids unique, fixed at the first call.
    id_suffix: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response<'a> {
    #[serde(default, borrow)]
    candidates: Vec<Candidate<'a>>,
    #[serde(default)]
    usage_metadata: Option<WireUsage>,
    #[serde(default)]
    prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    response_id: Option<String>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate<'a> {
    #[serde(default, borrow)]
    content: Option<Content<'a>>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(default, borrow)]
    parts: Vec<WirePart<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePart<'a> {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: bool,
    #[serde(default)]
    thought_signature: Option<String>,
    #[serde(default, borrow)]
    function_call: Option<FunctionCall<'a>>,
}

#[derive(Deserialize)]
struct FunctionCall<'a> {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: String,
    #[serde(default, borrow)]
    args: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireUsage {
    #[serde(default)]
    prompt_token_count: u64,
    #[serde(default)]
    candidates_token_count: u64,
    #[serde(default)]
    thoughts_token_count: u64,
    #[serde(default)]
    cached_content_token_count: u64,
}

impl WireUsage {
    fn to_usage(&self) -> Usage {
        Usage {
            input_tokens: self.prompt_token_count,
            output_tokens: self.candidates_token_count + self.thoughts_token_count,
            cache_read_tokens: self.cached_content_token_count,
            cache_creation_tokens: 0,
            cost_usd: None,
            estimated: false,
        }
    }
}

/// Google's error object (`google.rpc.Status` with its HTTP code).
#[derive(Deserialize)]
struct WireError {
    #[serde(default)]
    message: String,
    #[serde(default)]
    status: Option<String>,
}

/// Whether a Google status is worth retrying.
pub(crate) fn retryable_status(status: &str) -> bool {
    matches!(
        status,
        "UNAVAILABLE" | "RESOURCE_EXHAUSTED" | "INTERNAL" | "DEADLINE_EXCEEDED"
    )
}

/// Maps Gemini's finish reason; `called` says whether the answer called tools.
pub(crate) fn stop_reason(reason: &str, called: bool) -> StopReason {
    match reason {
        "STOP" if called => StopReason::ToolUse,
        "STOP" => StopReason::EndTurn,
        "MAX_TOKENS" => StopReason::MaxTokens,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            StopReason::ContentFilter
        }
        other => StopReason::Other(other.to_ascii_lowercase()),
    }
}

impl GeminiDecoder {
    /// Decodes one whole `GenerateContentResponse`.
    fn response(&mut self, data: &str, out: &mut Vec<StreamChunk>) -> Result<(), ModelError> {
        let resp: Response<'_> = parse_data(data)?;
        if let Some(e) = resp.error {
            let status = e.status.unwrap_or_else(|| "UNKNOWN".to_owned());
            return Err(ModelError::Stream {
                retryable: retryable_status(&status),
                error_type: status,
                message: e.message,
            });
        }
        let mut finish = None;
        if let Some(candidate) = resp.candidates.into_iter().next() {
            for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
                self.part(part, resp.response_id.as_deref(), out);
            }
            finish = candidate.finish_reason;
        }
        if let Some(u) = resp.usage_metadata {
            out.push(StreamChunk::Usage {
                usage: u.to_usage(),
            });
        }
        let blocked = resp.prompt_feedback.and_then(|f| f.block_reason);
        if let Some(reason) = finish {
            self.finished = true;
            out.push(StreamChunk::Stop {
                reason: stop_reason(&reason, self.calls > 0),
            });
        } else if blocked.is_some() {
            // The prompt itself was blocked: no candidate will come.
            self.finished = true;
            out.push(StreamChunk::Stop {
                reason: StopReason::ContentFilter,
            });
        }
        Ok(())
    }

    fn part(&mut self, part: WirePart<'_>, response_id: Option<&str>, out: &mut Vec<StreamChunk>) {
        let sig = part.thought_signature.filter(|s| !s.is_empty());
        if let Some(call) = part.function_call {
            let index = self.calls;
            self.calls += 1;
            let id = match call.id.filter(|id| !id.is_empty()) {
                Some(id) => id,
                None => {
                    let suffix = self.id_suffix.get_or_insert_with(|| {
                        response_id
                            .filter(|r| !r.is_empty())
                            .map_or_else(|| format!("{:016x}", fastrand::u64(..)), str::to_owned)
                    });
                    format!("{SYNTHETIC_ID_PREFIX}{suffix}_{index}")
                }
            };
            let arguments = call.args.map_or("{}", RawValue::get).to_owned();
            push_whole_call(out, index, id.clone(), call.name, arguments);
            if let Some(sig) = sig {
                out.push(StreamChunk::ThinkingBlock {
                    thinking: signature::block(sig, Anchor::Call(id)),
                });
            }
            return;
        }
        let text = part.text.unwrap_or_default();
        if part.thought {
            if !text.is_empty() {
                out.push(StreamChunk::ThinkingDelta { text: text.clone() });
            }
            if let Some(sig) = sig {
                out.push(StreamChunk::ThinkingBlock {
                    thinking: signature::block(sig, Anchor::Thought(text)),
                });
            }
            return;
        }
        if !text.is_empty() {
            out.push(StreamChunk::TextDelta { text });
        }
        if let Some(sig) = sig {
            out.push(StreamChunk::ThinkingBlock {
                thinking: signature::block(sig, Anchor::Text),
            });
        }
    }
}

impl EventDecoder for GeminiDecoder {
    fn event(&mut self, event: SseEvent<'_>, out: &mut Vec<StreamChunk>) -> Result<(), ModelError> {
        self.response(event.data, out)
    }

    /// Never: usage may follow the finish reason, so the stream is read to its end.
    fn is_done(&self) -> bool {
        false
    }

    fn terminal_event(&self) -> &'static str {
        "finishReason"
    }

    fn complete_at_eof(&self) -> bool {
        self.finished
    }
}

/// Decodes a non-streaming `generateContent` body into chunks.
pub fn decode_body(body: &str) -> Result<Vec<StreamChunk>, ModelError> {
    let mut dec = GeminiDecoder::default();
    let mut out = Vec::new();
    dec.response(body, &mut out)?;
    Ok(out)
}
