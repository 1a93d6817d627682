//! The Bedrock fixtures (`fixtures/providers/bedrock`, provenance in its
//! `SOURCES.md`) decoded offline against their `*.expected.json`: each
//! `ConverseStream` event list framed as the service frames it and decoded
//! with frame boundaries at every position, each `Converse` body whole;
//! text, reasoning with its signature, redacted reasoning, tool calls, stop
//! reasons and usage, and an exception mid-stream as a typed error.

mod common;

use common::{FIXTURES, eventstream_frame, expected, fixture};
use serde_json::Value;
use weft_core::message::Thinking;
use weft_core::model::{ModelError, ModelSummary, StreamAssembler, StreamChunk};
use weft_core::planner::NoopEvents;
use weft_models::bedrock::{self, FrameDecoder};
use weft_models::decode::BodyDecoder;

/// A fixture's frames as the service sends them.
fn framed(name: &str) -> Vec<u8> {
    let frames: Vec<Value> = serde_json::from_slice(&fixture(&format!("bedrock/{name}"))).unwrap();
    let mut out = Vec::new();
    for f in frames {
        let headers: Vec<(&str, &str)> = [":message-type", ":event-type", ":exception-type"]
            .into_iter()
            .filter_map(|h| Some((h, f[h].as_str()?)))
            .collect();
        out.extend(eventstream_frame(&headers, &f["payload"]));
    }
    out
}

fn decode(bytes: &[u8], step: usize) -> (Vec<StreamChunk>, Result<(), ModelError>) {
    let mut dec = FrameDecoder::new();
    let mut out = Vec::new();
    for chunk in bytes.chunks(step) {
        if let Err(e) = dec.feed(chunk, &mut out) {
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

fn check(name: &str, s: &ModelSummary, want: &Value) {
    assert_eq!(s.text, want["text"].as_str().unwrap(), "{name}");
    let thought: String = s
        .thinking
        .iter()
        .filter_map(|t| match t {
            Thinking::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thought, want["thinking"].as_str().unwrap(), "{name}");
    let signatures: Vec<&str> = s
        .thinking
        .iter()
        .filter_map(|t| match t {
            Thinking::Text { signature, .. } => signature.as_deref(),
            _ => None,
        })
        .collect();
    let want_sigs: Vec<&str> = want["signatures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(signatures, want_sigs, "{name}: signatures byte for byte");
    let redacted: Vec<&str> = s
        .thinking
        .iter()
        .filter_map(|t| match t {
            Thinking::Redacted { data } => Some(data.as_str()),
            _ => None,
        })
        .collect();
    let want_redacted: Vec<&str> = want["redacted"].as_array().map_or_else(Vec::new, |r| {
        r.iter().map(|v| v.as_str().unwrap()).collect()
    });
    assert_eq!(redacted, want_redacted, "{name}");
    let calls: Vec<(String, String, Value)> = s
        .tool_calls
        .iter()
        .map(|c| {
            (
                c.id.as_str().to_owned(),
                c.name.clone(),
                serde_json::from_str(&c.arguments).unwrap(),
            )
        })
        .collect();
    let want_calls: Vec<(String, String, Value)> = want["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_owned(),
                c["name"].as_str().unwrap().to_owned(),
                c["arguments"].clone(),
            )
        })
        .collect();
    assert_eq!(calls, want_calls, "{name}");
    assert_eq!(
        s.stop_reason,
        Some(bedrock::stop_reason(want["stop_reason"].as_str().unwrap())),
        "{name}"
    );
    let u = &want["usage"];
    let got = (
        s.usage.input_tokens,
        s.usage.output_tokens,
        s.usage.cache_read_tokens,
        s.usage.cache_creation_tokens,
    );
    let field = |k: &str| u[k].as_u64().unwrap();
    assert_eq!(
        got,
        (
            field("input_tokens"),
            field("output_tokens"),
            field("cache_read_tokens"),
            field("cache_creation_tokens")
        ),
        "{name}"
    );
}

#[test]
fn bedrock_streams_decode_exactly_at_any_split() {
    for name in [
        "b1_text_stream",
        "b2_tool_use_stream",
        "b3_reasoning_stream",
    ] {
        let bytes = framed(&format!("{name}.events.json"));
        let want = expected(&format!("bedrock/{name}.expected.json"));
        for step in (1..=40).chain([bytes.len()]) {
            let (chunks, res) = decode(&bytes, step);
            res.unwrap_or_else(|e| panic!("{name} at {step}: {e}"));
            check(name, &summary(chunks), &want);
        }
    }
}

#[test]
fn bedrock_converse_bodies_decode_exactly() {
    for name in ["b4_converse_tool_use", "b5_converse_reasoning"] {
        let body = String::from_utf8(fixture(&format!("bedrock/{name}.body.json"))).unwrap();
        let want = expected(&format!("bedrock/{name}.expected.json"));
        check(name, &summary(bedrock::decode_body(&body).unwrap()), &want);
    }
}

#[test]
fn a_bedrock_exception_mid_stream_is_a_typed_error_after_the_text_so_far() {
    let bytes = framed("b6_exception_midstream.events.json");
    let want = &expected("bedrock/b6_exception_midstream.expected.json");
    for step in [1, 13, bytes.len()] {
        let (chunks, res) = decode(&bytes, step);
        assert_eq!(
            chunks,
            [StreamChunk::TextDelta {
                text: want["text"].as_str().unwrap().into()
            }]
        );
        assert_eq!(
            res,
            Err(ModelError::Stream {
                error_type: want["error"]["error_type"].as_str().unwrap().into(),
                message: want["error"]["message"].as_str().unwrap().into(),
                retryable: want["error"]["retryable"].as_bool().unwrap(),
            })
        );
    }
}

#[test]
fn every_bedrock_fixture_is_listed_in_sources() {
    let sources = std::fs::read_to_string(format!("{FIXTURES}/SOURCES.md")).unwrap();
    for entry in std::fs::read_dir(format!("{FIXTURES}/bedrock")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".expected.json") {
            continue;
        }
        assert!(
            sources.contains(&format!("`{name}`")),
            "{name} has no provenance in SOURCES.md"
        );
    }
}
