//! Whole answers: a server that refuses streamed requests with tools (as
//! llama.cpp's OpenAI-compatible server does) is asked again without
//! streaming, and from then on directly; `Streaming::Never` never streams;
//! an answer without usage is counted by estimate.

use serde_json::json;
use weft_models::{ModelPlanner, ModelPlannerConfig, Streaming};

use crate::common::{Reply, Server, fixture};
use crate::harness::{answer, http_model, logged};

fn refused() -> Reply {
    Reply::json(
        400,
        serde_json::to_vec(&json!({"error": {
            "code": 400,
            "message": "Cannot use tools with stream",
            "type": "invalid_request_error"
        }}))
        .unwrap(),
    )
}

/// A whole text answer without usage, as some compatible servers send.
fn text_without_usage(text: &str) -> Reply {
    Reply::json(
        200,
        serde_json::to_vec(&json!({
            "id": "chatcmpl-local",
            "object": "chat.completion",
            "model": "local",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}]
        }))
        .unwrap(),
    )
}

fn planner(server: &Server, streaming: Streaming) -> ModelPlanner {
    ModelPlanner::new(
        http_model("openai/gpt-4o-mini", server),
        ModelPlannerConfig {
            instruction: "You are a test agent.".into(),
            streaming,
            ..ModelPlannerConfig::default()
        },
    )
}

#[tokio::test]
async fn a_server_that_cannot_stream_tool_calls_gets_whole_requests() {
    let server = Server::start(vec![
        refused(),
        Reply::json(200, fixture("openai_chat/c3_nonstream_tool_call.body.json")),
        text_without_usage("Sunny in Florence."),
    ])
    .await;
    let run = answer(
        &planner(&server, Streaming::Auto),
        &["weather"],
        "Weather in Florence?",
    )
    .await;
    assert_eq!(run.text, "Sunny in Florence.");
    let entries = &run.entries;
    assert!(logged(entries, "tool_start:weather"), "{entries:?}");
    assert!(
        logged(
            entries,
            "args:call_15X0Q2MmkK1IeFfiol9LFlqb:weather:{\"location\":\"Florence, Italy\"}"
        ),
        "{entries:?}"
    );
    // The whole answer's own usage, then an estimate for the one without.
    assert!(logged(entries, "usage:61/16"), "{entries:?}");
    let last = entries
        .iter()
        .rev()
        .find(|e| e.starts_with("usage:"))
        .unwrap();
    let (input, output) = last["usage:".len()..].split_once('/').unwrap();
    let (input, output): (u64, u64) = (input.parse().unwrap(), output.parse().unwrap());
    assert!(
        input > 10 && output == "Sunny in Florence.".len().div_ceil(4) as u64,
        "{last}"
    );
    assert_eq!(run.machine.tool_outputs().len(), 1);

    let seen = server.seen.lock().unwrap();
    assert_eq!(seen.bodies.len(), 3);
    assert_eq!(seen.bodies[0]["stream"], true);
    // Asked again whole, and the next turn (with tools) whole at once.
    for body in &seen.bodies[1..] {
        assert_ne!(body["stream"], true, "{body}");
        assert!(body["tools"].is_array(), "{body}");
    }
}

#[tokio::test]
async fn never_streaming_asks_for_whole_answers_only() {
    let server = Server::start(vec![text_without_usage("Hello.")]).await;
    let run = answer(&planner(&server, Streaming::Never), &["weather"], "Hi").await;
    assert_eq!(run.text, "Hello.");
    assert!(logged(&run.entries, "text:Hello."), "{:?}", run.entries);
    let seen = server.seen.lock().unwrap();
    assert_ne!(seen.bodies[0]["stream"], true);
}

#[tokio::test]
async fn always_streaming_reports_the_refusal() {
    let server = Server::start(vec![refused()]).await;
    let planner = planner(&server, Streaming::Always);
    let failed = tokio::spawn(async move { answer(&planner, &["weather"], "Hi").await });
    // The harness panics on a run that did not answer: the refusal ended it.
    assert!(failed.await.is_err());
    assert_eq!(server.seen.lock().unwrap().bodies.len(), 1);
}
