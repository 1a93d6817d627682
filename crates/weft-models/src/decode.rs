//! The provider stream decoder contract and the sans-IO driver that runs SSE
//! bytes through a provider decoder into [`StreamChunk`]s; [`BodyDecoder`],
//! what the transport drives, whatever a body's framing (SSE, or Bedrock's
//! binary event stream).

use weft_core::model::{ModelError, StreamChunk};

use crate::sse::{SseDecoder, SseError, SseEvent};

/// Turns one provider's SSE events into stream chunks.
pub trait EventDecoder: Send {
    /// Decodes one event, appending the chunks it yields to `out`.
    fn event(&mut self, event: SseEvent<'_>, out: &mut Vec<StreamChunk>) -> Result<(), ModelError>;

    /// Whether the provider's terminal event has been seen.
    fn is_done(&self) -> bool;

    /// The provider's name for the terminal event, for `Truncated` messages.
    fn terminal_event(&self) -> &'static str;

    /// Whether a stream ending now is complete; by default only after the terminal event.
    fn complete_at_eof(&self) -> bool {
        self.is_done()
    }
}

impl From<SseError> for ModelError {
    fn from(e: SseError) -> Self {
        ModelError::Malformed {
            line: e.line,
            message: "invalid UTF-8".to_owned(),
        }
    }
}

/// A streamed response body's decoder: bytes in, chunks out.
pub trait BodyDecoder: Send {
    /// Feeds a chunk of bytes, appending decoded chunks to `out`.
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamChunk>) -> Result<(), ModelError>;

    /// Ends the body: an error when it was cut before its end.
    fn finish(&mut self, out: &mut Vec<StreamChunk>) -> Result<(), ModelError>;

    /// Whether the body's terminal event has been seen (nothing more to read).
    fn is_done(&self) -> bool;
}

impl<D: EventDecoder> BodyDecoder for StreamDecoder<D> {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamChunk>) -> Result<(), ModelError> {
        StreamDecoder::feed(self, bytes, out)
    }

    fn finish(&mut self, out: &mut Vec<StreamChunk>) -> Result<(), ModelError> {
        StreamDecoder::finish(self, out)
    }

    fn is_done(&self) -> bool {
        StreamDecoder::is_done(self)
    }
}

/// SSE framing plus a provider decoder: bytes in, chunks out.
#[derive(Debug)]
pub struct StreamDecoder<D> {
    sse: SseDecoder,
    provider: D,
    /// Set once an error or the terminal event ends the stream.
    failed: bool,
}

impl<D: EventDecoder> StreamDecoder<D> {
    /// A decoder over `provider`.
    pub fn new(provider: D) -> Self {
        Self {
            sse: SseDecoder::new(),
            provider,
            failed: false,
        }
    }

    /// Feeds a chunk of bytes, appending decoded chunks to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamChunk>) -> Result<(), ModelError> {
        let provider = &mut self.provider;
        let res = self.sse.feed(bytes, &mut |e| {
            // Events after the terminal one (there should be none) are ignored.
            if provider.is_done() {
                return Ok(());
            }
            provider.event(e, out)
        });
        if res.is_err() {
            self.failed = true;
        }
        res
    }

    /// Ends the stream: dispatches an unterminated last event, then checks
    /// that the terminal event was seen.
    pub fn finish(&mut self, out: &mut Vec<StreamChunk>) -> Result<(), ModelError> {
        let provider = &mut self.provider;
        let terminal = provider.terminal_event();
        self.sse
            .finish(&mut |e| {
                if provider.is_done() {
                    return Ok(());
                }
                provider.event(e, out)
            })
            .map_err(|e| match e {
                // An unterminated last event that does not parse was cut off.
                ModelError::Malformed { .. } => ModelError::Truncated {
                    message: format!("the stream ended mid-event, before `{terminal}`"),
                },
                other => other,
            })?;
        if self.provider.complete_at_eof() {
            Ok(())
        } else {
            Err(ModelError::Truncated {
                message: format!(
                    "the stream ended before `{}`",
                    self.provider.terminal_event()
                ),
            })
        }
    }

    /// Whether the terminal event has been seen.
    pub fn is_done(&self) -> bool {
        self.provider.is_done()
    }

    /// Whether an earlier call failed.
    pub fn has_failed(&self) -> bool {
        self.failed
    }
}

/// Appends one whole tool call: its start, all of its arguments, and its end.
pub(crate) fn push_whole_call(
    out: &mut Vec<StreamChunk>,
    index: u32,
    id: String,
    name: String,
    arguments: String,
) {
    out.push(StreamChunk::ToolCallStart {
        index,
        id: id.into(),
        name,
    });
    out.push(StreamChunk::ToolCallArgsDelta {
        index,
        delta: arguments,
    });
    out.push(StreamChunk::ToolCallEnd { index });
}

/// Decodes a whole SSE body at once.
pub fn decode_all<D: EventDecoder>(
    provider: D,
    body: &[u8],
) -> Result<Vec<StreamChunk>, ModelError> {
    let mut dec = StreamDecoder::new(provider);
    let mut out = Vec::new();
    dec.feed(body, &mut out)?;
    dec.finish(&mut out)?;
    Ok(out)
}
