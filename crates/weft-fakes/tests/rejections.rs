//! Each fake refuses what its real service refuses, with that service's
//! status and error body, and answers a request that keeps the rules.

use serde_json::{Value, json};
use weft_fakes::{Api, Behaviour, spawn};

#[path = "rejections/bedrock.rs"]
mod bedrock;
#[path = "rejections/gemini.rs"]
mod gemini;
#[path = "rejections/vertex.rs"]
mod vertex;

/// Posts `body` to a fresh fake of `api`: the status and the response body.
async fn post(api: Api, body: Value) -> (u16, String) {
    let fake = spawn(api, Behaviour::default()).await.unwrap();
    let res = reqwest::Client::new()
        .post(format!("{}{}", fake.url, api.path()))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.text().await.unwrap())
}

async fn rejected(api: Api, body: Value, status: u16, says: &str) {
    let (got, text) = post(api, body).await;
    assert_eq!(got, status, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(says), "{message:?} does not say {says:?}");
    if api == Api::Anthropic {
        assert_eq!(body["type"], "error");
        assert_eq!(body["error"]["type"], "invalid_request_error");
    }
}

async fn accepted(api: Api, body: Value) -> String {
    let (status, text) = post(api, body).await;
    assert_eq!(status, 200, "{text}");
    text
}

fn anthropic(messages: Value) -> Value {
    json!({"model": "claude-x", "max_tokens": 1024, "stream": true, "messages": messages})
}

fn a_tools() -> Value {
    json!([{"name": "calc__add", "description": "adds", "input_schema": {"type": "object"}}])
}

fn a_exchange() -> Value {
    json!([
        {"role": "user", "content": "2+3?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "calc__add", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "5"}]}
    ])
}

#[tokio::test]
async fn anthropic_requires_tools_beside_tool_blocks() {
    rejected(
        Api::Anthropic,
        anthropic(a_exchange()),
        400,
        "Requests which include `tool_use` or `tool_result` blocks must define tools.",
    )
    .await;
    let mut ok = anthropic(a_exchange());
    ok["tools"] = a_tools();
    ok["tool_choice"] = json!({"type": "none"});
    let stream = accepted(Api::Anthropic, ok).await;
    assert!(stream.contains(weft_fakes::FINAL), "{stream}");
}

#[tokio::test]
async fn anthropic_pairs_every_tool_use_with_a_result_in_the_next_message() {
    let mut missing = anthropic(json!([
        {"role": "user", "content": "2+3?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "calc__add", "input": {}}]},
        {"role": "user", "content": "well?"}
    ]));
    missing["tools"] = a_tools();
    rejected(
        Api::Anthropic,
        missing,
        400,
        "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1",
    )
    .await;
    let mut orphan = anthropic(json!([
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "5"}]}
    ]));
    orphan["tools"] = a_tools();
    rejected(
        Api::Anthropic,
        orphan,
        400,
        "unexpected `tool_use_id` found in `tool_result` blocks: toolu_9",
    )
    .await;
    let mut late = anthropic(json!([
        {"role": "user", "content": "2+3?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "calc__add", "input": {}}]},
        {"role": "user", "content": [{"type": "text", "text": "here"}, {"type": "tool_result", "tool_use_id": "toolu_1", "content": "5"}]}
    ]));
    late["tools"] = a_tools();
    rejected(
        Api::Anthropic,
        late,
        400,
        "`tool_result` blocks must come first",
    )
    .await;
}

#[tokio::test]
async fn anthropic_refuses_empty_text_and_tool_choice_without_tools() {
    rejected(
        Api::Anthropic,
        anthropic(json!([{"role": "user", "content": [{"type": "text", "text": ""}]}])),
        400,
        "text content blocks must be non-empty",
    )
    .await;
    let mut choice = anthropic(json!([{"role": "user", "content": "hi"}]));
    choice["tool_choice"] = json!({"type": "none"});
    rejected(
        Api::Anthropic,
        choice,
        400,
        "tool_choice may only be specified while providing tools",
    )
    .await;
}

#[tokio::test]
async fn anthropic_thinking_needs_its_signed_block_before_the_last_tool_use() {
    let mut unsigned = anthropic(a_exchange());
    unsigned["tools"] = a_tools();
    unsigned["max_tokens"] = json!(4096);
    unsigned["thinking"] = json!({"type": "enabled", "budget_tokens": 1024});
    rejected(
        Api::Anthropic,
        unsigned.clone(),
        400,
        "a final `assistant` message must start with a thinking block",
    )
    .await;
    let mut forged = unsigned.clone();
    forged["messages"][1]["content"] = json!([
        {"type": "thinking", "thinking": "hm", "signature": "forged"},
        {"type": "tool_use", "id": "toolu_1", "name": "calc__add", "input": {}}
    ]);
    rejected(
        Api::Anthropic,
        forged,
        400,
        "Invalid `signature` in `thinking` block",
    )
    .await;
    let mut forced = unsigned.clone();
    forced["messages"] = json!([{"role": "user", "content": "hi"}]);
    forced["tool_choice"] = json!({"type": "any"});
    rejected(
        Api::Anthropic,
        forced,
        400,
        "Thinking may not be enabled when tool_choice forces tool use",
    )
    .await;
    let mut small = anthropic(json!([{"role": "user", "content": "hi"}]));
    small["thinking"] = json!({"type": "enabled", "budget_tokens": 2048});
    rejected(
        Api::Anthropic,
        small,
        400,
        "`max_tokens` must be greater than `thinking.budget_tokens`",
    )
    .await;
}

fn chat(messages: Value) -> Value {
    json!({"model": "gpt-x", "stream": true, "messages": messages})
}

fn c_tools() -> Value {
    json!([{"type": "function", "function": {"name": "calc__add", "parameters": {"type": "object"}}}])
}

#[tokio::test]
async fn chat_answers_every_tool_call_before_another_role() {
    let mut missing = chat(json!([
        {"role": "user", "content": "2+3?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "calc__add", "arguments": "{}"}}]},
        {"role": "user", "content": "well?"}
    ]));
    missing["tools"] = c_tools();
    rejected(Api::OpenAiChat, missing, 400,
        "must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1").await;
    let mut orphan = chat(
        json!([{"role": "user", "content": "2+3?"}, {"role": "tool", "tool_call_id": "call_9", "content": "5"}]),
    );
    orphan["tools"] = c_tools();
    rejected(
        Api::OpenAiChat,
        orphan,
        400,
        "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
    )
    .await;
    let mut choice = chat(json!([{"role": "user", "content": "hi"}]));
    choice["tool_choice"] = json!("none");
    rejected(
        Api::OpenAiChat,
        choice,
        400,
        "'tool_choice' is only allowed when 'tools' are specified",
    )
    .await;
}

#[tokio::test]
async fn openai_takes_null_content_beside_tool_calls_and_a_compatible_server_does_not() {
    let exchange = json!([
        {"role": "user", "content": "2+3?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "calc__add", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "5"}
    ]);
    let mut body = chat(exchange.clone());
    body["tools"] = c_tools();
    let stream = accepted(Api::OpenAiChat, body.clone()).await;
    assert!(stream.ends_with("data: [DONE]\n\n"));
    rejected(Api::Compat, body.clone(), 500, "NoneType").await;
    body["messages"][1]["content"] = json!("");
    accepted(Api::Compat, body).await;
}

fn responses(input: Value) -> Value {
    json!({"model": "gpt-x", "stream": true, "store": false, "input": input,
        "tools": [{"type": "function", "name": "calc__add", "parameters": {"type": "object"}}]})
}

#[tokio::test]
async fn responses_needs_an_output_for_every_call_and_a_call_for_every_output() {
    rejected(
        Api::OpenAiResponses,
        responses(json!([
            {"role": "user", "content": "2+3?"},
            {"type": "function_call", "call_id": "call_1", "name": "calc__add", "arguments": "{}"}
        ])),
        400,
        "No tool output found for function call call_1.",
    )
    .await;
    rejected(
        Api::OpenAiResponses,
        responses(json!([
            {"role": "user", "content": "2+3?"},
            {"type": "function_call_output", "call_id": "call_9", "output": "5"}
        ])),
        400,
        "No tool call found for function call output with call_id call_9.",
    )
    .await;
    rejected(
        Api::OpenAiResponses,
        responses(json!([
            {"type": "reasoning", "id": "rs_1", "encrypted_content": "x", "summary": []}
        ])),
        400,
        "Item with id 'rs_1' not found",
    )
    .await;
}

/// A reasoning item the fake issued must come back before its call.
#[tokio::test]
async fn responses_wants_the_reasoning_item_before_its_function_call() {
    let b = Behaviour {
        thinking: true,
        ..Behaviour::default()
    };
    let fake = spawn(Api::OpenAiResponses, b).await.unwrap();
    let client = reqwest::Client::new();
    let url = format!("{}{}", fake.url, Api::OpenAiResponses.path());
    let first = client
        .post(&url)
        .json(&responses(json!([{"role": "user", "content": "2+3?"}])))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let done: Vec<Value> = first
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter(|e| e["type"] == "response.output_item.done")
        .map(|e| e["item"].clone())
        .collect();
    assert_eq!(done.len(), 2, "{first}");
    let output =
        json!({"type": "function_call_output", "call_id": done[1]["call_id"], "output": "5"});
    let mut call = done[1].clone();
    call.as_object_mut().unwrap().remove("status");
    let without = responses(json!([{"role": "user", "content": "2+3?"}, call, output]));
    let res = client.post(&url).json(&without).send().await.unwrap();
    assert_eq!(res.status(), 400);
    assert!(
        res.text()
            .await
            .unwrap()
            .contains("was provided without its required 'reasoning' item")
    );
    let with = responses(json!([{"role": "user", "content": "2+3?"}, done[0], call, output]));
    let res = client.post(&url).json(&with).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(fake.stats.rejections().len(), 1);
}
