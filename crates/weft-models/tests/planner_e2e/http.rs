//! The model planner against each provider's local replay server:
//! thinking and reasoning items carried to the next turn, parallel calls,
//! and calls cut off by the token limit.

use crate::common::fixture;
use crate::harness::{answer_over_http, logged};
use serde_json::Value;

#[tokio::test]
async fn anthropic_agent_carries_signed_thinking_to_the_next_turn() {
    let (run, server) = answer_over_http(
        "anthropic/claude-sonnet-4",
        &[
            "anthropic/a4_thinking_tool_use_captured.sse",
            "anthropic/a1_text_basic.sse",
        ],
        &["weather", "calc.add"],
        "Weather in Florence?",
    )
    .await;
    assert_eq!(run.text, "Hello there!");
    let entries = run.entries;
    assert_eq!(entries[0], "usage:424/5");
    assert_eq!(entries[1], "thinking:signed");
    assert_eq!(
        entries[2],
        "args:toolu_01Js4AMfx5qpTLhwTusnvT68:weather:{\""
    );
    assert!(logged(&entries, "tool_start:weather"), "{entries:?}");
    assert!(logged(&entries, "tool_end:weather"), "{entries:?}");
    // Usage events are changes: the second call's `message_start` brought
    // 11 input and 1 output token, its `message_delta` the total of 6
    // output tokens, so the last event adds 5.
    assert_eq!(entries.last().unwrap(), "usage:0/5");
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
    let (run, server) = answer_over_http(
        "openai/gpt-4o",
        &[
            "openai_chat/c2_parallel_tool_calls.sse",
            "openai_chat/c1_text_include_usage.sse",
        ],
        &["GetWeatherArgs", "get_stock_price"],
        "Weather and AAPL?",
    )
    .await;
    assert!(
        run.text
            .starts_with("I'm unable to provide real-time weather updates.")
    );
    let entries = run.entries;
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
    assert!(logged(&entries, "usage:149/60"), "{entries:?}");
    assert!(logged(&entries, "usage:14/30"), "{entries:?}");
    assert_eq!(run.machine.tool_outputs().len(), 2);
    let seen = server.seen.lock().unwrap();
    let msgs = seen.bodies[1]["messages"].as_array().unwrap();
    assert_eq!(msgs[2]["tool_calls"].as_array().unwrap().len(), 2);
    assert_eq!(msgs[3]["role"], "tool");
    assert_eq!(msgs[3]["tool_call_id"], "call_JMW1whyEaYG438VE1OIflxA2");
}

#[tokio::test]
async fn openai_responses_agent_sends_the_reasoning_item_back() {
    let (run, server) = answer_over_http(
        "openai-responses/gpt-5",
        &[
            "openai_responses/r3_reasoning_summary_function_call.sse",
            "openai_responses/r1_text.sse",
        ],
        &["weather", "calc.add"],
        "Weather in Florence?",
    )
    .await;
    assert_eq!(run.text, "Hi in Portuguese is \"Oi!\"");
    let entries = run.entries;
    assert_eq!(entries[0], "thinking:openai-reasoning");
    assert!(logged(&entries, "tool_start:weather"), "{entries:?}");
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
    let (run, server) = answer_over_http(
        "anthropic/claude-3-7-sonnet",
        &[
            "anthropic/a6_tool_use_truncated_max_tokens.sse",
            "anthropic/a1_text_basic.sse",
        ],
        &["make_file"],
        "Write a tax guide",
    )
    .await;
    assert_eq!(run.text, "Hello there!");
    let entries = run.entries;
    assert!(logged(&entries, "invalid:make_file"), "{entries:?}");
    assert!(
        !entries.iter().any(|e| e.starts_with("tool_start")),
        "{entries:?}"
    );
    assert!(run.machine.tool_outputs()[0].is_error());
    // The retry tells the model why its call was not run.
    let seen = server.seen.lock().unwrap();
    let result = &seen.bodies[1]["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["is_error"], true);
}
