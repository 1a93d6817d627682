//! The Converse request encoding, the event stream decoder's limits and
//! errors, signing, and building a client from the environment.

use std::time::{Duration, SystemTime};

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message as Frame};
use serde_json::{Value, json};
use weft_core::message::{Message, Part, Role, Thinking};
use weft_core::model::{ModelClient, ModelError, ModelRequest, StreamChunk, ToolChoice};

use super::*;
use crate::decode::BodyDecoder;

fn frame(headers: &[(&str, &str)], payload: &Value) -> Vec<u8> {
    let mut m = Frame::new(payload.to_string().into_bytes());
    for (k, v) in headers {
        m = m.add_header(Header::new(
            (*k).to_owned(),
            HeaderValue::String((*v).to_owned().into()),
        ));
    }
    let mut out = Vec::new();
    write_message_to(&m, &mut out).unwrap();
    out
}

fn event(kind: &str, payload: Value) -> Vec<u8> {
    frame(
        &[(":message-type", "event"), (":event-type", kind)],
        &payload,
    )
}

fn decode(bytes: &[u8], step: usize) -> (Vec<StreamChunk>, Result<(), ModelError>) {
    let mut dec = FrameDecoder::new();
    let mut out = Vec::new();
    for chunk in bytes.chunks(step) {
        if let Err(e) = dec.feed(chunk, &mut out) {
            return (out, Err(e));
        }
    }
    let res = dec.finish(&mut out);
    (out, res)
}

fn transcript() -> Vec<Message> {
    let call = Part::ToolUse {
        id: "tooluse_1".into(),
        name: "calc__add".into(),
        input: std::sync::Arc::new(json!({"a": 2})),
    };
    let thought = Part::Thinking(Thinking::Text {
        text: "add them".into(),
        signature: Some("c2ln".into()),
    });
    let unsigned = Part::Thinking(Thinking::Text {
        text: "cut off".into(),
        signature: None,
    });
    let result = Part::ToolResult {
        tool_use_id: "tooluse_1".into(),
        content: vec![Part::Text { text: "5".into() }],
        is_error: false,
    };
    vec![
        Message::user("2+3?"),
        Message {
            role: Role::Assistant,
            parts: vec![thought, unsigned, call],
        },
        Message {
            role: Role::Tool,
            parts: vec![result],
        },
        Message::user("and?"),
    ]
}

#[test]
fn a_transcript_calling_tools_keeps_a_tool_config_even_when_none_are_offered() {
    let req = ModelRequest {
        system: Some("Be brief.".into()),
        messages: transcript(),
        thinking_budget: Some(2048),
        ..ModelRequest::default()
    };
    let body = build_request("us.anthropic.claude-sonnet-4-5-20250929-v1:0", &req);
    let tools = &body["toolConfig"]["tools"];
    assert_eq!(tools[0]["toolSpec"]["name"], "calc__add", "{body}");
    assert_eq!(
        tools[0]["toolSpec"]["inputSchema"]["json"]["type"],
        "object"
    );
    assert!(body["toolConfig"].get("toolChoice").is_none(), "{body}");
    let system: Vec<&str> = body["system"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["text"].as_str().unwrap())
        .collect();
    assert_eq!(system, ["Be brief.", NO_TOOLS_NOW]);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        3,
        "tool results and the question merge: {body}"
    );
    assert_eq!(
        messages[1]["content"],
        json!([
            {"reasoningContent": {"reasoningText": {"text": "add them", "signature": "c2ln"}}},
            {"toolUse": {"toolUseId": "tooluse_1", "name": "calc__add", "input": {"a": 2}}}
        ])
    );
    assert_eq!(
        messages[2]["content"],
        json!([
            {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "5"}], "status": "success"}},
            {"text": "and?"}
        ])
    );
    assert_eq!(
        body["additionalModelRequestFields"]["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(body["inferenceConfig"]["maxTokens"], 2048 + 4096);
    // Other models take no Anthropic thinking settings.
    let nova = build_request("amazon.nova-pro-v1:0", &req);
    assert!(nova.get("additionalModelRequestFields").is_none(), "{nova}");
}

#[test]
fn tool_choices_map_to_converse_and_a_forced_tool_is_named() {
    let mut req = ModelRequest {
        messages: vec![Message::user("hi")],
        tools: vec![weft_core::tool::ToolSpec {
            name: "calc__add".into(),
            description: "adds".into(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: Default::default(),
            tags: Vec::new(),
        }],
        tool_choice: ToolChoice::Required,
        ..ModelRequest::default()
    };
    assert_eq!(
        build_request("m", &req)["toolConfig"]["toolChoice"],
        json!({"any": {}})
    );
    req.tool_choice = ToolChoice::Tool("calc__add".into());
    assert_eq!(
        build_request("m", &req)["toolConfig"]["toolChoice"],
        json!({"tool": {"name": "calc__add"}})
    );
    req.tool_choice = ToolChoice::Auto;
    let body = build_request("m", &req);
    assert!(body.get("system").is_none(), "{body}");
}

#[test]
fn model_ids_and_arns_are_one_path_segment() {
    assert_eq!(
        encode_label("anthropic.claude-v2:1"),
        "anthropic.claude-v2%3A1"
    );
    assert_eq!(
        encode_label("arn:aws:bedrock:us-east-1:1:inference-profile/us.x"),
        "arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.x"
    );
}

#[test]
fn frames_decode_at_any_split_and_the_stream_completes_at_message_stop() {
    let mut bytes = event("messageStart", json!({"role": "assistant"}));
    bytes.extend(event(
        "contentBlockDelta",
        json!({"contentBlockIndex": 0, "delta": {"text": "Hi"}, "p": "abc"}),
    ));
    bytes.extend(event(
        "contentBlockStart",
        json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}}),
    ));
    bytes.extend(event("contentBlockStop", json!({"contentBlockIndex": 1})));
    bytes.extend(event("messageStop", json!({"stopReason": "tool_use"})));
    for step in [1, 7, 64, bytes.len()] {
        let (chunks, res) = decode(&bytes, step);
        res.unwrap();
        assert_eq!(chunks[0], StreamChunk::TextDelta { text: "Hi".into() });
        // A call without input deltas has empty-object arguments.
        assert_eq!(
            chunks[2],
            StreamChunk::ToolCallArgsDelta {
                index: 0,
                delta: "{}".into()
            }
        );
    }
    let cut = bytes.len() - event("messageStop", json!({"stopReason": "tool_use"})).len();
    let (_, res) = decode(&bytes[..cut], 5);
    assert_eq!(
        res,
        Err(ModelError::Truncated {
            message: "the event stream ended before `messageStop`".into()
        })
    );
    let (_, res) = decode(&bytes[..bytes.len() - 3], 5);
    assert_eq!(
        res,
        Err(ModelError::Truncated {
            message: "the event stream ended mid-frame".into()
        })
    );
}

#[test]
fn exceptions_mid_stream_are_typed_and_bad_frames_malformed() {
    let mut bytes = event(
        "contentBlockDelta",
        json!({"contentBlockIndex": 0, "delta": {"text": "Hi"}}),
    );
    bytes.extend(frame(
        &[
            (":message-type", "exception"),
            (":exception-type", "throttlingException"),
        ],
        &json!({"message": "Too many tokens, please wait before trying again."}),
    ));
    let (chunks, res) = decode(&bytes, 3);
    assert_eq!(chunks, [StreamChunk::TextDelta { text: "Hi".into() }]);
    assert_eq!(
        res,
        Err(ModelError::Stream {
            error_type: "throttlingException".into(),
            message: "Too many tokens, please wait before trying again.".into(),
            retryable: true,
        })
    );
    let invalid = frame(
        &[
            (":message-type", "exception"),
            (":exception-type", "validationException"),
        ],
        &json!({"message": "bad input"}),
    );
    assert!(matches!(
        decode(&invalid, 9).1,
        Err(ModelError::Stream {
            retryable: false,
            ..
        })
    ));
    let mut corrupt = event("messageStop", json!({"stopReason": "end_turn"}));
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0xff;
    assert!(matches!(
        decode(&corrupt, 4).1,
        Err(ModelError::Malformed { .. })
    ));
    let huge = u32::try_from(frames::MAX_FRAME + 1).unwrap().to_be_bytes();
    assert!(matches!(
        decode(&huge, 4).1,
        Err(ModelError::Malformed { .. })
    ));
}

#[test]
fn requests_are_signed_for_the_region_and_service_with_the_session_token() {
    let creds = Credentials {
        access_key_id: "AKIDEXAMPLE".into(),
        secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
        session_token: Some("tok".into()),
        expires: None,
    };
    let time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_440_938_160);
    let url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse";
    let h =
        sign::signed_headers(&creds, "us-east-1", url, "application/json", b"{}", time).unwrap();
    let auth = h["authorization"].to_str().unwrap();
    assert!(
        auth.starts_with(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/bedrock/aws4_request"
        ),
        "{auth}"
    );
    assert!(h["authorization"].is_sensitive());
    assert_eq!(h["x-amz-date"], "20150830T123600Z");
    assert_eq!(h["x-amz-security-token"], "tok");
    let other =
        sign::signed_headers(&creds, "us-east-1", url, "application/json", b"{ }", time).unwrap();
    assert_ne!(
        other["authorization"], h["authorization"],
        "the body is signed"
    );
}

#[test]
fn a_client_is_built_from_the_environment_with_its_endpoint() {
    let env = |name: &str| match name {
        "AWS_ACCESS_KEY_ID" => Some("AKID".to_owned()),
        "AWS_SECRET_ACCESS_KEY" => Some("s".to_owned()),
        "AWS_REGION" => Some("eu-west-3".to_owned()),
        _ => None,
    };
    let c = from_env("amazon.nova-lite-v1:0", None, &env, HttpConfig::default()).unwrap();
    assert_eq!(c.id(), "bedrock/amazon.nova-lite-v1:0");
    assert_eq!(
        c.server(),
        Some(("bedrock-runtime.eu-west-3.amazonaws.com", 443))
    );
    let c = from_env("m", Some("http://127.0.0.1:9"), &env, HttpConfig::default()).unwrap();
    assert_eq!(c.server(), Some(("127.0.0.1", 9)));
    let none = |_: &str| None;
    assert!(matches!(
        from_env("m", None, &none, HttpConfig::default()),
        Err(ModelError::Config { .. })
    ));
}
