//! The provider clients against local HTTP servers that replay the recorded
//! wire bytes, split mid-line: decoding, retries, timeouts and typed errors.

#[path = "../common/mod.rs"]
mod common;
mod errors;
mod wire;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{
    ANTHROPIC_OK, Api, Reply, Server, check_summary, expected, fixture, split, streamed_text,
};
use futures_util::StreamExt;
use weft_core::message::Message;
use weft_core::model::{
    ModelClient, ModelError, ModelRequest, ModelSummary, StreamAssembler, StreamChunk,
};
use weft_core::planner::NoopEvents;
use weft_models::{ApiKey, HttpConfig, ModelConfig, RetryPolicy, Timeouts, build_model_with_env};

const SPLITS: &[usize] = &[1, 7, 2, 64, 3, 33];

fn fast_http() -> HttpConfig {
    HttpConfig {
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            first_byte: Duration::from_secs(5),
            idle: Duration::from_secs(5),
        },
        retry: RetryPolicy {
            max_retries: 2,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(50),
            max_retry_after: Duration::from_secs(5),
        },
    }
}

/// A client for `id` pointed at `server`, with the key from a fake environment.
fn client(id: &str, server: &Server) -> Arc<dyn ModelClient> {
    let url = server.url();
    let env = move |name: &str| match name {
        "ANTHROPIC_API_KEY" | "OPENAI_API_KEY" | "GEMINI_API_KEY" => {
            Some("sk-test-secret".to_owned())
        }
        "ANTHROPIC_BASE_URL" => Some(url.clone()),
        "OPENAI_BASE_URL" => Some(format!("{url}/v1")),
        "GEMINI_BASE_URL" => Some(format!("{url}/v1beta")),
        _ => None,
    };
    let mut config = ModelConfig::new(id);
    config.http = fast_http();
    if id.starts_with("compat/") {
        config.base_url = Some(format!("{}/v1", server.url()));
    }
    build_model_with_env(&config, &env).unwrap()
}

/// An Anthropic client at `server`, with [`fast_http`] changed by `tune`.
fn anthropic_at(server: &Server, tune: impl FnOnce(&mut HttpConfig)) -> Arc<dyn ModelClient> {
    let mut config = ModelConfig::new("anthropic/claude-test");
    config.api_key = Some(ApiKey::new("k"));
    config.base_url = Some(server.url());
    config.http = fast_http();
    tune(&mut config.http);
    weft_models::build_model(&config).unwrap()
}

fn request() -> ModelRequest {
    ModelRequest {
        messages: vec![Message::user("hi")],
        ..ModelRequest::default()
    }
}

/// Streams `client` to the end: the chunks before any error, and the summary or error.
async fn run(client: &dyn ModelClient) -> (Vec<StreamChunk>, Result<ModelSummary, ModelError>) {
    let mut stream = match client.stream(&request()).await {
        Ok(s) => s,
        Err(e) => return (Vec::new(), Err(e)),
    };
    let mut chunks = Vec::new();
    let mut asm = StreamAssembler::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(c) => {
                chunks.push(c.clone());
                asm.push(c, &NoopEvents).unwrap();
            }
            Err(e) => return (chunks, Err(e)),
        }
    }
    (chunks, Ok(asm.finish(&NoopEvents)))
}
