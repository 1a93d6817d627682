//! The Chat Completions targets: the stream decoder (strict about
//! `[DONE]`, and lenient as for compatible servers) and the body decoder.

use std::sync::LazyLock;

use proptest::prelude::*;
use weft_fuzz::json::Vocab;
use weft_fuzz::split::cuts;
use weft_models::openai_chat::{ChatDecoder, decode_body};

use crate::seeds::{self, Data, Seeds};
use crate::stream::{Provider, body_input, check_body, check_stream, stream_input};

const TAGS: &[&str] = &["chat.completion.chunk", "chat.completion"];

static VOCAB: Vocab = Vocab {
    keys: &[
        "choices",
        "delta",
        "message",
        "finish_reason",
        "content",
        "refusal",
        "tool_calls",
        "index",
        "id",
        "function",
        "name",
        "arguments",
        "usage",
        "prompt_tokens",
        "completion_tokens",
        "prompt_tokens_details",
        "cached_tokens",
        "error",
        "type",
        "code",
        "message",
    ],
    strings: &[
        "stop",
        "tool_calls",
        "function_call",
        "length",
        "content_filter",
        "server_error",
        "rate_limit_exceeded",
        "assistant",
        "function",
        "{",
        "{\"a\":",
        "1}",
        "[DONE]",
    ],
};

static SEEDS: LazyLock<Seeds> = LazyLock::new(|| seeds::load("openai_chat"));

static PROVIDER: Provider = Provider {
    vocab: &VOCAB,
    tag_key: "object",
    tags: TAGS,
    terminal: || (None, Data::Raw("[DONE]".into())),
    seeds: &SEEDS,
};

proptest! {
    #![proptest_config(weft_fuzz::config(weft_fuzz::DEFAULT_CASES))]

    #[test]
    fn openai_chat_stream(input in stream_input(&PROVIDER), cuts in cuts(), lenient in any::<bool>()) {
        let new = if lenient { || ChatDecoder::new(true) } else { || ChatDecoder::new(false) };
        check_stream(new, &input, &cuts)?;
    }

    #[test]
    fn openai_chat_body(input in body_input(&PROVIDER)) {
        check_body(decode_body, &input)?;
    }
}
