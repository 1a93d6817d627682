use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::ids::ToolCallId;

fn conversation(turns: usize) -> Vec<Message> {
    (1..=turns)
        .flat_map(|i| {
            [
                Message::user(format!("q{i}")),
                Message::assistant(format!("a{i}")),
            ]
        })
        .collect()
}

fn texts(messages: &[Message]) -> Vec<String> {
    messages.iter().map(Message::joined_text).collect()
}

#[test]
fn last_turns_keeps_the_most_recent_turns_and_drops_the_rest() {
    let s = select_history(&HistoryPolicy::LastTurns { turns: 2 }, conversation(4));
    assert_eq!(texts(&s.kept), ["q3", "a3", "q4", "a4"]);
    assert!(s.older.is_empty());
}

#[test]
fn zero_turns_keeps_nothing_and_fewer_turns_keep_all() {
    let none = select_history(&HistoryPolicy::LastTurns { turns: 0 }, conversation(3));
    assert!(none.kept.is_empty() && none.older.is_empty());
    let all = select_history(&HistoryPolicy::LastTurns { turns: 9 }, conversation(3));
    assert_eq!(all.kept.len(), 6);
}

#[test]
fn a_turn_runs_from_one_user_message_to_the_next() {
    // A reply to a clarification is a user message, so it starts a turn.
    let mut messages = conversation(1);
    messages.extend([
        Message::user("q2"),
        Message::assistant("which one?"),
        Message::user("the first"),
        Message::assistant("a2"),
    ]);
    let two = select_history(&HistoryPolicy::LastTurns { turns: 2 }, messages.clone());
    assert_eq!(texts(&two.kept), ["q2", "which one?", "the first", "a2"]);
    let one = select_history(&HistoryPolicy::LastTurns { turns: 1 }, messages);
    assert_eq!(texts(&one.kept), ["the first", "a2"]);
}

#[test]
fn keep_all_is_bounded() {
    let s = select_history(
        &HistoryPolicy::KeepAll,
        conversation(MAX_KEEP_TURNS as usize + 5),
    );
    assert_eq!(s.kept.len(), 2 * MAX_KEEP_TURNS as usize);
    assert_eq!(s.kept[0].joined_text(), "q6");
}

#[test]
fn summarize_hands_the_older_turns_over() {
    let policy = HistoryPolicy::Summarize {
        keep_turns: 1,
        model: None,
    };
    let s = select_history(&policy, conversation(3));
    assert_eq!(texts(&s.older), ["q1", "a1", "q2", "a2"]);
    assert_eq!(texts(&s.kept), ["q3", "a3"]);
    let request = summary_request(&s.older);
    let asked = request.messages[0].joined_text();
    assert!(
        asked.contains("User: q1\nAssistant: a1\nUser: q2"),
        "{asked}"
    );
    assert_eq!(request.max_tokens, Some(SUMMARY_MAX_TOKENS));
    assert!(
        summary_message(" it was q1 \n")
            .joined_text()
            .ends_with("\nit was q1")
    );
}

#[test]
fn the_default_is_bounded_and_policies_read_as_tables() {
    assert_eq!(HistoryPolicy::default().keep_turns(), DEFAULT_KEEP_TURNS);
    let p: HistoryPolicy =
        serde_json::from_value(json!({"mode": "summarize", "keep_turns": 3, "model": "m"}))
            .unwrap();
    assert_eq!(
        p,
        HistoryPolicy::Summarize {
            keep_turns: 3,
            model: Some("m".into())
        }
    );
    assert!(serde_json::from_value::<HistoryPolicy>(json!({"mode": "last_turns"})).is_err());
    assert_eq!(
        HistoryPolicy::LastTurns { turns: 10_000 }.keep_turns(),
        MAX_KEEP_TURNS
    );
}

#[test]
fn session_messages_keep_the_conversation_without_tool_turns() {
    let id = ToolCallId::new("c1");
    let run = vec![
        Message::user("add 2 and 3"),
        Message {
            role: Role::Assistant,
            parts: vec![
                Part::Text {
                    text: "Let me add.".into(),
                },
                Part::ToolUse {
                    id: id.clone(),
                    name: "calc.add".into(),
                    input: Arc::new(json!({"a": 2, "b": 3})),
                },
            ],
        },
        Message {
            role: Role::Tool,
            parts: vec![Part::ToolResult {
                tool_use_id: id,
                content: vec![Part::Text { text: "5".into() }],
                is_error: false,
            }],
        },
        Message::assistant("It is 5."),
    ];
    let kept = session_messages(&run);
    assert_eq!(kept.len(), 2);
    assert_eq!(kept[0], Message::user("add 2 and 3"));
    assert_eq!(kept[1].role, Role::Assistant);
    assert_eq!(kept[1].joined_text(), "Let me add.It is 5.");
    assert_eq!(kept[1].parts.len(), 2);
}
