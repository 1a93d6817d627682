//! The model planner against each provider's local replay server:
//! thinking and reasoning items carried to the next turn, parallel calls,
//! and calls cut off by the token limit.

use crate::common::fixture;
use crate::harness::{Log, drive, final_text, http_model, planner, streaming_server};
use serde_json::Value;

#[tokio::test]
async fn anthropic_agent_carries_signed_thinking_to_the_next_turn() {
    let server = streaming_server(&[
        "anthropic/a4_thinking_tool_use_captured.sse",
        "anthropic/a1_text_basic.sse",
    ])
    .await;
    let log = Log::default();
    let p = planner(http_model("anthropic/claude-sonnet-4", &server));
    let (outcome, _) = drive(&p, &["weather", "calc.add"], "Weather in Florence?", &log).await;
    assert_eq!(final_text(&outcome), "Hello there!");
    let entries = log.entries();
    assert_eq!(entries[0], "usage:424/5");
    assert_eq!(entries[1], "thinking:signed");
    assert_eq!(
        entries[2],
        "args:toolu_01Js4AMfx5qpTLhwTusnvT68:weather:{\""
    );
    assert!(entries.contains(&"tool_start:weather".to_owned()));
    assert!(entries.contains(&"tool_end:weather".to_owned()));
    assert_eq!(entries.last().unwrap(), "usage:11/6");
    let seen = server.seen.lock().unwrap();
    let second = &seen.bodies[1]["messages"];
    let recorded: Value = serde_json::from_slice(&fixture(
        "anthropic/a4_thinking_tool_use_captured.next_request.json",
    ))
    .unwrap();
    assert_eq!(
        second[1]["content"][0], recorded["messages"][1]["content"][0],
        "thinking block verbatim"
    );
    assert_eq!(second[2]["content"][0]["type"], "tool_result");
    assert_eq!(seen.bodies[0]["tools"][1]["name"], "calc__add");
}

#[tokio::test]
async fn openai_chat_agent_runs_parallel_calls_then_answers() {
    let server = streaming_server(&[
        "openai_chat/c2_parallel_tool_calls.sse",
        "openai_chat/c1_text_include_usage.sse",
    ])
    .await;
    let log = Log::default();
    let p = planner(http_model("openai/gpt-4o", &server));
    let (outcome, machine) = drive(
        &p,
        &["GetWeatherArgs", "get_stock_price"],
        "Weather and AAPL?",
        &log,
    )
    .await;
    assert!(final_text(&outcome).starts_with("I'm unable to provide real-time weather updates."));
    let entries = log.entries();
    let starts: Vec<&String> = entries.iter().filter(|e| e.starts_with("tool_")).collect();
    assert_eq!(
        starts,
        [
            "tool_start:GetWeatherArgs",
            "tool_end:GetWeatherArgs",
            "tool_start:get_stock_price",
            "tool_end:get_stock_price"
        ]
    );
    assert!(entries.contains(&"usage:149/60".to_owned()));
    assert!(entries.contains(&"usage:14/30".to_owned()));
    assert_eq!(machine.tool_outputs().len(), 2);
    let seen = server.seen.lock().unwrap();
    let msgs = seen.bodies[1]["messages"].as_array().unwrap();
    assert_eq!(msgs[2]["tool_calls"].as_array().unwrap().len(), 2);
    assert_eq!(msgs[3]["role"], "tool");
    assert_eq!(msgs[3]["tool_call_id"], "call_JMW1whyEaYG438VE1OIflxA2");
}

#[tokio::test]
async fn openai_responses_agent_sends_the_reasoning_item_back() {
    let server = streaming_server(&[
        "openai_responses/r3_reasoning_summary_function_call.sse",
        "openai_responses/r1_text.sse",
    ])
    .await;
    let log = Log::default();
    let p = planner(http_model("openai-responses/gpt-5", &server));
    let (outcome, _) = drive(&p, &["weather", "calc.add"], "Weather in Florence?", &log).await;
    assert_eq!(final_text(&outcome), "Hi in Portuguese is \"Oi!\"");
    let entries = log.entries();
    assert_eq!(entries[0], "thinking:openai-reasoning");
    assert!(entries.contains(&"tool_start:weather".to_owned()));
    let seen = server.seen.lock().unwrap();
    let input = &seen.bodies[1]["input"];
    assert_eq!(input[1]["type"], "reasoning");
    assert_eq!(input[1]["encrypted_content"].as_str().unwrap().len(), 1572);
    assert_eq!(input[2]["type"], "function_call");
    assert_eq!(input[2]["call_id"], "call_zgUaIBRPTwxxOusyyKw5NVMH");
    assert_eq!(input[3]["type"], "function_call_output");
    assert_eq!(seen.bodies[1]["store"], false);
}

#[tokio::test]
async fn a_call_cut_off_by_max_tokens_is_never_executed() {
    let server = streaming_server(&[
        "anthropic/a6_tool_use_truncated_max_tokens.sse",
        "anthropic/a1_text_basic.sse",
    ])
    .await;
    let log = Log::default();
    let p = planner(http_model("anthropic/claude-3-7-sonnet", &server));
    let (outcome, machine) = drive(&p, &["make_file"], "Write a tax guide", &log).await;
    assert_eq!(final_text(&outcome), "Hello there!");
    let entries = log.entries();
    assert!(
        entries.contains(&"invalid:make_file".to_owned()),
        "{entries:?}"
    );
    assert!(
        !entries.iter().any(|e| e.starts_with("tool_start")),
        "{entries:?}"
    );
    assert!(machine.tool_outputs()[0].is_error());
    // The retry tells the model why its call was not run.
    let seen = server.seen.lock().unwrap();
    let result = &seen.bodies[1]["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["is_error"], true);
}
