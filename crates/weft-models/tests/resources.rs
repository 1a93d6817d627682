//! Resource parts reach every provider as their text rendering: in a tool
//! result and in a user message, for Anthropic, OpenAI chat (and compatible
//! servers) and OpenAI Responses.

use serde_json::{Value, json};
use weft_core::message::{Message, Part, Resource, ResourceBody, Role};
use weft_core::model::ModelRequest;
use weft_models::anthropic;
use weft_models::openai_chat::{self, ChatFlavor};
use weft_models::openai_responses;

const LINK: &str = "[resource link] notes <file:///notes.txt> (text/plain), 12 bytes: the notes";
const BLOB: &str = "[binary resource] <mem://b> (application/pdf), 3 bytes (contents not shown)";

fn request() -> ModelRequest {
    let link = Part::Resource(Resource {
        uri: "file:///notes.txt".into(),
        mime_type: Some("text/plain".into()),
        annotations: Some(json!({"priority": 0.5})),
        body: ResourceBody::Link {
            name: "notes".into(),
            title: None,
            description: Some("the notes".into()),
            size: Some(12),
        },
    });
    let blob = Part::Resource(Resource {
        uri: "mem://b".into(),
        mime_type: Some("application/pdf".into()),
        annotations: None,
        body: ResourceBody::Blob {
            data: "AAEC".into(),
        },
    });
    ModelRequest {
        messages: vec![
            Message {
                role: Role::User,
                parts: vec![
                    Part::Text {
                        text: "Read:".into(),
                    },
                    blob,
                ],
            },
            Message {
                role: Role::Assistant,
                parts: vec![Part::ToolUse {
                    id: "call_1".into(),
                    name: "fs__find".into(),
                    input: json!({}).into(),
                }],
            },
            Message {
                role: Role::Tool,
                parts: vec![Part::ToolResult {
                    tool_use_id: "call_1".into(),
                    content: vec![
                        Part::Text {
                            text: "found:".into(),
                        },
                        link,
                    ],
                    is_error: false,
                }],
            },
        ],
        ..ModelRequest::default()
    }
}

fn assert_renders(body: &Value) {
    let text = body.to_string();
    assert!(text.contains(LINK), "{text}");
    assert!(text.contains(BLOB), "{text}");
    assert!(!text.contains("AAEC"), "blob bytes reach no model: {text}");
}

#[test]
fn every_provider_sends_the_text_rendering() {
    let req = request();
    assert_renders(&anthropic::build_request("claude-sonnet-4-5", &req, false));
    for flavor in [ChatFlavor::OpenAi, ChatFlavor::Compat] {
        assert_renders(&openai_chat::build_request(flavor, "gpt-4o", &req, false));
    }
    let responses = openai_responses::build_request("gpt-4o-mini", &req, false);
    assert_renders(&serde_json::to_value(&responses).unwrap());
}
