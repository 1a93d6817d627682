//! The Responses API targets: the stream decoder and the body decoder.

use std::sync::LazyLock;

use proptest::prelude::*;
use serde_json::json;
use weft_fuzz::json::Vocab;
use weft_fuzz::split::cuts;
use weft_models::openai_responses::{ResponsesDecoder, decode_body};

use crate::seeds::{self, Data, Seeds};
use crate::stream::{Provider, body_input, check_body, check_stream, stream_input};

const TAGS: &[&str] = &[
    "response.created",
    "response.output_text.delta",
    "response.output_text.done",
    "response.output_item.added",
    "response.output_item.done",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
];

static VOCAB: Vocab = Vocab {
    keys: &[
        "type",
        "output_index",
        "delta",
        "arguments",
        "text",
        "item",
        "response",
        "code",
        "message",
        "status",
        "usage",
        "incomplete_details",
        "reason",
        "error",
        "input_tokens",
        "output_tokens",
        "input_tokens_details",
        "cached_tokens",
        "call_id",
        "name",
        "content",
        "output",
        "encrypted_content",
        "summary",
    ],
    strings: &[
        "function_call",
        "reasoning",
        "message",
        "output_text",
        "incomplete",
        "completed",
        "failed",
        "max_output_tokens",
        "content_filter",
        "server_error",
        "{",
        "{\"a\":",
        "1}",
    ],
};

static SEEDS: LazyLock<Seeds> = LazyLock::new(|| seeds::load("openai_responses"));

static PROVIDER: Provider = Provider {
    vocab: &VOCAB,
    tag_key: "type",
    tags: TAGS,
    terminal: || {
        (
            Some("response.completed".into()),
            Data::Json(json!({"type": "response.completed", "response": {"status": "completed"}})),
        )
    },
    seeds: &SEEDS,
};

proptest! {
    #![proptest_config(weft_fuzz::config(weft_fuzz::DEFAULT_CASES))]

    #[test]
    fn openai_responses_stream(input in stream_input(&PROVIDER), cuts in cuts()) {
        check_stream(ResponsesDecoder::default, &input, &cuts)?;
    }

    #[test]
    fn openai_responses_body(input in body_input(&PROVIDER)) {
        check_body(decode_body, &input)?;
    }
}
