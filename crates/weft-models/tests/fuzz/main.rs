//! Fuzz targets of the response decoders, as property tests over arbitrary
//! and structured bytes (see the `weft-fuzz` crate for the generators):
//!
//! - `sse`: the SSE line and event parser, against a reference model.
//! - `anthropic`, `openai_chat`, `openai_responses`, `gemini`: each provider's stream
//!   decoder (SSE framing included) and its whole-body decoder.
//! - `bedrock`: the `ConverseStream` decoder (binary event stream framing
//!   included) and the `Converse` body decoder.
//!
//! Every target checks that decoding never panics and fails only with a
//! typed error; the stream targets also check that any chunking of the
//! bytes decodes exactly as the whole input does. Each crash found is a
//! named regression test beside its target.
//!
//! `WEFT_FUZZ_CASES=10000000 cargo test --release -p weft-models --test fuzz`
//! runs each target ten million times.

#[path = "../common/mod.rs"]
mod common;
mod seeds;
mod stream;

mod anthropic;
mod bedrock;
mod gemini;
mod openai_chat;
mod openai_responses;
mod sse;
