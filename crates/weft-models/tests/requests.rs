//! The exact JSON each client sends: snapshots of the request bodies, and the
//! recorded follow-up requests that carry thinking and reasoning back.

mod common;

use common::{expected, fixture};
use serde_json::{Value, json};
use weft_core::message::{Message, Part, Role, Thinking};
use weft_core::model::{ModelRequest, StreamAssembler, ToolChoice};
use weft_core::planner::NoopEvents;
use weft_core::tool::{ToolAnnotations, ToolSpec};
use weft_models::anthropic::{self, AnthropicDecoder};
use weft_models::decode::decode_all;
use weft_models::openai_chat::{self, ChatFlavor};
use weft_models::openai_responses::{self, ResponsesDecoder};

fn tool(name: &str, description: &str, schema: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        input_schema: schema,
        output_schema: None,
        annotations: ToolAnnotations::default(),
        tags: Vec::new(),
    }
}

fn tools() -> Vec<ToolSpec> {
    vec![
        tool(
            "weather__current",
            "Current weather for a city",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        ),
        tool(
            "calc__add",
            "Adds two numbers",
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
        ),
    ]
}

/// A conversation with every kind of part: signed and redacted thinking, a
/// tool call, an ok and a failed result, and a follow-up user message.
fn conversation() -> ModelRequest {
    ModelRequest {
        system: Some("You are terse.".into()),
        messages: vec![
            Message::user("Weather in Paris, and 2+3?"),
            Message {
                role: Role::Assistant,
                parts: vec![
                    Part::Thinking(Thinking::Text {
                        text: "Two tools.".into(),
                        signature: Some("sig-abc==".into()),
                    }),
                    Part::Thinking(Thinking::Redacted {
                        data: "opaque-blob".into(),
                    }),
                    Part::Thinking(Thinking::Text {
                        text: "unsigned, cut off".into(),
                        signature: None,
                    }),
                    Part::Text {
                        text: "Checking.".into(),
                    },
                    Part::ToolUse {
                        id: "call_1".into(),
                        name: "weather__current".into(),
                        input: json!({"city": "Paris"}).into(),
                    },
                    Part::ToolUse {
                        id: "call_2".into(),
                        name: "calc__add".into(),
                        input: json!({"a": 2, "b": 3}).into(),
                    },
                ],
            },
            Message {
                role: Role::Tool,
                parts: vec![
                    Part::ToolResult {
                        tool_use_id: "call_1".into(),
                        content: vec![Part::Text {
                            text: "18 C, sunny".into(),
                        }],
                        is_error: false,
                    },
                    Part::ToolResult {
                        tool_use_id: "call_2".into(),
                        content: vec![Part::Text {
                            text: "error (invalid_arguments): b must be a number".into(),
                        }],
                        is_error: true,
                    },
                ],
            },
            Message::user("Thanks. Be brief."),
        ],
        tools: tools(),
        tool_choice: ToolChoice::Auto,
        max_tokens: Some(1024),
        temperature: Some(0.5),
        ..ModelRequest::default()
    }
}

#[test]
fn anthropic_request_snapshot() {
    insta::assert_json_snapshot!(
        "anthropic_stream",
        anthropic::build_request("claude-sonnet-4-5", &conversation(), true)
    );
    let mut finalize = conversation();
    finalize.tool_choice = ToolChoice::None;
    finalize.thinking_budget = Some(2000);
    finalize.max_tokens = None;
    insta::assert_json_snapshot!(
        "anthropic_finalize_with_thinking",
        anthropic::build_request("claude-sonnet-4-5", &finalize, false)
    );
}

#[test]
fn chat_request_snapshots() {
    insta::assert_json_snapshot!(
        "openai_chat_stream",
        openai_chat::build_request(ChatFlavor::OpenAi, "gpt-4o", &conversation(), true)
    );
    let mut req = conversation();
    req.tool_choice = ToolChoice::Tool("calc__add".into());
    insta::assert_json_snapshot!(
        "compat_chat",
        openai_chat::build_request(ChatFlavor::Compat, "llama3.1", &req, false)
    );
}

#[test]
fn responses_request_snapshot() {
    let body = openai_responses::build_request("gpt-4o-mini", &conversation(), true);
    insta::assert_json_snapshot!(
        "openai_responses_stream",
        serde_json::to_value(&body).unwrap()
    );
}

/// Decodes a stream fixture into the assistant message weft would store.
fn assistant_turn(chunks: Vec<weft_core::model::StreamChunk>) -> Message {
    let mut asm = StreamAssembler::new();
    for c in chunks {
        asm.push(c, &NoopEvents).unwrap();
    }
    let s = asm.finish(&NoopEvents);
    let mut parts: Vec<Part> = s.thinking.into_iter().map(Part::Thinking).collect();
    if !s.text.is_empty() {
        parts.push(Part::Text { text: s.text });
    }
    for c in s.tool_calls {
        parts.push(Part::ToolUse {
            id: c.id,
            name: c.name,
            input: serde_json::from_str(&c.arguments).unwrap(),
        });
    }
    Message {
        role: Role::Assistant,
        parts,
    }
}

#[test]
fn anthropic_thinking_round_trip_matches_the_recorded_next_request() {
    let chunks = decode_all(
        AnthropicDecoder::default(),
        &fixture("anthropic/a4_thinking_tool_use_captured.sse"),
    )
    .unwrap();
    let req = ModelRequest {
        system: Some("You are a helpful assistant".into()),
        messages: vec![
            Message::user("What's the weather in Florence, Italy?"),
            assistant_turn(chunks),
            Message {
                role: Role::Tool,
                parts: vec![Part::ToolResult {
                    tool_use_id: "toolu_01Js4AMfx5qpTLhwTusnvT68".into(),
                    content: vec![Part::Text {
                        text: "40 C".into(),
                    }],
                    is_error: false,
                }],
            },
        ],
        tools: vec![tool(
            "weather",
            "Get weather information for a location",
            json!({"properties": {"location": {"description": "the city", "type": "string"}}, "required": ["location"], "type": "object"}),
        )],
        thinking_budget: Some(4000),
        max_tokens: Some(4096),
        ..ModelRequest::default()
    };
    let ours = anthropic::build_request("claude-sonnet-4-20250514", &req, true);
    let recorded: Value = serde_json::from_slice(&fixture(
        "anthropic/a4_thinking_tool_use_captured.next_request.json",
    ))
    .unwrap();
    assert_eq!(ours["messages"], recorded["messages"]);
    assert_eq!(ours["thinking"], recorded["thinking"]);
    assert_eq!(ours["max_tokens"], recorded["max_tokens"]);
    assert_eq!(
        ours["tools"][0]["input_schema"],
        recorded["tools"][0]["input_schema"]
    );
}

#[test]
fn responses_reasoning_item_is_sent_back_verbatim_before_its_call() {
    let bytes = fixture("openai_responses/r3_reasoning_summary_function_call.sse");
    let chunks = decode_all(ResponsesDecoder::default(), &bytes).unwrap();
    let turn = assistant_turn(chunks);
    let Part::Thinking(Thinking::OpenAiReasoning { item }) = &turn.parts[0] else {
        panic!("reasoning item first: {:?}", turn.parts[0]);
    };
    let item = item.clone();
    let req = ModelRequest {
        messages: vec![
            Message::user("What's the weather in Florence, Italy?"),
            turn,
            Message {
                role: Role::Tool,
                parts: vec![Part::ToolResult {
                    tool_use_id: "call_zgUaIBRPTwxxOusyyKw5NVMH".into(),
                    content: vec![Part::Text {
                        text: "40 C".into(),
                    }],
                    is_error: false,
                }],
            },
        ],
        ..ModelRequest::default()
    };
    let body = openai_responses::build_request("gpt-5", &req, true);
    let text = serde_json::to_string(&body).unwrap();
    assert!(
        text.contains(&item),
        "the reasoning item is sent byte for byte"
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    let want = expected("openai_responses/r3_reasoning_summary_function_call.expected.json");
    let sent = &v["input"];
    assert_eq!(sent.as_array().unwrap().len(), 4);
    let mut reasoning = want["items_to_send_back_next_turn"][0].clone();
    reasoning["encrypted_content"] = want["alt_encrypted_content_from_output_item_done"].clone();
    assert_eq!(sent[1], reasoning);
    let call = &want["items_to_send_back_next_turn"][1];
    assert_eq!(
        sent[2],
        json!({"type": "function_call", "call_id": call["call_id"], "name": call["name"], "arguments": call["arguments"]})
    );
    assert_eq!(
        sent[3],
        json!({"type": "function_call_output", "call_id": "call_zgUaIBRPTwxxOusyyKw5NVMH", "output": "40 C"})
    );
    assert_eq!(v["store"], false);
    assert_eq!(v["include"], json!(["reasoning.encrypted_content"]));
}
