//! Gemini thought signatures in weft's transcript.
//!
//! A part of a Gemini answer (a `functionCall`, a text part, a thought
//! summary) may carry a `thoughtSignature`: the model's reasoning,
//! encrypted. Gemini wants each one back, byte for byte, on the same part of
//! the next request's history, and refuses a function-calling turn whose
//! signature was dropped. weft keeps provider reasoning as
//! [`Thinking`] blocks ahead of an assistant message's text and calls, so a
//! signature travels as a [`Thinking::Redacted`] block (reasoning the
//! provider returned encrypted) whose data names the part it belongs to:
//! `{"gemini_thought_signature": "<signature>", "call": "<call id>"}` for a
//! call, `"thought": "<summary text>"` for a thought summary, neither for
//! the message's text. The Gemini encoder puts each back on its part; the
//! other providers' encoders skip these blocks ([`is_signature`]).

use serde::{Deserialize, Serialize};
use weft_core::message::Thinking;

/// How every signature block's data begins (serde writes fields in order).
const PREFIX: &str = "{\"gemini_thought_signature\":";

/// The part a signature was received on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Anchor {
    /// The `functionCall` part of the call with this id.
    Call(String),
    /// A thought summary part (`thought: true`) with this text.
    Thought(String),
    /// The answer's text.
    Text,
}

#[derive(Serialize, Deserialize)]
struct Wire {
    gemini_thought_signature: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    call: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    thought: Option<String>,
}

/// The thinking block carrying `signature`, received on `anchor`.
pub fn block(signature: String, anchor: Anchor) -> Thinking {
    let (call, thought) = match anchor {
        Anchor::Call(id) => (Some(id), None),
        Anchor::Thought(text) => (None, Some(text)),
        Anchor::Text => (None, None),
    };
    let wire = Wire {
        gemini_thought_signature: signature,
        call,
        thought,
    };
    // Serializing strings into JSON cannot fail.
    let data = serde_json::to_string(&wire).unwrap_or_default();
    Thinking::Redacted { data }
}

/// Whether `data` (a redacted thinking block's) holds a Gemini signature.
pub fn is_signature(data: &str) -> bool {
    data.starts_with(PREFIX)
}

/// The signature a thinking block carries and the part it goes on; `None`
/// for any other block.
pub fn parse(thinking: &Thinking) -> Option<(Anchor, String)> {
    let Thinking::Redacted { data } = thinking else {
        return None;
    };
    if !is_signature(data) {
        return None;
    }
    let wire: Wire = serde_json::from_str(data).ok()?;
    let anchor = match (wire.call, wire.thought) {
        (Some(id), _) => Anchor::Call(id),
        (None, Some(text)) => Anchor::Thought(text),
        (None, None) => Anchor::Text,
    };
    Some((anchor, wire.gemini_thought_signature))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_round_trip_with_their_anchor() {
        for anchor in [
            Anchor::Call("call_0".into()),
            Anchor::Thought("Thinking \"hard\"".into()),
            Anchor::Text,
        ] {
            let t = block("Cj4B+/=sig".into(), anchor.clone());
            let Thinking::Redacted { data } = &t else {
                panic!("a redacted block");
            };
            assert!(is_signature(data), "{data}");
            assert_eq!(parse(&t), Some((anchor, "Cj4B+/=sig".to_owned())));
        }
        let other = Thinking::Redacted {
            data: "EmwKAhgBEgy3va3pzix".into(),
        };
        assert_eq!(parse(&other), None);
    }
}
