//! What the provider targets share: their inputs (arbitrary bytes, streams
//! of generated events, fixture streams edited event by event or byte by
//! byte, bodies likewise) and their checks.

use std::sync::{Arc, LazyLock};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;
use serde_json::Value;
use weft_core::model::{ModelError, StreamAssembler, StreamChunk};
use weft_core::planner::NoopEvents;
use weft_fuzz::json::{self, Vocab};
use weft_fuzz::split::{Cuts, chunks};
use weft_fuzz::sse::{Framing, event_name, framing, write_event};
use weft_models::decode::{EventDecoder, StreamDecoder};

use crate::seeds::{Data, Event, Seeds};

/// What a provider's targets generate from.
pub struct Provider {
    /// Its keys and strings.
    pub vocab: &'static Vocab,
    /// The key whose value says what an event is (`type`).
    pub tag_key: &'static str,
    /// Its event types.
    pub tags: &'static [&'static str],
    /// The event that ends a stream.
    pub terminal: fn() -> Event,
    /// Its recorded fixtures.
    pub seeds: &'static LazyLock<Seeds>,
}

/// A stream decoder's input: arbitrary, generated, or an edited fixture.
pub fn stream_input(p: &'static Provider) -> BoxedStrategy<Vec<u8>> {
    let events = Arc::new(p.seeds.events.clone());
    prop_oneof![
        1 => weft_fuzz::bytes::arbitrary(256),
        2 => generated(p),
        3 => edited(p, events),
        2 => weft_fuzz::bytes::mutated(Arc::new(p.seeds.streams.clone()), 6),
    ]
    .boxed()
}

/// A body decoder's input: arbitrary, generated JSON, or an edited fixture.
pub fn body_input(p: &'static Provider) -> BoxedStrategy<Vec<u8>> {
    let bodies: Vec<Value> = p
        .seeds
        .bodies
        .iter()
        .map(|b| serde_json::from_slice(b).unwrap())
        .collect();
    let bodies = Arc::new(bodies);
    prop_oneof![
        1 => weft_fuzz::bytes::arbitrary(256),
        2 => json::value(p.vocab, 4).prop_map(|v| v.to_string().into_bytes()),
        4 => (any::<Index>(), vec(json::edit(p.vocab), 0..6)).prop_map(move |(i, edits)| {
            let mut body = i.get(&bodies).clone();
            for e in &edits {
                json::apply(&mut body, e);
            }
            body.to_string().into_bytes()
        }),
        2 => weft_fuzz::bytes::mutated(Arc::new(p.seeds.bodies.clone()), 6),
    ]
    .boxed()
}

fn generated(p: &'static Provider) -> impl Strategy<Value = Vec<u8>> {
    let event = (event_name(p.tags), json::tagged(p.vocab, p.tag_key, p.tags))
        .prop_map(|(name, v)| (name, Data::Json(v)));
    (vec(event, 0..10), any::<bool>(), framing(), any::<bool>()).prop_map(
        move |(mut events, end, framing, pretty)| {
            if end {
                events.push((p.terminal)());
            }
            encode(&events, &framing, pretty)
        },
    )
}

/// One edit of a fixture's event list.
#[derive(Debug, Clone)]
enum EventEdit {
    Json(Index, json::Edit),
    Drop(Index),
    Repeat(Index),
    Swap(Index, Index),
}

fn edited(p: &'static Provider, seeds: Arc<Vec<Vec<Event>>>) -> impl Strategy<Value = Vec<u8>> {
    let edit = prop_oneof![
        4 => (any::<Index>(), json::edit(p.vocab)).prop_map(|(i, e)| EventEdit::Json(i, e)),
        1 => any::<Index>().prop_map(EventEdit::Drop),
        1 => any::<Index>().prop_map(EventEdit::Repeat),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(i, j)| EventEdit::Swap(i, j)),
    ];
    (any::<Index>(), vec(edit, 0..6), framing(), any::<bool>()).prop_map(
        move |(seed, edits, framing, pretty)| {
            let mut events = seed.get(&seeds).clone();
            for e in &edits {
                if events.is_empty() {
                    break;
                }
                let n = events.len();
                match e {
                    EventEdit::Json(i, edit) => {
                        if let Data::Json(v) = &mut events[i.index(n)].1 {
                            json::apply(v, edit);
                        }
                    }
                    EventEdit::Drop(i) => drop(events.remove(i.index(n))),
                    EventEdit::Repeat(i) => events.insert(i.index(n), events[i.index(n)].clone()),
                    EventEdit::Swap(i, j) => events.swap(i.index(n), j.index(n)),
                }
            }
            encode(&events, &framing, pretty)
        },
    )
}

fn encode(events: &[Event], framing: &Framing, pretty: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, data) in events {
        let text = match data {
            Data::Json(v) if pretty => serde_json::to_string_pretty(v).unwrap(),
            Data::Json(v) => v.to_string(),
            Data::Raw(s) => s.clone(),
        };
        write_event(&mut out, name.as_deref(), &text, framing);
    }
    out
}

/// Decodes `input` whole and cut as `cuts` says: both must give the same
/// chunks and result, an error must be one a stream can have, and the
/// chunks must fold into a summary or a typed assembly error.
pub fn check_stream<D: EventDecoder>(
    new: fn() -> D,
    input: &[u8],
    cuts: &Cuts,
) -> Result<(), TestCaseError> {
    let whole = decode(new(), &[input]);
    let split = decode(new(), &chunks(input, cuts));
    prop_assert_eq!(
        (&whole.0, whole.1.as_ref().map_err(quoteless)),
        (&split.0, split.1.as_ref().map_err(quoteless)),
        "chunking changed the decoding"
    );
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
    assemble(whole.0);
    Ok(())
}

/// An error without the line it quotes for invalid UTF-8: when an event
/// holds several bad values, which one is found first depends on where the
/// chunks end (see the `sse` target).
fn quoteless(e: &ModelError) -> ModelError {
    match e {
        ModelError::Malformed { message, .. } if message == "invalid UTF-8" => {
            ModelError::Malformed {
                line: String::new(),
                message: message.clone(),
            }
        }
        other => other.clone(),
    }
}

/// Decodes a whole body: a summary's chunks or a typed error.
pub fn check_body(
    decode: fn(&str) -> Result<Vec<StreamChunk>, ModelError>,
    input: &[u8],
) -> Result<(), TestCaseError> {
    match decode(&String::from_utf8_lossy(input)) {
        Ok(chunks) => assemble(chunks),
        Err(ModelError::Malformed { .. } | ModelError::Stream { .. }) => {}
        Err(e) => prop_assert!(false, "a body error a decoder cannot have: {e:?}"),
    }
    Ok(())
}

/// Feeds `chunks` as a client does (stopping at the first error), then ends
/// the stream; with a fixed seed, so made-up call ids are the same each time.
fn decode<D: EventDecoder>(dec: D, chunks: &[&[u8]]) -> (Vec<StreamChunk>, Result<(), ModelError>) {
    fastrand::seed(0x5eed);
    let mut dec = StreamDecoder::new(dec);
    let mut out = Vec::new();
    for c in chunks {
        if let Err(e) = dec.feed(c, &mut out) {
            return (out, Err(e));
        }
    }
    let res = dec.finish(&mut out);
    (out, res)
}

fn assemble(chunks: Vec<StreamChunk>) {
    let mut asm = StreamAssembler::new();
    for c in chunks {
        if asm.push(c, &NoopEvents).is_err() {
            return;
        }
    }
    asm.finish(&NoopEvents);
}
