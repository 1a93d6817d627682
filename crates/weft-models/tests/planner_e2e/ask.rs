//! The model asks the user: with `ask_tool`, the model is offered
//! `ask_user`; a call of it makes the turn a clarification the run waits
//! for, and the next request carries the question and the user's answer as
//! plain conversation (no dangling tool call). With options, the call is a
//! multiple-choice question and the choice is the call's result.

use serde_json::json;
use weft_models::{ASK_TOOL, ModelPlanner, ModelPlannerConfig, Streaming};

use crate::common::{Reply, Server};
use crate::harness::{answer, http_model, logged};

fn whole(message: serde_json::Value) -> Reply {
    Reply::json(
        200,
        serde_json::to_vec(&json!({
            "id": "chatcmpl-ask",
            "object": "chat.completion",
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}
        }))
        .unwrap(),
    )
}

fn planner(server: &Server, ask_tool: bool) -> ModelPlanner {
    ModelPlanner::new(
        http_model("openai/gpt-4o-mini", server),
        ModelPlannerConfig {
            instruction: "You are a test agent.".into(),
            streaming: Streaming::Never,
            ask_tool,
            ..ModelPlannerConfig::default()
        },
    )
}

#[tokio::test]
async fn the_model_asks_the_user_and_gets_the_answer_as_conversation() {
    let server = Server::start(vec![
        whole(
            json!({"role": "assistant", "content": "Let me check.", "tool_calls": [{
            "id": "call_ask", "type": "function",
            "function": {"name": ASK_TOOL, "arguments": "{\"question\": \"Which city?\"}"}}]}),
        ),
        whole(json!({"role": "assistant", "content": "Oslo is sunny."})),
    ])
    .await;
    let run = answer(
        &planner(&server, true),
        &["weather"],
        "What is the weather?",
    )
    .await;
    assert_eq!(run.text, "Oslo is sunny.");
    assert!(
        logged(&run.entries, "asked:Which city?"),
        "{:?}",
        run.entries
    );
    assert_eq!(run.machine.tool_outputs().len(), 0, "no tool ran");

    let seen = server.seen.lock().unwrap();
    let offered: Vec<&str> = seen.bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["weather", ASK_TOOL]);
    let next = seen.bodies[1]["messages"].to_string();
    assert!(next.contains("Which city?"), "{next}");
    assert!(next.contains("\"Oslo\""), "{next}");
    assert!(!next.contains(ASK_TOOL), "no dangling ask call: {next}");
}

#[tokio::test]
async fn the_model_offers_options_and_gets_the_choice_as_the_calls_result() {
    let server = Server::start(vec![
        whole(json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": "call_pick", "type": "function",
            "function": {"name": ASK_TOOL,
                         "arguments": "{\"question\": \"Which city?\", \"options\": [\"Oslo\", \"Bergen\"]}"}}]})),
        whole(json!({"role": "assistant", "content": "Oslo is sunny."})),
    ])
    .await;
    let run = answer(&planner(&server, true), &["weather"], "Weather?").await;
    assert_eq!(run.text, "Oslo is sunny.");
    assert!(
        logged(&run.entries, "chose:Which city?"),
        "{:?}",
        run.entries
    );
    // The choice is the ask call's result, recorded like a tool output.
    let outputs = run.machine.tool_outputs();
    assert_eq!(outputs.len(), 1);
    assert_eq!(outputs[0].tool_call_id.as_str(), "call_pick");

    let seen = server.seen.lock().unwrap();
    let messages = seen.bodies[1]["messages"].as_array().unwrap();
    let call = messages
        .iter()
        .find(|m| m["tool_calls"].is_array())
        .expect("the ask call is in the conversation");
    assert_eq!(call["tool_calls"][0]["id"], "call_pick");
    assert_eq!(call["tool_calls"][0]["function"]["name"], ASK_TOOL);
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("its result follows");
    assert_eq!(result["tool_call_id"], "call_pick");
    let content = result["content"].to_string();
    assert!(
        content.contains("choice") && content.contains("Oslo"),
        "{content}"
    );
}

#[tokio::test]
async fn without_ask_tool_the_model_is_not_offered_it() {
    let server = Server::start(vec![whole(json!({"role": "assistant", "content": "Hi."}))]).await;
    let run = answer(&planner(&server, false), &["weather"], "Hello").await;
    assert_eq!(run.text, "Hi.");
    let seen = server.seen.lock().unwrap();
    assert!(!seen.bodies[0].to_string().contains(ASK_TOOL));
}
