use std::sync::Arc;

use proptest::prelude::*;
use serde_json::json;
use weft_core::ToolCallId;
use weft_core::message::{Message, Part, Role, Thinking};
use weft_core::model::{ModelRequest, ToolChoice};

use super::*;

fn call(id: &str, name: &str) -> Part {
    Part::ToolUse {
        id: ToolCallId::from_fmt(format_args!("{id}")),
        name: name.into(),
        input: Arc::new(json!({"a": 1})),
    }
}

fn result(id: &str, text: &str) -> Part {
    Part::ToolResult {
        tool_use_id: ToolCallId::from_fmt(format_args!("{id}")),
        content: vec![text_part(text)],
        is_error: false,
    }
}

fn text_part(text: &str) -> Part {
    Part::Text { text: text.into() }
}

fn msg(role: Role, parts: Vec<Part>) -> Message {
    Message { role, parts }
}

fn req(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        messages,
        ..ModelRequest::default()
    }
}

fn tool_loop() -> Vec<Message> {
    vec![
        Message::user("2+3?"),
        msg(
            Role::Assistant,
            vec![text_part("Adding."), call("c1", "calc__add")],
        ),
        msg(Role::Tool, vec![result("c1", "5")]),
        Message::assistant("5"),
    ]
}

#[test]
fn a_well_formed_request_is_borrowed() {
    let r = req(tool_loop());
    assert!(matches!(conform(&r), Cow::Borrowed(_)));
}

#[test]
fn a_call_without_a_result_is_answered_before_the_next_user_text() {
    let r = req(vec![
        Message::user("go"),
        msg(Role::Assistant, vec![call("c1", "t"), call("c2", "t")]),
        msg(Role::Tool, vec![result("c1", "one")]),
        Message::user("and now?"),
    ]);
    let out = conform(&r).into_owned().messages;
    assert_eq!(out.len(), 4);
    assert_eq!(out[2].parts, vec![result("c1", "one")]);
    let Part::ToolResult {
        tool_use_id,
        is_error,
        content,
    } = &out[3].parts[0]
    else {
        panic!("expected the missing result first: {:?}", out[3]);
    };
    assert_eq!(tool_use_id.as_str(), "c2");
    assert!(*is_error);
    assert_eq!(content, &vec![text_part(NO_RESULT)]);
    assert_eq!(out[3].parts[1], text_part("and now?"));
}

#[test]
fn trailing_calls_and_calls_before_an_assistant_message_are_answered() {
    let r = req(vec![
        Message::user("go"),
        msg(Role::Assistant, vec![call("c1", "t")]),
        msg(Role::Assistant, vec![call("c2", "t")]),
    ]);
    let out = conform(&r).into_owned().messages;
    let roles: Vec<Role> = out.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::Tool
        ]
    );
}

#[test]
fn a_result_for_no_call_of_the_previous_message_is_kept_as_text() {
    let r = req(vec![
        Message::user("go"),
        msg(Role::Assistant, vec![text_part("hm")]),
        msg(Role::Tool, vec![result("old", "42")]),
    ]);
    let out = conform(&r).into_owned().messages;
    assert_eq!(
        out[2].parts,
        vec![text_part("[result of the earlier tool call old]: 42")]
    );
}

#[test]
fn empty_text_and_empty_messages_are_dropped() {
    let r = req(vec![
        Message::user("go"),
        msg(Role::Assistant, vec![text_part(""), call("c1", "t")]),
        msg(Role::Tool, vec![result("c1", "x"), text_part("")]),
        msg(Role::User, vec![text_part("")]),
    ]);
    let out = conform(&r).into_owned().messages;
    assert_eq!(out.len(), 3);
    assert_eq!(out[1].parts, vec![call("c1", "t")]);
}

#[test]
fn a_forced_tool_that_is_not_offered_becomes_auto() {
    let mut r = req(tool_loop());
    r.tools = declare_used_tools(&r).map(|(t, _)| t).unwrap_or_default();
    r.tool_choice = ToolChoice::Tool("nope".into());
    assert_eq!(conform(&r).tool_choice, ToolChoice::Auto);
    r.tool_choice = ToolChoice::Tool("calc__add".into());
    assert!(matches!(conform(&r), Cow::Borrowed(_)));
}

#[test]
fn tools_used_by_the_transcript_are_declared_and_forbidden_when_none_are_given() {
    let r = req(tool_loop());
    let (tools, choice) = declare_used_tools(&r).expect("the transcript calls a tool");
    assert_eq!(choice, ToolChoice::None);
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name.as_str(), "calc__add");
    assert_eq!(tools[0].input_schema, json!({"type": "object"}));
    // Given tools, or no tool blocks: nothing to declare.
    let mut given = req(tool_loop());
    given.tools = tools;
    assert!(declare_used_tools(&given).is_none());
    assert!(declare_used_tools(&req(vec![Message::user("hi")])).is_none());
}

#[test]
fn thinking_needs_a_signed_block_before_the_last_calls_and_no_forced_tool() {
    let signed = Part::Thinking(Thinking::Text {
        text: "hmm".into(),
        signature: Some("sig".into()),
    });
    let unsigned = Part::Thinking(Thinking::Text {
        text: "hmm".into(),
        signature: None,
    });
    let with = |first: Option<Part>| {
        let mut parts: Vec<Part> = first.into_iter().collect();
        parts.push(call("c1", "t"));
        req(vec![
            Message::user("go"),
            msg(Role::Assistant, parts),
            msg(Role::Tool, vec![result("c1", "x")]),
        ])
    };
    assert!(thinking_allowed(&with(Some(signed))));
    assert!(thinking_allowed(&with(Some(Part::Thinking(
        Thinking::Redacted { data: "x".into() }
    )))));
    assert!(!thinking_allowed(&with(Some(unsigned))));
    assert!(!thinking_allowed(&with(Some(text_part("Let me see.")))));
    assert!(!thinking_allowed(&with(None)));
    // An answer without calls needs no thinking block.
    assert!(thinking_allowed(&req(vec![
        Message::user("hi"),
        Message::assistant("hello"),
        Message::user("again"),
    ])));
    let mut forced = req(vec![Message::user("hi")]);
    forced.tools = declare_used_tools(&req(tool_loop()))
        .map(|(t, _)| t)
        .unwrap_or_default();
    forced.tool_choice = ToolChoice::Required;
    assert!(!thinking_allowed(&forced));
}

fn part() -> impl Strategy<Value = Part> {
    let id = prop::sample::select(vec!["c1", "c2", "c3"]);
    prop_oneof![
        prop::sample::select(vec!["", "hi"]).prop_map(text_part),
        id.clone().prop_map(|id| call(id, "t")),
        id.prop_map(|id| result(id, "r")),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    let role = prop::sample::select(vec![Role::User, Role::Assistant, Role::Tool, Role::System]);
    (role, prop::collection::vec(part(), 0..4)).prop_map(|(role, parts)| {
        // Only assistants call tools.
        let parts = parts
            .into_iter()
            .filter(|p| role == Role::Assistant || !matches!(p, Part::ToolUse { .. }))
            .collect();
        Message { role, parts }
    })
}

proptest! {
    /// Whatever the transcript, the conformed one keeps every shared rule,
    /// conforming it again changes nothing, and no text is lost.
    #[test]
    fn conformed_requests_keep_the_rules(messages in prop::collection::vec(message(), 0..8)) {
        let r = req(messages);
        let once = conform(&r).into_owned();
        prop_assert!(keeps_rules(&once.messages), "{:#?}", once.messages);
        prop_assert!(matches!(conform(&once), Cow::Borrowed(_)));
        let texts = |m: &[Message]| m.iter().flat_map(|m| m.parts.iter()).filter(|p| matches!(p, Part::Text { text } if !text.is_empty())).count();
        prop_assert!(texts(&once.messages) >= texts(&r.messages));
    }
}
