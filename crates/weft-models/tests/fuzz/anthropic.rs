//! The Anthropic Messages targets: the stream decoder and the body decoder.

use std::sync::LazyLock;

use proptest::prelude::*;
use serde_json::json;
use weft_fuzz::json::Vocab;
use weft_fuzz::split::cuts;
use weft_models::anthropic::{AnthropicDecoder, decode_body};

use crate::seeds::{self, Data, Seeds};
use crate::stream::{Provider, body_input, check_body, check_stream, stream_input};

const TAGS: &[&str] = &[
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
    "error",
];

static VOCAB: Vocab = Vocab {
    keys: &[
        "type",
        "index",
        "message",
        "usage",
        "content_block",
        "delta",
        "error",
        "text",
        "thinking",
        "signature",
        "data",
        "id",
        "name",
        "input",
        "partial_json",
        "stop_reason",
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "content",
        "message",
    ],
    strings: &[
        "text",
        "thinking",
        "redacted_thinking",
        "tool_use",
        "text_delta",
        "input_json_delta",
        "thinking_delta",
        "signature_delta",
        "end_turn",
        "tool_use",
        "max_tokens",
        "stop_sequence",
        "refusal",
        "overloaded_error",
        "api_error",
        "message_stop",
        "{",
        "{\"a\":",
        "1}",
    ],
};

static SEEDS: LazyLock<Seeds> = LazyLock::new(|| seeds::load("anthropic"));

static PROVIDER: Provider = Provider {
    vocab: &VOCAB,
    tag_key: "type",
    tags: TAGS,
    terminal: || {
        (
            Some("message_stop".into()),
            Data::Json(json!({"type": "message_stop"})),
        )
    },
    seeds: &SEEDS,
};

proptest! {
    #![proptest_config(weft_fuzz::config(weft_fuzz::DEFAULT_CASES))]

    #[test]
    fn anthropic_stream(input in stream_input(&PROVIDER), cuts in cuts()) {
        check_stream(AnthropicDecoder::default, &input, &cuts)?;
    }

    #[test]
    fn anthropic_body(input in body_input(&PROVIDER)) {
        check_body(decode_body, &input)?;
    }
}
