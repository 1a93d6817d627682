//! The Gemini fixtures (`fixtures/providers/gemini`, provenance in its
//! `SOURCES.md`) decoded offline, streams with chunk boundaries at every
//! position, against their `*.expected.json`: text, calls with made-up ids,
//! thought summaries, thought signatures on the part they came with, usage
//! and finish reasons; and malformed or cut streams as typed errors.

mod common;

use common::{Api, check_summary, expected, fixture, split};
use serde_json::Value;
use weft_core::message::Thinking;
use weft_core::model::{ModelError, ModelSummary, StopReason, StreamAssembler, StreamChunk};
use weft_core::planner::NoopEvents;
use weft_models::decode::StreamDecoder;
use weft_models::gemini::signature::{Anchor, parse};
use weft_models::gemini::{self, GeminiDecoder};

fn decode(chunks: &[bytes::Bytes]) -> (Vec<StreamChunk>, Result<(), ModelError>) {
    let mut dec = StreamDecoder::new(GeminiDecoder::default());
    let mut out = Vec::new();
    for c in chunks {
        if let Err(e) = dec.feed(c, &mut out) {
            return (out, Err(e));
        }
    }
    let res = dec.finish(&mut out);
    (out, res)
}

fn summary(chunks: Vec<StreamChunk>) -> ModelSummary {
    let mut asm = StreamAssembler::new();
    for c in chunks {
        asm.push(c, &NoopEvents).unwrap();
    }
    asm.finish(&NoopEvents)
}

/// The signatures and reasoning text a summary carries, checked against `want`.
fn check_gemini(s: &ModelSummary, want: &Value) {
    assert_eq!(
        s.usage.cache_read_tokens,
        want["usage"]["cache_read_tokens"].as_u64().unwrap()
    );
    let signatures: Vec<(Anchor, String)> = s.thinking.iter().filter_map(parse).collect();
    let expected: Vec<(Anchor, String)> = want["signatures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|sig| {
            let anchor = match sig["on"].as_str().unwrap() {
                "call" => Anchor::Call(sig["call"].as_str().unwrap().to_owned()),
                "text" => Anchor::Text,
                other => panic!("anchor {other}"),
            };
            (anchor, sig["signature"].as_str().unwrap().to_owned())
        })
        .collect();
    assert_eq!(signatures, expected);
    let thought: String = s
        .thinking
        .iter()
        .filter_map(|t| match t {
            Thinking::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thought, want["thinking"].as_str().unwrap_or(""));
}

#[test]
fn gemini_streams_decode_exactly_at_any_split() {
    for name in [
        "g1_text_stream",
        "g2_function_call_signature",
        "g4_max_tokens_thought_text_signature",
    ] {
        let bytes = fixture(&format!("gemini/{name}.sse"));
        let want = expected(&format!("gemini/{name}.expected.json"));
        let mut plans: Vec<Vec<bytes::Bytes>> = (1..=40).map(|n| split(&bytes, &[n])).collect();
        plans.push(vec![bytes::Bytes::copy_from_slice(&bytes)]);
        for plan in plans {
            let (chunks, res) = decode(&plan);
            res.unwrap_or_else(|e| panic!("{name}: {e}"));
            let s = summary(chunks);
            check_summary(Api::Gemini, &s, &want);
            check_gemini(&s, &want);
        }
    }
}

#[test]
fn gemini_body_with_parallel_calls_decodes_exactly() {
    let body = String::from_utf8(fixture("gemini/g3_parallel_function_calls.body.json")).unwrap();
    let want = expected("gemini/g3_parallel_function_calls.expected.json");
    let s = summary(gemini::decode_body(&body).unwrap());
    check_summary(Api::Gemini, &s, &want);
    check_gemini(&s, &want);
    assert_eq!(s.stop_reason, Some(StopReason::ToolUse));
}

#[test]
fn a_gemini_stream_cut_before_its_finish_reason_is_truncated() {
    let text = String::from_utf8(fixture("gemini/g1_text_stream.sse")).unwrap();
    let last = text.trim_end().rfind("data: ").unwrap();
    let (_, res) = decode(&split(&text.as_bytes()[..last], &[17]));
    assert_eq!(
        res,
        Err(ModelError::Truncated {
            message: "the stream ended before `finishReason`".into()
        })
    );
}

#[test]
fn malformed_gemini_data_is_a_typed_error_and_an_in_stream_error_is_a_stream_error() {
    let (_, res) = decode(&split(
        b"data: {\"candidates\": [{\"content\": 7}]}\n\n",
        &[3],
    ));
    assert!(matches!(res, Err(ModelError::Malformed { .. })), "{res:?}");
    let (_, res) = decode(&split(b"data: [1, 2\n\n", &[3]));
    assert!(matches!(res, Err(ModelError::Malformed { .. })), "{res:?}");
    let body = b"data: {\"error\": {\"code\": 503, \"message\": \"The model is overloaded.\", \"status\": \"UNAVAILABLE\"}}\n\n";
    let (_, res) = decode(&split(body, &[5]));
    assert_eq!(
        res,
        Err(ModelError::Stream {
            error_type: "UNAVAILABLE".into(),
            message: "The model is overloaded.".into(),
            retryable: true,
        })
    );
}

#[test]
fn safety_stops_and_blocked_prompts_are_content_filter_stops() {
    let body = r#"{"candidates": [{"content": {"parts": [{"text": "I"}], "role": "model"}, "finishReason": "SAFETY"}]}"#;
    let s = summary(gemini::decode_body(body).unwrap());
    assert_eq!(s.stop_reason, Some(StopReason::ContentFilter));
    let blocked = r#"{"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 7}}"#;
    let s = summary(gemini::decode_body(blocked).unwrap());
    assert_eq!(s.stop_reason, Some(StopReason::ContentFilter));
    assert_eq!(s.usage.input_tokens, 7);
    let odd = r#"{"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL"}]}"#;
    let s = summary(gemini::decode_body(odd).unwrap());
    assert_eq!(
        s.stop_reason,
        Some(StopReason::Other("malformed_function_call".into()))
    );
}
