//! Failures over HTTP: rate limits and retries, quota errors, cut and
//! stalled connections, malformed lines, timeouts, and keys that never
//! show in output or errors.

use super::*;

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
    let c = anthropic_at(&server, |http| {
        http.timeouts.idle = Duration::from_millis(200)
    });
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
    // The message names where the request went and why it failed.
    let message = err.to_string();
    assert!(
        message.contains(&format!("POST http://{addr}/v1/chat/completions")),
        "{message}"
    );
    assert!(message.contains("refused"), "{message}");
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
    let named = ModelConfig {
        api_key_env: Some("TEAM_KEY".into()),
        ..ModelConfig::new("anthropic/m")
    };
    match build_model_with_env(&named, &none) {
        Err(ModelError::Config { message }) => {
            assert!(
                message.contains("`api_key_env` names TEAM_KEY"),
                "{message}"
            )
        }
        _ => panic!("built anthropic/m without its named key"),
    }
    let team = |v: &str| (v == "TEAM_KEY").then(|| "sk-team".to_owned());
    assert!(build_model_with_env(&named, &team).is_ok());
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
    let c = anthropic_at(&server, |http| {
        http.timeouts.first_byte = Duration::from_millis(200)
    });
    // The first attempt times out waiting for headers; the retry succeeds.
    assert_eq!(run(&*c).await.1.unwrap().text, "Hello there!");
    assert_eq!(server.seen.lock().unwrap().times.len(), 2);

    let mut slow = Reply::sse(split(&ok, SPLITS));
    slow.delay = Some(Duration::from_millis(600));
    let server = Server::start(vec![slow]).await;
    let c = anthropic_at(&server, |http| {
        http.timeouts.first_byte = Duration::from_millis(200);
        http.retry.max_retries = 0;
    });
    assert_eq!(
        run(&*c).await.1,
        Err(ModelError::Timeout {
            phase: "first byte".into(),
            after: Duration::from_millis(200)
        })
    );
}

#[tokio::test]
async fn the_api_key_never_follows_a_redirect_to_another_origin() {
    let ok = fixture("anthropic/a1_text_basic.sse");
    let elsewhere = Server::start(vec![Reply::sse(split(&ok, SPLITS))]).await;
    let redirect = Reply::json(307, Vec::new()).header(
        "location",
        &format!("http://{}/v1/messages", elsewhere.addr),
    );
    let server = Server::start(vec![redirect]).await;
    let err = run(&*client("anthropic/claude-test", &server))
        .await
        .1
        .unwrap_err();
    assert!(
        matches!(err, ModelError::Http { status: 307, .. }),
        "{err:?}"
    );
    assert!(elsewhere.seen.lock().unwrap().headers.is_empty());
}

#[tokio::test]
async fn a_redirect_within_the_origin_is_followed() {
    let ok = fixture("anthropic/a1_text_basic.sse");
    let server = Server::start(vec![
        Reply::json(307, Vec::new()).header("location", "/v1/messages?moved=1"),
        Reply::sse(split(&ok, SPLITS)),
    ])
    .await;
    let summary = run(&*client("anthropic/claude-test", &server))
        .await
        .1
        .unwrap();
    assert_eq!(summary.text, "Hello there!");
    let seen = server.seen.lock().unwrap();
    assert_eq!(seen.headers.len(), 2);
    assert!(seen.headers[1].contains_key("x-api-key"));
}
