//! Every recorded stream and body decoded over HTTP, the headers and paths
//! each API is sent, and an error event in the middle of a stream.

use super::*;

#[tokio::test]
async fn every_stream_fixture_decodes_over_http_split_mid_line() {
    let cases: &[(&str, &str, Api, &[&str])] = &[
        (
            "anthropic/claude-test",
            "anthropic",
            Api::Anthropic,
            ANTHROPIC_OK,
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
        (
            "gemini/gemini-test",
            "gemini",
            Api::Gemini,
            &[
                "g1_text_stream",
                "g2_function_call_signature",
                "g4_max_tokens_thought_text_signature",
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
        (
            "gemini/gemini-test",
            "gemini",
            Api::Gemini,
            &["g3_parallel_function_calls"],
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
async fn gemini_sends_its_key_header_to_the_models_method_and_waits_its_retry_delay() {
    let bytes = fixture("gemini/g1_text_stream.sse");
    let limited = r#"{"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED",
        "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.2s"}]}}"#;
    let server = Server::start(vec![
        Reply::json(429, limited.as_bytes().to_vec()),
        Reply::sse(split(&bytes, SPLITS)),
        Reply::json(200, fixture("gemini/g3_parallel_function_calls.body.json")),
    ])
    .await;
    let c = client("gemini/gemini-test", &server);
    run(&*c).await.1.unwrap();
    c.complete(&request()).await.unwrap();
    let seen = server.seen.lock().unwrap();
    let stream = "/v1beta/models/gemini-test:streamGenerateContent?alt=sse";
    let whole = "/v1beta/models/gemini-test:generateContent";
    assert_eq!(seen.uris, [stream, stream, whole]);
    assert_eq!(seen.headers[0]["x-goog-api-key"], "sk-test-secret");
    assert!(seen.headers[0].get("authorization").is_none());
    assert!(seen.times[1] - seen.times[0] >= Duration::from_millis(200));
    assert_eq!(seen.bodies[0]["contents"][0]["role"], "user");
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
