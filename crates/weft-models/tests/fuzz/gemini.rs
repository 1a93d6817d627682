//! The Gemini targets: the stream decoder (each event a whole
//! `GenerateContentResponse`) and the body decoder.

use std::sync::LazyLock;

use proptest::prelude::*;
use serde_json::json;
use weft_fuzz::json::Vocab;
use weft_fuzz::split::cuts;
use weft_models::gemini::{GeminiDecoder, decode_body};

use crate::seeds::{self, Data, Seeds};
use crate::stream::{Provider, body_input, check_body, check_stream, stream_input};

/// Gemini events carry no type; the model version stands in for one.
const TAGS: &[&str] = &["gemini-2.5-flash", "gemini-2.5-pro"];

static VOCAB: Vocab = Vocab {
    keys: &[
        "candidates",
        "content",
        "parts",
        "role",
        "text",
        "thought",
        "thoughtSignature",
        "functionCall",
        "name",
        "args",
        "id",
        "finishReason",
        "index",
        "usageMetadata",
        "promptTokenCount",
        "candidatesTokenCount",
        "thoughtsTokenCount",
        "cachedContentTokenCount",
        "promptFeedback",
        "blockReason",
        "responseId",
        "error",
        "code",
        "message",
        "status",
    ],
    strings: &[
        "model",
        "STOP",
        "MAX_TOKENS",
        "SAFETY",
        "RECITATION",
        "MALFORMED_FUNCTION_CALL",
        "UNAVAILABLE",
        "RESOURCE_EXHAUSTED",
        "calc__add",
        "c2ln",
        "{",
        "{\"a\":",
        "1}",
    ],
};

static SEEDS: LazyLock<Seeds> = LazyLock::new(|| seeds::load("gemini"));

static PROVIDER: Provider = Provider {
    vocab: &VOCAB,
    tag_key: "modelVersion",
    tags: TAGS,
    terminal: || {
        (
            None,
            Data::Json(json!({"candidates": [{"finishReason": "STOP", "index": 0}]})),
        )
    },
    seeds: &SEEDS,
};

proptest! {
    #![proptest_config(weft_fuzz::config(weft_fuzz::DEFAULT_CASES))]

    #[test]
    fn gemini_stream(input in stream_input(&PROVIDER), cuts in cuts()) {
        check_stream(GeminiDecoder::default, &input, &cuts)?;
    }

    #[test]
    fn gemini_body(input in body_input(&PROVIDER)) {
        check_body(decode_body, &input)?;
    }
}
