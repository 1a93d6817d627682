//! Gemini request bodies: roles, signatures put back on their parts,
//! function responses, tool declarations and calling modes.

use std::sync::Arc;

use serde_json::{Value, json};
use weft_core::message::{Message, Part, Role, Thinking};
use weft_core::model::{ModelRequest, ToolChoice};
use weft_core::tool::{ToolAnnotations, ToolSpec};

use super::signature::{Anchor, block};
use super::{GeminiApi, build_request};
use crate::client::WireApi;

fn tool(name: &str, schema: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("The {name} tool"),
        input_schema: schema,
        output_schema: None,
        annotations: ToolAnnotations::default(),
        tags: Vec::new(),
    }
}

fn add() -> ToolSpec {
    tool(
        "calc__add",
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
    )
}

fn call(id: &str, name: &str, input: Value) -> Part {
    Part::ToolUse {
        id: id.into(),
        name: name.into(),
        input: Arc::new(input),
    }
}

fn result(id: &str, text: &str, is_error: bool) -> Part {
    Part::ToolResult {
        tool_use_id: id.into(),
        content: vec![Part::Text { text: text.into() }],
        is_error,
    }
}

/// A turn with a signed thought, text, and two parallel calls (one made-up
/// id, one Gemini's), answered out of order.
fn exchange() -> ModelRequest {
    ModelRequest {
        system: Some("Be terse.".into()),
        messages: vec![
            Message::user("Add 2 and 3, and 4 and 5."),
            Message {
                role: Role::Assistant,
                parts: vec![
                    Part::Thinking(Thinking::Text {
                        text: "Two sums.".into(),
                        signature: None,
                    }),
                    Part::Thinking(block(
                        "sig-thought".into(),
                        Anchor::Thought("Two sums.".into()),
                    )),
                    Part::Thinking(block(
                        "sig-call".into(),
                        Anchor::Call("gemini_call_r1_0".into()),
                    )),
                    Part::Thinking(block("sig-text".into(), Anchor::Text)),
                    Part::Text {
                        text: "Adding.".into(),
                    },
                    call("gemini_call_r1_0", "calc__add", json!({"a": 2, "b": 3})),
                    call("fc-7", "calc__add", json!({"a": 4, "b": 5})),
                ],
            },
            Message {
                role: Role::Tool,
                parts: vec![
                    result("fc-7", "not a number", true),
                    result("gemini_call_r1_0", "5", false),
                ],
            },
        ],
        tools: vec![add()],
        ..ModelRequest::default()
    }
}

#[test]
fn signatures_go_back_on_their_parts_and_results_follow_call_order() {
    let body = build_request(&exchange()).unwrap();
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "Be terse."}]})
    );
    let contents = body["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 3);
    assert_eq!(
        contents[0],
        json!({"role": "user", "parts": [{"text": "Add 2 and 3, and 4 and 5."}]})
    );
    assert_eq!(
        contents[1],
        json!({"role": "model", "parts": [
            {"text": "Two sums.", "thought": true, "thoughtSignature": "sig-thought"},
            {"text": "Adding.", "thoughtSignature": "sig-text"},
            {"functionCall": {"name": "calc__add", "args": {"a": 2, "b": 3}}, "thoughtSignature": "sig-call"},
            {"functionCall": {"name": "calc__add", "args": {"a": 4, "b": 5}, "id": "fc-7"}},
        ]})
    );
    assert_eq!(
        contents[2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "calc__add", "response": {"result": 5}}},
            {"functionResponse": {"name": "calc__add", "response": {"error": "not a number"}, "id": "fc-7"}},
        ]})
    );
    assert_eq!(
        body["tools"],
        json!([{"functionDeclarations": [{"name": "calc__add", "description": "The calc__add tool",
            "parameters": {"type": "OBJECT", "properties": {"a": {"type": "NUMBER"}, "b": {"type": "NUMBER"}}, "required": ["a", "b"]}}]}])
    );
    assert_eq!(
        body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "AUTO"}})
    );
}

#[test]
fn a_finalizing_turn_keeps_the_tools_and_forbids_them_and_a_toolless_one_declares_the_used_ones() {
    let mut req = exchange();
    req.tool_choice = ToolChoice::None;
    let body = build_request(&req).unwrap();
    assert_eq!(body["toolConfig"]["functionCallingConfig"]["mode"], "NONE");
    assert_eq!(
        body["tools"][0]["functionDeclarations"][0]["name"],
        "calc__add"
    );
    req.tools.clear();
    req.tool_choice = ToolChoice::Auto;
    let body = build_request(&req).unwrap();
    assert_eq!(body["toolConfig"]["functionCallingConfig"]["mode"], "NONE");
    let declared = &body["tools"][0]["functionDeclarations"][0];
    assert_eq!(declared["name"], "calc__add");
    assert!(declared.get("parameters").is_none(), "{declared}");
    req.tools = vec![add()];
    req.tool_choice = ToolChoice::Tool("calc__add".into());
    let body = build_request(&req).unwrap();
    assert_eq!(
        body["toolConfig"]["functionCallingConfig"],
        json!({"mode": "ANY", "allowedFunctionNames": ["calc__add"]})
    );
}

#[test]
fn generation_settings_and_thinking_map_to_generation_config() {
    let req = ModelRequest {
        messages: vec![Message::user("hi")],
        max_tokens: Some(512),
        temperature: Some(0.5),
        top_p: Some(0.9),
        stop: vec!["END".into()],
        thinking_budget: Some(2048),
        ..ModelRequest::default()
    };
    let body = build_request(&req).unwrap();
    assert_eq!(
        body["generationConfig"],
        json!({"maxOutputTokens": 512, "temperature": 0.5, "topP": 0.8999999761581421,
            "stopSequences": ["END"], "thinkingConfig": {"thinkingBudget": 2048, "includeThoughts": true}})
    );
    assert!(body.get("tools").is_none() && body.get("toolConfig").is_none());
}

#[test]
fn other_providers_reasoning_is_not_sent_and_non_object_results_are_wrapped() {
    let req = ModelRequest {
        messages: vec![
            Message::user("go"),
            Message {
                role: Role::Assistant,
                parts: vec![
                    Part::Thinking(Thinking::Text {
                        text: "hm".into(),
                        signature: Some("anthropic-sig".into()),
                    }),
                    Part::Thinking(Thinking::Redacted {
                        data: "anthropic-blob".into(),
                    }),
                    call("toolu_1", "calc__add", json!({"a": 1, "b": 1})),
                ],
            },
            Message {
                role: Role::Tool,
                parts: vec![result("toolu_1", "{\"value\": 2}", false)],
            },
            Message::user("thanks"),
        ],
        tools: vec![add()],
        ..ModelRequest::default()
    };
    let body = build_request(&req).unwrap();
    let contents = body["contents"].as_array().unwrap();
    assert_eq!(
        contents[1]["parts"],
        json!([{"functionCall": {"name": "calc__add", "args": {"a": 1, "b": 1}, "id": "toolu_1"}}])
    );
    // The results and the next user text make one user turn, results first.
    assert_eq!(
        contents[2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "calc__add", "response": {"value": 2}, "id": "toolu_1"}},
            {"text": "thanks"}
        ]})
    );
    assert_eq!(contents.len(), 3);
}

#[test]
fn a_schema_gemini_cannot_take_is_a_config_error_naming_tool_and_keyword() {
    let mut req = exchange();
    req.tools.push(tool(
        "fs__walk",
        json!({"type": "object", "properties": {"n": {"not": {}}}}),
    ));
    let err = GeminiApi.body("gemini-2.5-flash", &req, true).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("`fs__walk`") && message.contains("`not`"),
        "{message}"
    );
}

#[test]
fn the_model_and_method_are_in_the_url() {
    let base = "https://generativelanguage.googleapis.com/v1beta/";
    assert_eq!(
        GeminiApi.url(base, "gemini-2.5-flash", true),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        GeminiApi.url(base, "gemini-2.5-flash", false),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    );
}

#[test]
fn gemini_signatures_are_not_sent_to_anthropic_nor_count_as_its_thinking() {
    let mut req = exchange();
    req.thinking_budget = Some(2048);
    assert!(!crate::rules::thinking_allowed(&req));
    let body = crate::anthropic::build_request("claude-x", &req, true);
    let text = body.to_string();
    assert!(!text.contains("gemini_thought_signature"), "{text}");
    assert!(body.get("thinking").is_none(), "{text}");
}
