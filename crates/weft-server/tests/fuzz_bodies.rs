//! Fuzz target of the API's JSON request bodies, as a property test: each
//! body the server reads (`CreateSession`, `StartRun`, `ProvideAnswer`,
//! `CancelRun`) from arbitrary bytes, generated valid bodies, those bodies
//! with their JSON tree edited, or their bytes mutated. Reading never
//! panics and a bad body is always a 400 problem naming what is wrong; a
//! valid body always reads; a run's input becomes messages or a 400.
//!
//! `WEFT_FUZZ_CASES=10000000 cargo test --release -p weft-server --test fuzz_bodies`
//! runs it ten million times.

use axum::http::StatusCode;
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::sample::select;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use weft_fuzz::json::{self as fjson, Vocab};
use weft_fuzz::text::{tricky, word_or_tricky};
use weft_server::ApiError;
use weft_server::dto::{CancelRun, CreateSession, ProvideAnswer, StartRun};
use weft_server::json::parse;

static VOCAB: Vocab = Vocab {
    keys: &[
        "labels",
        "agent",
        "session_id",
        "input",
        "role",
        "parts",
        "type",
        "text",
        "media_type",
        "source",
        "kind",
        "value",
        "item_id",
        "answer",
        "answers",
        "results",
        "approved",
        "reason",
        "action",
        "content",
        "tool_call_id",
        "name",
        "payload",
        "result",
        "thinking",
        "tool_use_id",
        "is_error",
        "id",
        "input",
    ],
    strings: &[
        "user",
        "assistant",
        "system",
        "tool",
        "text",
        "image",
        "audio",
        "tool_use",
        "tool_result",
        "base64",
        "url",
        "image/png",
        "clarification",
        "questions",
        "external_tools",
        "confirmation",
        "elicitation",
        "accept",
        "decline",
        "cancel",
        "weft.tenant",
        "echo",
    ],
};

const WORDS: &[&str] = &["echo", "a", "é", "weft.", "s-1"];

/// Which body a case reads.
#[derive(Debug, Clone, Copy)]
enum Body {
    CreateSession,
    StartRun,
    ProvideAnswer,
    CancelRun,
}

fn labels() -> impl Strategy<Value = Value> {
    btree_map(word_or_tricky(WORDS), tricky(WORDS, 3), 0..3).prop_map(|m| json!(m))
}

/// A user message part: text, an image or an audio clip.
fn part() -> impl Strategy<Value = Value> {
    let media = |kind: &'static str| {
        (select(&["base64", "url"][..]), tricky(WORDS, 3)).prop_map(move |(source, value)| {
            json!({"type": kind, "media_type": "image/png",
                "source": {"kind": source, "value": value}})
        })
    };
    prop_oneof![
        3 => tricky(WORDS, 6).prop_map(|t| json!({"type": "text", "text": t})),
        1 => media("image"),
        1 => media("audio"),
    ]
}

fn input() -> impl Strategy<Value = Value> {
    let message = vec(part(), 0..3).prop_map(|parts| json!({"role": "user", "parts": parts}));
    prop_oneof![
        tricky(WORDS, 6).prop_map(Value::String),
        vec(message, 1..3).prop_map(Value::Array),
    ]
}

fn answer() -> impl Strategy<Value = Value> {
    prop_oneof![
        tricky(WORDS, 4).prop_map(|t| json!({"kind": "clarification", "text": t})),
        btree_map(
            word_or_tricky(WORDS),
            vec(word_or_tricky(WORDS), 0..3),
            0..3
        )
        .prop_map(|a| json!({"kind": "questions", "answers": a})),
        Just(json!({"kind": "external_tools", "results": []})),
        (any::<bool>(), proptest::option::of(tricky(WORDS, 3))).prop_map(|(ok, reason)| {
            json!({"kind": "confirmation", "approved": ok, "reason": reason})
        }),
        (
            select(&["accept", "decline", "cancel"][..]),
            fjson::value(&VOCAB, 2)
        )
            .prop_map(|(a, c)| json!({"kind": "elicitation", "action": a, "content": c})),
    ]
}

/// A valid body of the given kind.
fn valid(body: Body) -> BoxedStrategy<Value> {
    match body {
        Body::CreateSession => labels().prop_map(|l| json!({ "labels": l })).boxed(),
        Body::StartRun => (
            word_or_tricky(WORDS),
            proptest::option::of(word_or_tricky(WORDS)),
            input(),
            labels(),
        )
            .prop_map(|(agent, session, input, labels)| {
                json!({"agent": agent, "session_id": session, "input": input, "labels": labels})
            })
            .boxed(),
        Body::ProvideAnswer => (word_or_tricky(WORDS), answer())
            .prop_map(|(id, a)| json!({"item_id": id, "answer": a}))
            .boxed(),
        Body::CancelRun => proptest::option::of(tricky(WORDS, 4))
            .prop_map(|r| json!({ "reason": r }))
            .boxed(),
    }
}

/// A body's bytes, and whether they are a valid body.
fn case() -> impl Strategy<Value = (Body, Vec<u8>, bool)> {
    let body = select(
        &[
            Body::CreateSession,
            Body::StartRun,
            Body::ProvideAnswer,
            Body::CancelRun,
        ][..],
    );
    body.prop_flat_map(|b| {
        let edited = (valid(b), vec(fjson::edit(&VOCAB), 1..4)).prop_map(|(mut v, edits)| {
            for e in &edits {
                fjson::apply(&mut v, e);
            }
            v.to_string().into_bytes()
        });
        let mutated = (valid(b), vec(weft_fuzz::bytes::mutation(), 1..6)).prop_map(|(v, ms)| {
            let mut bytes = v.to_string().into_bytes();
            for m in &ms {
                weft_fuzz::bytes::apply(&mut bytes, m);
            }
            bytes
        });
        prop_oneof![
            1 => weft_fuzz::bytes::arbitrary(128).prop_map(|b| (b, false)),
            2 => valid(b).prop_map(|v| (v.to_string().into_bytes(), true)),
            3 => edited.prop_map(|b| (b, false)),
            2 => mutated.prop_map(|b| (b, false)),
        ]
        .prop_map(move |(bytes, ok)| (b, bytes, ok))
    })
}

proptest! {
    #![proptest_config(weft_fuzz::config(weft_fuzz::DEFAULT_CASES))]

    #[test]
    fn api_bodies((body, bytes, valid) in case()) {
        match body {
            Body::CreateSession => read::<CreateSession>(&bytes, valid).map(drop)?,
            Body::ProvideAnswer => read::<ProvideAnswer>(&bytes, valid).map(drop)?,
            Body::CancelRun => read::<CancelRun>(&bytes, valid).map(drop)?,
            Body::StartRun => {
                if let Some(run) = read::<StartRun>(&bytes, valid)? {
                    match run.input.into_messages() {
                        Ok(messages) => prop_assert!(!messages.is_empty()),
                        Err(e) => bad_request(&e)?,
                    }
                }
            }
        }
    }
}

/// Reads `bytes` as a `T`: a valid body must read, a failure must be a 400.
fn read<T: DeserializeOwned>(bytes: &[u8], valid: bool) -> Result<Option<T>, TestCaseError> {
    match parse::<T>(bytes) {
        Ok(v) => Ok(Some(v)),
        Err(e) => {
            prop_assert!(
                !valid,
                "a valid body was refused: {e:?}\n{}",
                String::from_utf8_lossy(bytes)
            );
            bad_request(&e)?;
            Ok(None)
        }
    }
}

/// `e` is a 400 whose problem document serializes.
fn bad_request(e: &ApiError) -> Result<(), TestCaseError> {
    prop_assert_eq!(e.status(), StatusCode::BAD_REQUEST, "{:?}", e);
    let problem = e.problem();
    prop_assert_eq!(problem.status, 400);
    prop_assert!(serde_json::to_vec(&problem).is_ok());
    Ok(())
}
