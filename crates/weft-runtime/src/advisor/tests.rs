use std::sync::Arc;

use serde_json::json;
use weft_core::ToolCallId;
use weft_core::message::{Message, Part, Role};

use super::window::{MAX_BYTES, MAX_MESSAGES, recent};
use super::*;
use async_trait::async_trait;
use weft_core::model::{ChunkStream, ModelClient, ModelError, ModelRequest, ModelSummary};

fn tool_use(id: &str) -> Message {
    Message {
        role: Role::Assistant,
        parts: vec![Part::ToolUse {
            id: ToolCallId::new(id),
            name: "t.x".into(),
            input: json!({}).into(),
        }],
    }
}

fn tool_result(id: &str, text: &str) -> Message {
    Message {
        role: Role::Tool,
        parts: vec![Part::ToolResult {
            tool_use_id: ToolCallId::new(id),
            content: vec![Part::Text { text: text.into() }],
            is_error: false,
        }],
    }
}

fn size(m: &Message) -> usize {
    serde_json::to_vec(m).map(|v| v.len()).unwrap_or(0)
}

#[test]
fn the_window_keeps_the_last_twenty_messages() {
    let msgs: Vec<Message> = (0..30).map(|i| Message::user(format!("m{i}"))).collect();
    let refs: Vec<&Message> = msgs.iter().collect();
    let got = recent(&refs);
    assert_eq!(got.len(), MAX_MESSAGES);
    assert_eq!(got[0], Message::user("m10"));
    assert_eq!(got[19], Message::user("m29"));
}

#[test]
fn the_window_stops_at_the_first_message_over_the_byte_budget() {
    let big = Message::user("x".repeat(MAX_BYTES / 2));
    let msgs = [
        Message::user("old"),
        big.clone(),
        big.clone(),
        Message::user("new"),
    ];
    let refs: Vec<&Message> = msgs.iter().collect();
    let got = recent(&refs);
    // Two halves plus "new" do not fit; the walk stops there (contiguous),
    // so "old" is not taken either.
    assert_eq!(got, vec![big, Message::user("new")]);
    assert!(got.iter().map(size).sum::<usize>() <= MAX_BYTES);
}

#[test]
fn the_window_drops_results_whose_call_fell_outside_and_system_messages() {
    let mut msgs = vec![Message::system("sys"), tool_use("a")];
    msgs.extend((0..MAX_MESSAGES - 1).map(|i| Message::user(format!("u{i}"))));
    msgs.insert(2, tool_result("a", "r"));
    msgs.push(tool_use("b"));
    let refs: Vec<&Message> = msgs.iter().collect();
    let got = recent(&refs);
    // The window starts at the result of `a`, whose call is outside: the
    // result is dropped; `b` has no result in the window: dropped too.
    assert!(got.iter().all(|m| m.role == Role::User));
    assert_eq!(got.len(), MAX_MESSAGES - 1);
}

#[test]
fn the_window_keeps_answered_calls_with_their_results() {
    let msgs = vec![Message::user("go"), tool_use("a"), tool_result("a", "r")];
    let refs: Vec<&Message> = msgs.iter().collect();
    assert_eq!(recent(&refs), msgs);
}

#[test]
fn the_window_is_bounded_and_never_orphans_a_result_for_any_length() {
    for n in 0..60usize {
        let mut msgs = Vec::new();
        for i in 0..n {
            let id = format!("c{i}");
            msgs.push(Message::user("y".repeat((i * 37) % 900)));
            msgs.push(tool_use(&id));
            msgs.push(tool_result(&id, &"z".repeat((i * 53) % 700)));
        }
        let refs: Vec<&Message> = msgs.iter().collect();
        let got = recent(&refs);
        assert!(got.len() <= MAX_MESSAGES);
        assert!(got.iter().map(size).sum::<usize>() <= MAX_BYTES);
        // Contiguous: the window is a suffix of the conversation.
        assert_eq!(&msgs[msgs.len() - got.len()..], &got[..]);
        if let Some(first) = got.first() {
            assert_ne!(first.role, Role::Tool);
        }
    }
}

/// A model the pure tests never call.
struct NoModel;

#[async_trait]
impl ModelClient for NoModel {
    fn id(&self) -> &str {
        "test/none"
    }
    async fn complete(&self, _: &ModelRequest) -> Result<ModelSummary, ModelError> {
        Err(ModelError::Config {
            message: "not called".into(),
        })
    }
    async fn stream(&self, _: &ModelRequest) -> Result<ChunkStream, ModelError> {
        Err(ModelError::Config {
            message: "not called".into(),
        })
    }
}

fn config() -> AdvisorConfig {
    let model = Arc::new(NoModel);
    let mut c = AdvisorConfig::new(model, std::num::NonZeroU32::MIN);
    c.system = Some(format!("Be helpful.\n\n{GUIDANCE}"));
    c.thinking_budget = Some(1024);
    c
}

#[test]
fn the_request_strips_the_guidance_and_ends_with_the_question() {
    let msgs: Vec<Arc<Message>> = vec![
        Arc::new(Message::system(format!("Rules.\n\n{GUIDANCE}"))),
        Arc::new(Message::user("build it")),
    ];
    let req = request(&config(), &msgs, "which approach?");
    assert_eq!(
        req.system.as_deref(),
        Some(format!("Be helpful.\n\nRules.\n\n{SYSTEM}").as_str())
    );
    assert_eq!(
        req.messages,
        vec![Message::user("build it"), Message::user("which approach?")]
    );
    assert!(req.tools.is_empty());
    assert_eq!(req.max_tokens, Some(DEFAULT_MAX_OUTPUT_TOKENS));
    assert_eq!(req.thinking_budget, Some(1024));
}

#[test]
fn the_request_renders_tool_exchanges_as_text_and_defines_no_tools() {
    let msgs: Vec<Arc<Message>> = vec![
        Arc::new(Message::user("add them")),
        Arc::new(tool_use("a")),
        Arc::new(tool_result("a", "5")),
    ];
    let req = request(&config(), &msgs, "next?");
    assert!(req.tools.is_empty());
    let blocks = req.messages.iter().flat_map(|m| m.parts.iter());
    assert!(
        blocks
            .clone()
            .all(|p| !matches!(p, Part::ToolUse { .. } | Part::ToolResult { .. })),
        "{:?}",
        req.messages
    );
    let texts: Vec<String> = req.messages.iter().map(Message::joined_text).collect();
    assert!(texts[1].starts_with("[called `t.x` with "), "{texts:?}");
    assert_eq!(texts[2], "[`t.x` returned: 5]");
    assert_eq!(req.messages[2].role, Role::User);
}
