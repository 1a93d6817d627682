//! The Bedrock targets: the `ConverseStream` decoder (the binary event
//! stream framing included) and the `Converse` body decoder.
//!
//! Stream inputs are arbitrary bytes, frames of generated events, the
//! fixtures' frames edited (payload edits, frames dropped, repeated,
//! swapped, their message type changed) and those frames' bytes mutated.

use std::sync::{Arc, LazyLock};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;
use serde_json::{Value, json};
use weft_core::model::{ModelError, StreamAssembler, StreamChunk};
use weft_core::planner::NoopEvents;
use weft_fuzz::json::Vocab;
use weft_fuzz::split::{Cuts, chunks, cuts};
use weft_models::bedrock::{FrameDecoder, decode_body};
use weft_models::decode::BodyDecoder;

use crate::common::FIXTURES;
use crate::seeds::{self, Seeds};
use crate::stream::{Provider, body_input, check_body};

const TAGS: &[&str] = &[
    "messageStart",
    "contentBlockStart",
    "contentBlockDelta",
    "contentBlockStop",
    "messageStop",
    "metadata",
];

static VOCAB: Vocab = Vocab {
    keys: &[
        "role",
        "contentBlockIndex",
        "start",
        "delta",
        "toolUse",
        "toolUseId",
        "name",
        "input",
        "text",
        "reasoningContent",
        "signature",
        "redactedContent",
        "stopReason",
        "usage",
        "inputTokens",
        "outputTokens",
        "cacheReadInputTokens",
        "cacheWriteInputTokens",
        "output",
        "message",
        "content",
        "reasoningText",
        "p",
    ],
    strings: &[
        "assistant",
        "end_turn",
        "tool_use",
        "max_tokens",
        "guardrail_intervened",
        "top_song",
        "tooluse_1",
        "{",
        "{\"a\":",
        "1}",
        "RXVj",
    ],
};

/// One frame: its message type, its event or exception type, its payload.
type Frame = (String, String, Value);

/// The fixtures' frames, one list per `.events.json` file.
static FRAMES: LazyLock<Vec<Vec<Frame>>> = LazyLock::new(|| {
    let dir = format!("{FIXTURES}/bedrock");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".events.json"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|n| {
            let list: Vec<Value> =
                serde_json::from_slice(&std::fs::read(format!("{dir}/{n}")).unwrap()).unwrap();
            list.into_iter().map(|f| frame_of(&f)).collect()
        })
        .collect()
});

fn frame_of(f: &Value) -> Frame {
    let kind = f[":message-type"].as_str().unwrap_or("event").to_owned();
    let tag = f[":event-type"]
        .as_str()
        .or(f[":exception-type"].as_str())
        .unwrap_or_default()
        .to_owned();
    (kind, tag, f["payload"].clone())
}

/// The frames encoded, as the service sends them.
pub fn encode(frames: &[Frame]) -> Vec<u8> {
    let mut out = Vec::new();
    for (kind, tag, payload) in frames {
        let name = if kind == "exception" {
            ":exception-type"
        } else {
            ":event-type"
        };
        let pairs = [(":message-type", kind.as_str()), (name, tag.as_str())];
        out.extend(crate::common::eventstream_frame(&pairs, payload));
    }
    out
}

static SEEDS: LazyLock<Seeds> = LazyLock::new(|| seeds::load("bedrock"));

static PROVIDER: Provider = Provider {
    vocab: &VOCAB,
    tag_key: "stopReason",
    tags: &["end_turn", "tool_use"],
    terminal: || (None, seeds::Data::Json(json!({}))),
    seeds: &SEEDS,
};

fn frame_strategy() -> impl Strategy<Value = Frame> {
    let kind = prop_oneof![8 => Just("event"), 1 => Just("exception"), 1 => Just("error")];
    (
        kind,
        proptest::sample::select(TAGS),
        weft_fuzz::json::value(&VOCAB, 4),
    )
        .prop_map(|(k, t, v)| (k.to_owned(), t.to_owned(), v))
}

/// A stream decoder's input: arbitrary, generated, an edited fixture, or
/// a fixture's bytes mutated.
fn stream_input() -> BoxedStrategy<Vec<u8>> {
    let encoded: Vec<Vec<u8>> = FRAMES.iter().map(|f| encode(f)).collect();
    let edited = (
        any::<Index>(),
        vec(
            (any::<Index>(), 0u8..5, weft_fuzz::json::edit(&VOCAB)),
            0..6,
        ),
    )
        .prop_map(|(seed, edits)| {
            let mut frames = seed.get(&FRAMES).clone();
            for (i, op, edit) in &edits {
                if frames.is_empty() {
                    break;
                }
                let at = i.index(frames.len());
                match op {
                    0 => drop(frames.remove(at)),
                    1 => frames.insert(at, frames[at].clone()),
                    2 => frames[at].0 = "exception".into(),
                    _ => weft_fuzz::json::apply(&mut frames[at].2, edit),
                }
            }
            encode(&frames)
        });
    prop_oneof![
        1 => weft_fuzz::bytes::arbitrary(256),
        2 => vec(frame_strategy(), 0..10).prop_map(|f| encode(&f)),
        3 => edited,
        2 => weft_fuzz::bytes::mutated(Arc::new(encoded), 6),
    ]
    .boxed()
}

fn decode(chunks: &[&[u8]]) -> (Vec<StreamChunk>, Result<(), ModelError>) {
    let mut dec = FrameDecoder::new();
    let mut out = Vec::new();
    for c in chunks {
        if let Err(e) = dec.feed(c, &mut out) {
            return (out, Err(e));
        }
    }
    let res = dec.finish(&mut out);
    (out, res)
}

fn check_stream(input: &[u8], cuts: &Cuts) -> Result<(), TestCaseError> {
    let whole = decode(&[input]);
    let split = decode(&chunks(input, cuts));
    prop_assert_eq!(&whole, &split, "chunking changed the decoding");
    if let Err(e) = &whole.1 {
        prop_assert!(
            matches!(
                e,
                ModelError::Malformed { .. }
                    | ModelError::Truncated { .. }
                    | ModelError::Stream { .. }
            ),
            "a decoder error a stream cannot have: {e:?}"
        );
    }
    let mut asm = StreamAssembler::new();
    for c in whole.0 {
        if asm.push(c, &NoopEvents).is_err() {
            return Ok(());
        }
    }
    asm.finish(&NoopEvents);
    Ok(())
}

proptest! {
    #![proptest_config(weft_fuzz::config(weft_fuzz::DEFAULT_CASES))]

    #[test]
    fn bedrock_stream(input in stream_input(), cuts in cuts()) {
        check_stream(&input, &cuts)?;
    }

    #[test]
    fn bedrock_body(input in body_input(&PROVIDER)) {
        check_body(decode_body, &input)?;
    }
}

#[test]
fn every_fixture_stream_decodes_whole_and_cut() {
    assert_eq!(FRAMES.len(), 4);
    for frames in FRAMES.iter() {
        let bytes = encode(frames);
        let (chunks, res) = decode(&[&bytes]);
        assert!(!chunks.is_empty());
        let (split, again) = decode(&bytes.chunks(3).collect::<Vec<_>>());
        assert_eq!((chunks, res), (split, again));
    }
}
