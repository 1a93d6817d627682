//! The `chat` spans of a real `weft run`, received over OTLP/HTTP, checked
//! against the OpenTelemetry GenAI semantic conventions: attribute types
//! (integer token counts and `max_tokens`, a double temperature, an array
//! of strings for the finish reasons), the provider's `server.address` and
//! `server.port`, and, with message content opted in, the conventions'
//! JSON message structure naming tools by weft's names (`calc.add`, where
//! the model saw `calc__add`). No span or event carries the tracing
//! bridge's own attributes (`target`, `code.*`, `thread.*`).
//!
//! The model is the local chat completions server of the harness: it asks
//! for `calc__add`, then answers.

mod common;
#[path = "telemetry/harness.rs"]
mod harness;

use std::process::Command;

use harness::{assert_no_bridge_attributes, attr, model_server, otlp_receiver, strings, typed};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use serde_json::{Value, json};

/// `weft run` of a calculator agent on the model at `model`, exporting to
/// `otlp` with message content opted in; fails the test unless it succeeds.
async fn run_agent(model: &str, otlp: &str) {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent.toml");
    std::fs::write(
        &agent,
        "id = \"calculator\"\ninstructions = \"Add with the tools.\"\ntoolsets = [\"calc\"]\n\
         [planner]\nkind = \"model\"\nmodel = \"openai/gpt-test\"\n\
         max_tokens = 256\ntemperature = 0.2\n",
    )
    .unwrap();
    let (model, otlp) = (model.to_owned(), otlp.to_owned());
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_weft"))
            .arg("run")
            .args(["--output", "jsonl"])
            .arg(&agent)
            .arg("What is 2 + 3?")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", otlp)
            .env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
            .env("OPENAI_BASE_URL", format!("{model}/v1"))
            .env("OPENAI_API_KEY", "sk-test")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The integer attribute `key` of `span`; fails the test when it is absent
/// or of another type.
fn int(span: &Span, key: &str) -> i64 {
    match typed(span, key) {
        Some(AnyValue::IntValue(i)) => *i,
        other => panic!("{key} of {} is not an integer: {other:?}", span.name),
    }
}

/// The JSON text attribute `key` of `span`, parsed.
fn json_attr(span: &Span, key: &str) -> Value {
    let text = attr(span, key).unwrap_or_else(|| panic!("no {key} on {}", span.name));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{key} is not JSON ({e}): {text}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_spans_follow_the_genai_conventions() {
    let (otlp, received) = otlp_receiver().await;
    let (model, _) = model_server().await;
    run_agent(&model, &otlp).await;
    let spans = received.lock().unwrap().clone();
    assert_no_bridge_attributes(&spans);
    let mut chats: Vec<&Span> = spans.iter().filter(|s| s.name == "chat gpt-test").collect();
    chats.sort_by_key(|s| s.start_time_unix_nano);
    assert_eq!(chats.len(), 2, "{spans:?}");
    let port = model
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse::<i64>().ok())
        .expect("the model server's port");

    for chat in &chats {
        assert_eq!(int(chat, "gen_ai.usage.input_tokens"), 40);
        assert_eq!(int(chat, "gen_ai.usage.output_tokens"), 9);
        assert_eq!(int(chat, "gen_ai.request.max_tokens"), 256);
        assert_eq!(
            typed(chat, "gen_ai.request.temperature"),
            Some(&AnyValue::DoubleValue(0.2))
        );
        assert_eq!(
            typed(chat, "server.address"),
            Some(&AnyValue::StringValue("127.0.0.1".into()))
        );
        assert_eq!(int(chat, "server.port"), port);
        let system = json_attr(chat, "gen_ai.system_instructions");
        assert_eq!(system[0]["type"], "text", "{system}");
        assert!(
            system[0]["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("Add with the tools.")),
            "{system}"
        );
    }
    let (first, second) = (chats[0], chats[1]);
    assert_eq!(
        strings(first, "gen_ai.response.finish_reasons").as_deref(),
        Some(&["tool_calls".to_owned()][..])
    );
    assert_eq!(
        strings(second, "gen_ai.response.finish_reasons").as_deref(),
        Some(&["stop".to_owned()][..])
    );

    let asked = json!({"role": "user", "parts": [{"type": "text", "content": "What is 2 + 3?"}]});
    let call = json!({"type": "tool_call", "id": "call_1", "name": "calc.add",
        "arguments": {"a": 2, "b": 3}});
    assert_eq!(json_attr(first, "gen_ai.input.messages"), json!([asked]));
    assert_eq!(
        json_attr(first, "gen_ai.output.messages"),
        json!([{"role": "assistant", "parts": [call], "finish_reason": "tool_calls"}])
    );

    let input = json_attr(second, "gen_ai.input.messages");
    let messages = input.as_array().expect("an array of messages");
    assert_eq!(messages.len(), 3, "{input}");
    assert_eq!(messages[0], asked);
    assert_eq!(messages[1], json!({"role": "assistant", "parts": [call]}));
    assert_eq!(messages[2]["role"], "tool", "{input}");
    let result = &messages[2]["parts"][0];
    assert_eq!(result["type"], "tool_call_response", "{input}");
    assert_eq!(result["id"], "call_1", "{input}");
    assert!(result["response"].to_string().contains('5'), "{input}");
    assert_eq!(
        json_attr(second, "gen_ai.output.messages"),
        json!([{"role": "assistant", "parts": [{"type": "text", "content": "2 + 3 = 5"}],
            "finish_reason": "stop"}])
    );

    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool calc.add")
        .expect("the tool span");
    assert_eq!(
        typed(tool, "gen_ai.tool.name"),
        Some(&AnyValue::StringValue("calc.add".into()))
    );
}
