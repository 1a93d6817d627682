//! The `application/vnd.amazon.eventstream` framing of a `ConverseStream`
//! answer: binary messages (a prelude with the total and header lengths,
//! typed headers, a JSON payload, CRC32 checksums), decoded with
//! `aws-smithy-eventstream`, each frame at most [`MAX_FRAME`] bytes.
//!
//! A frame's `:message-type` says what it holds: `event` (its
//! `:event-type` names the Converse event, decoded by [`ConverseDecoder`]),
//! `exception` (an error raised mid-stream, its `:exception-type` naming it:
//! `throttlingException`, `modelStreamErrorException`, ...) or `error`
//! (`:error-code` and `:error-message` headers).

use aws_smithy_eventstream::frame::read_message_from;
use aws_smithy_types::event_stream::{HeaderValue, Message};
use weft_core::model::{ModelError, StreamChunk};

use super::decode::ConverseDecoder;
use crate::decode::BodyDecoder;
use crate::http::{aws_retryable, one_line};

/// The largest frame accepted (the framing's own limit is 16 MiB).
pub const MAX_FRAME: usize = 16 * 1024 * 1024;
/// The smallest frame: a prelude (12 bytes) and the message checksum.
const MIN_FRAME: usize = 16;

/// Bedrock's event stream framing over a [`ConverseDecoder`].
#[derive(Debug, Default)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    events: ConverseDecoder,
    failed: bool,
}

impl FrameDecoder {
    /// A decoder for one `ConverseStream` answer.
    pub fn new() -> Self {
        Self::default()
    }

    fn frame(&mut self, message: &Message, out: &mut Vec<StreamChunk>) -> Result<(), ModelError> {
        let header = |name: &str| {
            message
                .headers()
                .iter()
                .find(|h| h.name().as_str() == name)
                .and_then(|h| match h.value() {
                    HeaderValue::String(s) => Some(s.as_str().to_owned()),
                    _ => None,
                })
        };
        let payload =
            std::str::from_utf8(message.payload()).map_err(|_| ModelError::Malformed {
                line: String::new(),
                message: "an event's payload is not UTF-8".into(),
            })?;
        match header(":message-type").as_deref() {
            Some("event") => {
                let kind = header(":event-type").unwrap_or_default();
                self.events.event(&kind, payload, out)
            }
            Some("exception") => {
                let kind = header(":exception-type").unwrap_or_else(|| "exception".into());
                let message = serde_json::from_str::<serde_json::Value>(payload)
                    .ok()
                    .and_then(|v| {
                        v.get("message")
                            .or_else(|| v.get("Message"))
                            .and_then(|m| m.as_str().map(str::to_owned))
                    })
                    .unwrap_or_else(|| one_line(payload));
                Err(ModelError::Stream {
                    retryable: aws_retryable(&kind),
                    error_type: kind,
                    message,
                })
            }
            Some("error") => Err(ModelError::Stream {
                error_type: header(":error-code").unwrap_or_else(|| "error".into()),
                message: header(":error-message").unwrap_or_default(),
                retryable: false,
            }),
            other => Err(ModelError::Malformed {
                line: one_line(payload),
                message: format!("an event stream frame of unknown :message-type {other:?}"),
            }),
        }
    }

    fn frames(&mut self, out: &mut Vec<StreamChunk>) -> Result<(), ModelError> {
        let mut at = 0;
        while self.buf.len() - at >= 4 && !self.events.is_done() {
            let rest = &self.buf[at..];
            let total = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            if !(MIN_FRAME..=MAX_FRAME).contains(&total) {
                return Err(ModelError::Malformed {
                    line: String::new(),
                    message: format!(
                        "an event stream frame of {total} bytes (from {MIN_FRAME} to {MAX_FRAME})"
                    ),
                });
            }
            if rest.len() < total {
                break;
            }
            let message = read_message_from(&rest[..total]).map_err(|e| ModelError::Malformed {
                line: String::new(),
                message: format!("an event stream frame does not decode: {e}"),
            })?;
            at += total;
            self.frame(&message, out)?;
        }
        self.buf.drain(..at);
        Ok(())
    }
}

impl BodyDecoder for FrameDecoder {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamChunk>) -> Result<(), ModelError> {
        if self.failed || self.events.is_done() {
            return Ok(());
        }
        self.buf.extend_from_slice(bytes);
        let res = self.frames(out);
        if res.is_err() {
            self.failed = true;
        }
        res
    }

    fn finish(&mut self, out: &mut Vec<StreamChunk>) -> Result<(), ModelError> {
        let _ = out;
        if !self.buf.is_empty() && !self.events.is_done() {
            return Err(ModelError::Truncated {
                message: "the event stream ended mid-frame".into(),
            });
        }
        if self.events.complete_at_eof() {
            Ok(())
        } else {
            Err(ModelError::Truncated {
                message: "the event stream ended before `messageStop`".into(),
            })
        }
    }

    fn is_done(&self) -> bool {
        self.events.is_done()
    }
}

/// Decodes a whole `ConverseStream` body at once.
pub fn decode_stream(body: &[u8]) -> Result<Vec<StreamChunk>, ModelError> {
    let mut dec = FrameDecoder::new();
    let mut out = Vec::new();
    dec.feed(body, &mut out)?;
    dec.finish(&mut out)?;
    Ok(out)
}
