//! weft-models: model clients for weft and the model planner.
//!
//! Organization:
//! - [`sse`]: the incremental Server-Sent Events decoder.
//! - [`decode`]: the provider decoder contract and the bytes-to-chunks driver.
//! - [`anthropic`], [`openai_chat`], [`openai_responses`], [`gemini`]: one module per API,
//!   each with its request builder, its stream/body decoder and its [`WireApi`];
//!   [`bedrock`], Bedrock Converse, with its own client (SigV4 signing, AWS
//!   credentials, the binary event stream framing).
//! - [`client`]: [`HttpModelClient`], the client skeleton the APIs fill in
//!   through [`WireApi`].
//! - [`http`]: the shared transport (retries, timeouts, error mapping).
//! - [`config`]: model ids, keys, base URLs and the [`ModelRegistry`].
//! - [`planner`]: the [`ModelPlanner`], weft's default planner over any model.
//! - [`price`]: model prices (configured, or built-in list prices of
//!   well-known models) and the cost of a call's usage.
//! - [`names`]: reversible tool-name mapping (`toolset.tool` ⇄ provider names).
//! - [`rules`]: the request rules providers enforce, kept by every builder.
//! - [`scripted`]: the [`ScriptedModel`] for tests, examples and benchmarks.
//! - `trace`: the `chat {model}` span of each model call (OpenTelemetry GenAI
//!   conventions) and the W3C trace context on provider requests.
//!
//! Local GGUF models (`local/...`) live in the `weft-local` crate, which
//! builds llama.cpp; [`ModelConfig::local_loader`] plugs them in.
//!
//! Every client implements [`weft_core::model::ModelClient`]; this crate
//! depends on `weft-core` alone among weft crates.

#![warn(missing_docs)]

pub mod anthropic;
pub mod bedrock;
pub mod client;
pub mod config;
pub mod decode;
pub mod gemini;
pub mod http;
mod key;
pub mod names;
pub mod openai_chat;
pub mod openai_responses;
pub mod planner;
pub mod price;
pub mod recorded;
pub mod rules;
pub mod scripted;
pub mod sse;
mod trace;
mod util;

pub use client::{HttpModelClient, WireApi};
pub use config::{
    ApiKey, LocalLoader, ModelConfig, ModelRegistry, Provider, build_model, build_model_with_env,
    parse_model_id,
};
pub use http::{HttpConfig, RetryPolicy, Timeouts};
pub use planner::{
    ASK_TOOL, DEFAULT_SYSTEM_TEMPLATE, ModelPlanner, ModelPlannerConfig, SYSTEM_PROMPT, Streaming,
};
pub use price::{ModelPrice, Pricing};
pub use recorded::RecordedModel;
pub use scripted::{ScriptCall, ScriptError, ScriptTurn, ScriptedModel};
