use weft_core::RunId;
use weft_core::event::EventKind;
use weft_core::tool::Labels;

use super::{MAX_MERGED_CHUNK, RunShared};
use crate::clock::SystemClock;

fn chunk(text: &str) -> EventKind {
    EventKind::AssistantChunk {
        text: text.to_owned(),
    }
}

fn texts(events: &[weft_core::event::RunEvent]) -> Vec<(u64, String)> {
    events
        .iter()
        .map(|e| match &e.kind {
            EventKind::AssistantChunk { text } => (e.seq, text.clone()),
            _ => (e.seq, "<other>".to_owned()),
        })
        .collect()
}

#[test]
fn streamed_text_is_one_event_per_commit() {
    let shared = RunShared::new(RunId::new("r"), 4);
    for t in ["a", "b", "c"] {
        shared.emit(&SystemClock, chunk(t));
    }
    shared.emit(
        &SystemClock,
        EventKind::PlannerThought {
            text: "n".into(),
            labels: Labels::default(),
        },
    );
    shared.emit(&SystemClock, chunk("d"));
    shared.emit(&SystemClock, chunk("e"));
    let first = shared.begin_commit();
    shared.end_commit(true);
    assert_eq!(
        texts(&first),
        vec![(5, "abc".into()), (6, "<other>".into()), (7, "de".into())]
    );
    // Text after a commit starts a new event with the next number.
    shared.emit(&SystemClock, chunk("f"));
    assert_eq!(texts(&shared.begin_commit()), vec![(8, "f".into())]);
    assert_eq!(shared.seq(), 8);
}

#[test]
fn merged_text_stops_growing_at_the_cap() {
    let shared = RunShared::new(RunId::new("r"), 0);
    let piece = "x".repeat(MAX_MERGED_CHUNK / 2);
    for _ in 0..3 {
        shared.emit(&SystemClock, chunk(&piece));
    }
    let events = shared.begin_commit();
    let sizes: Vec<usize> = texts(&events).iter().map(|(_, t)| t.len()).collect();
    assert_eq!(sizes, vec![MAX_MERGED_CHUNK, MAX_MERGED_CHUNK / 2]);
}

#[test]
fn a_failed_commit_keeps_the_text_in_order_before_later_text() {
    let shared = RunShared::new(RunId::new("r"), 0);
    shared.emit(&SystemClock, chunk("a"));
    let _ = shared.begin_commit();
    shared.emit(&SystemClock, chunk("b"));
    shared.end_commit(false);
    shared.emit(&SystemClock, chunk("c"));
    assert_eq!(
        texts(&shared.begin_commit()),
        vec![(1, "a".into()), (2, "bc".into())]
    );
}

#[test]
fn text_a_failed_commit_carried_is_never_extended() {
    // A commit that reports a failure may still have been stored; its retry
    // must send the same events, or the stored text and the sent text part.
    let shared = RunShared::new(RunId::new("r"), 0);
    shared.emit(&SystemClock, chunk("a"));
    let _ = shared.begin_commit();
    shared.end_commit(false);
    shared.emit(&SystemClock, chunk("b"));
    shared.emit(&SystemClock, chunk("c"));
    assert_eq!(
        texts(&shared.begin_commit()),
        vec![(1, "a".into()), (2, "bc".into())]
    );
}
