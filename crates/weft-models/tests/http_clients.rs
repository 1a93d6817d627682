//! The provider clients against local HTTP servers that replay the recorded
//! wire bytes, split mid-line: decoding, retries, timeouts and typed errors.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Api, Reply, Server, check_summary, expected, fixture, split, streamed_text};
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
        "ANTHROPIC_API_KEY" | "OPENAI_API_KEY" => Some("sk-test-secret".to_owned()),
        "ANTHROPIC_BASE_URL" => Some(url.clone()),
        "OPENAI_BASE_URL" => Some(format!("{url}/v1")),
        _ => None,
    };
    let mut config = ModelConfig::new(id);
    config.http = fast_http();
    if id.starts_with("compat/") {
        config.base_url = Some(format!("{}/v1", server.url()));
    }
    build_model_with_env(&config, &env).unwrap()
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

#[tokio::test]
async fn every_stream_fixture_decodes_over_http_split_mid_line() {
    let cases: &[(&str, &str, Api, &[&str])] = &[
        (
            "anthropic/claude-test",
            "anthropic",
            Api::Anthropic,
            &[
                "a1_text_basic",
                "a2_tool_use_sdk",
                "a3_tool_use_docs",
                "a4_thinking_tool_use_captured",
                "a5_thinking_docs",
                "a6_tool_use_truncated_max_tokens",
            ],
        ),
        (
            "openai/gpt-test",
            "openai_chat",
            Api::Chat,
            &["c1_text_include_usage", "c2_parallel_tool_calls"],
        ),
        (
            "compat/local-test",
            "openai_chat",
            Api::Chat,
            &["c1_text_include_usage", "c2_parallel_tool_calls"],
        ),
        (
            "openai-responses/gpt-test",
            "openai_responses",
            Api::Responses,
            &[
                "r1_text",
                "r2_function_call",
                "r3_reasoning_summary_function_call",
            ],
        ),
    ];
    for (id, dir, api, names) in cases {
        for name in *names {
            let bytes = fixture(&format!("{dir}/{name}.sse"));
            let server = Server::start(vec![Reply::sse(split(&bytes, SPLITS))]).await;
            let (_, res) = run(&*client(id, &server)).await;
            let summary = res.unwrap_or_else(|e| panic!("{id} {name}: {e}"));
            check_summary(
                *api,
                &summary,
                &expected(&format!("{dir}/{name}.expected.json")),
            );
        }
    }
}

#[tokio::test]
async fn every_body_fixture_decodes_over_http() {
    let cases: &[(&str, &str, Api, &[&str])] = &[
        (
            "anthropic/claude-test",
            "anthropic",
            Api::Anthropic,
            &[
                "a9_nonstream_tool_use",
                "a10_nonstream_parallel_tool_use_sdk",
            ],
        ),
        (
            "openai/gpt-test",
            "openai_chat",
            Api::Chat,
            &[
                "c3_nonstream_tool_call",
                "c4_nonstream_parallel_tool_calls_sdk",
            ],
        ),
        (
            "openai-responses/gpt-test",
            "openai_responses",
            Api::Responses,
            &["r4_nonstream_function_call"],
        ),
    ];
    for (id, dir, api, names) in cases {
        for name in *names {
            let body = fixture(&format!("{dir}/{name}.body.json"));
            let server = Server::start(vec![Reply::json(200, body)]).await;
            let summary = client(id, &server).complete(&request()).await.unwrap();
            check_summary(
                *api,
                &summary,
                &expected(&format!("{dir}/{name}.expected.json")),
            );
        }
    }
}

#[tokio::test]
async fn request_carries_auth_headers_and_paths() {
    let bytes = fixture("anthropic/a1_text_basic.sse");
    let server = Server::start(vec![Reply::sse(split(&bytes, SPLITS))]).await;
    let c = client("anthropic/claude-test", &server);
    run(&*c).await.1.unwrap();
    {
        let seen = server.seen.lock().unwrap();
        assert_eq!(seen.headers[0]["x-api-key"], "sk-test-secret");
        assert_eq!(seen.headers[0]["anthropic-version"], "2023-06-01");
        assert_eq!(seen.bodies[0]["stream"], true);
    }

    let bytes = fixture("openai_chat/c1_text_include_usage.sse");
    let server = Server::start(vec![Reply::sse(split(&bytes, SPLITS))]).await;
    run(&*client("openai/gpt-test", &server)).await.1.unwrap();
    let seen = server.seen.lock().unwrap();
    assert_eq!(seen.headers[0]["authorization"], "Bearer sk-test-secret");
    assert_eq!(seen.bodies[0]["stream_options"]["include_usage"], true);
}

#[tokio::test]
async fn midstream_error_event_is_a_typed_retryable_error_after_partial_text() {
    let bytes = fixture("anthropic/a7_error_midstream_overloaded_docs.sse");
    let server = Server::start(vec![Reply::sse(split(&bytes, SPLITS))]).await;
    let (chunks, res) = run(&*client("anthropic/claude-test", &server)).await;
    let err = res.unwrap_err();
    assert_eq!(
        err,
        ModelError::Stream {
            error_type: "overloaded_error".into(),
            message: "Overloaded".into(),
            retryable: true
        }
    );
    assert!(err.is_retryable());
    let text = streamed_text(&chunks);
    assert_eq!(text, "Hello there");
}

#[tokio::test]
async fn rate_limit_with_retry_after_waits_then_succeeds() {
    let ok = fixture("anthropic/a1_text_basic.sse");
    let server = Server::start(vec![
        Reply::json(429, fixture("errors/e4_anthropic_429_rate_limit.body.json"))
            .header("retry-after", "1")
            .header("x-should-retry", "true"),
        Reply::sse(split(&ok, SPLITS)),
    ])
    .await;
    let start = Instant::now();
    let summary = run(&*client("anthropic/claude-test", &server))
        .await
        .1
        .unwrap();
    assert_eq!(summary.text, "Hello there!");
    let seen = server.seen.lock().unwrap();
    assert_eq!(seen.times.len(), 2);
    assert!(
        seen.times[1] - seen.times[0] >= Duration::from_secs(1),
        "waited for retry-after"
    );
    assert!(start.elapsed() >= Duration::from_secs(1));
}

#[tokio::test]
async fn rate_limit_error_is_typed_when_retries_run_out() {
    let body = fixture("errors/e4_anthropic_429_rate_limit.body.json");
    let replies = (0..3)
        .map(|_| Reply::json(429, body.clone()).header("retry-after-ms", "20"))
        .collect();
    let server = Server::start(replies).await;
    let err = run(&*client("anthropic/claude-test", &server))
        .await
        .1
        .unwrap_err();
    assert_eq!(
        err,
        ModelError::Http {
            status: 429,
            error_type: Some("rate_limit_error".into()),
            message: "This request would exceed your account's rate limit. Please try again later."
                .into(),
            retryable: true,
            retry_after: Some(Duration::from_millis(20)),
        }
    );
    assert_eq!(
        server.seen.lock().unwrap().times.len(),
        3,
        "one try and two retries"
    );
}

#[tokio::test]
async fn server_errors_then_success_are_retried() {
    let ok = fixture("anthropic/a1_text_basic.sse");
    let server = Server::start(vec![
        Reply::json(500, fixture("errors/e3_anthropic_500_api_error.body.json")),
        Reply::json(529, fixture("errors/e1_anthropic_529_overloaded.body.json"))
            .header("x-should-retry", "true"),
        Reply::sse(split(&ok, SPLITS)),
    ])
    .await;
    let summary = run(&*client("anthropic/claude-test", &server))
        .await
        .1
        .unwrap();
    assert_eq!(summary.text, "Hello there!");
    assert_eq!(server.seen.lock().unwrap().times.len(), 3);

    let ok = fixture("openai_chat/c1_text_include_usage.sse");
    let server = Server::start(vec![
        Reply::json(500, fixture("errors/e7_openai_500_server_error.body.json")),
        Reply::json(
            429,
            fixture("errors/e5_openai_429_rate_limit_tokens.body.json"),
        )
        .header("retry-after-ms", "6"),
        Reply::sse(split(&ok, SPLITS)),
    ])
    .await;
    let summary = run(&*client("openai/gpt-test", &server)).await.1.unwrap();
    assert_eq!(summary.usage.output_tokens, 30);
    assert_eq!(server.seen.lock().unwrap().times.len(), 3);
}

#[tokio::test]
async fn insufficient_quota_429_is_not_retried() {
    let server = Server::start(vec![Reply::json(
        429,
        fixture("errors/e6_openai_429_insufficient_quota.body.json"),
    )])
    .await;
    let err = run(&*client("openai/gpt-test", &server))
        .await
        .1
        .unwrap_err();
    match &err {
        ModelError::Http {
            status: 429,
            error_type: Some(t),
            retryable: false,
            retry_after: None,
            ..
        } if t == "insufficient_quota" => {}
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(server.seen.lock().unwrap().times.len(), 1);
}

#[tokio::test]
async fn connection_reset_mid_stream_is_truncated() {
    let bytes = fixture("anthropic/a3_tool_use_docs.sse");
    let mut reply = Reply::sse(split(&bytes[..bytes.len() / 2], SPLITS));
    reply.reset = true;
    let server = Server::start(vec![reply]).await;
    let (chunks, res) = run(&*client("anthropic/claude-test", &server)).await;
    assert!(!chunks.is_empty(), "partial output was streamed");
    match res {
        Err(ModelError::Truncated { .. }) => {}
        other => panic!("expected Truncated, got {other:?}"),
    }
}

#[tokio::test]
async fn clean_close_before_terminal_event_is_truncated() {
    let bytes = fixture("openai_responses/r1_text.sse");
    let server = Server::start(vec![Reply::sse(split(&bytes[..bytes.len() - 200], SPLITS))]).await;
    let res = run(&*client("openai-responses/gpt-test", &server)).await.1;
    assert_eq!(
        res,
        Err(ModelError::Truncated {
            message: "the stream ended mid-event, before `response.completed`".into()
        })
    );
    // Cut between two events: the last complete event is not the terminal one.
    let text = String::from_utf8(bytes).unwrap();
    let cut = &text[..text.find("event: response.completed").unwrap()];
    let server = Server::start(vec![Reply::sse(split(cut.as_bytes(), SPLITS))]).await;
    let res = run(&*client("openai-responses/gpt-test", &server)).await.1;
    assert_eq!(
        res,
        Err(ModelError::Truncated {
            message: "the stream ended before `response.completed`".into()
        })
    );
}

#[tokio::test]
async fn malformed_data_line_over_http_is_a_typed_error() {
    let body = b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {not json}\n\ndata: [DONE]\n\n";
    let server = Server::start(vec![Reply::sse(split(body, &[5]))]).await;
    let (chunks, res) = run(&*client("openai/gpt-test", &server)).await;
    assert_eq!(chunks, vec![StreamChunk::TextDelta { text: "a".into() }]);
    match res {
        Err(ModelError::Malformed { line, .. }) => assert_eq!(line, "{not json}"),
        other => panic!("expected Malformed, got {other:?}"),
    }
}

#[tokio::test]
async fn idle_timeout_between_chunks() {
    let bytes = fixture("anthropic/a1_text_basic.sse");
    let mut reply = Reply::sse(split(&bytes, &[200]));
    reply.stall = Some(Duration::from_millis(800));
    let server = Server::start(vec![reply]).await;
    let mut config = ModelConfig::new("anthropic/claude-test");
    config.api_key = Some(ApiKey::new("k"));
    config.base_url = Some(server.url());
    config.http = fast_http();
    config.http.timeouts.idle = Duration::from_millis(200);
    let c = weft_models::build_model(&config).unwrap();
    let res = run(&*c).await.1;
    assert_eq!(
        res,
        Err(ModelError::Timeout {
            phase: "idle".into(),
            after: Duration::from_millis(200)
        })
    );
}

#[tokio::test]
async fn connection_refused_is_a_retryable_connection_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let mut config = ModelConfig::new("openai/gpt-test");
    config.api_key = Some(ApiKey::new("k"));
    config.base_url = Some(format!("http://{addr}/v1"));
    config.http = fast_http();
    let err = weft_models::build_model(&config)
        .unwrap()
        .complete(&request())
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Connection { .. }), "{err:?}");
    assert!(err.is_retryable());
}

#[test]
fn keys_never_show_in_debug_output_or_errors() {
    let key = ApiKey::new("sk-very-secret");
    let client =
        weft_models::anthropic::AnthropicClient::new("m", &key, "http://127.0.0.1:1", fast_http())
            .unwrap();
    let debug = format!("{client:?} {key:?} {key}");
    assert!(!debug.contains("sk-very-secret"), "{debug}");
    let config = ModelConfig {
        api_key: Some(key),
        ..ModelConfig::new("anthropic/m")
    };
    assert!(!format!("{config:?}").contains("sk-very-secret"));
}

#[test]
fn missing_key_names_the_variable() {
    let none = |_: &str| None;
    for (id, var) in [
        ("anthropic/m", "ANTHROPIC_API_KEY"),
        ("openai/m", "OPENAI_API_KEY"),
        ("openai-responses/m", "OPENAI_API_KEY"),
    ] {
        match build_model_with_env(&ModelConfig::new(id), &none) {
            Err(ModelError::Config { message }) => assert!(message.contains(var), "{message}"),
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("built {id} without a key"),
        }
    }
    match build_model_with_env(&ModelConfig::new("compat/llama"), &none) {
        Err(ModelError::Config { message }) => assert!(message.contains("base URL"), "{message}"),
        _ => panic!("compat needs a base URL"),
    }
    assert!(matches!(
        build_model_with_env(&ModelConfig::new("mystery/m"), &none),
        Err(ModelError::Config { .. })
    ));
}

#[tokio::test]
async fn first_byte_timeout_is_typed_and_retried() {
    let ok = fixture("anthropic/a1_text_basic.sse");
    let mut slow = Reply::sse(split(&ok, SPLITS));
    slow.delay = Some(Duration::from_millis(600));
    let server = Server::start(vec![slow, Reply::sse(split(&ok, SPLITS))]).await;
    let mut config = ModelConfig::new("anthropic/claude-test");
    config.api_key = Some(ApiKey::new("k"));
    config.base_url = Some(server.url());
    config.http = fast_http();
    config.http.timeouts.first_byte = Duration::from_millis(200);
    let c = weft_models::build_model(&config).unwrap();
    // The first attempt times out waiting for headers; the retry succeeds.
    assert_eq!(run(&*c).await.1.unwrap().text, "Hello there!");
    assert_eq!(server.seen.lock().unwrap().times.len(), 2);

    let mut slow = Reply::sse(split(&ok, SPLITS));
    slow.delay = Some(Duration::from_millis(600));
    let server = Server::start(vec![slow]).await;
    config.base_url = Some(server.url());
    config.http.retry.max_retries = 0;
    let c = weft_models::build_model(&config).unwrap();
    assert_eq!(
        run(&*c).await.1,
        Err(ModelError::Timeout {
            phase: "first byte".into(),
            after: Duration::from_millis(200)
        })
    );
}
