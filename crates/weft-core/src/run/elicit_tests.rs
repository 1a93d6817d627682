//! Elicitations in the run machine and their answers' validation: asked by a
//! running call, answered (or withdrawn) while the batch executes.

use serde_json::{Value, json};

use super::tests::TestCatalog;
use super::*;
use crate::awaiting::{AnswerError, AwaitAnswer, AwaitItem, Elicitation};
use crate::elicitation::{ElicitationAction, ElicitationMode, ElicitationRequest};
use crate::event::EventKind;
use crate::ids::{AwaitItemId, ToolCallId};
use crate::message::Message;
use crate::planner::{PlanResult, ToolCallRequest};
use crate::time::Timestamp;
use crate::tool::{ToolOutput, ToolResultBody};

fn t(ms: u64) -> Timestamp {
    Timestamp::from_millis(ms)
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer"},
            "color": {"type": "string", "enum": ["red", "green"]},
            "size": {"type": "string", "oneOf": [{"const": "s"}, {"const": "m"}]},
            "ok": {"type": "boolean"},
            "score": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}
        },
        "required": ["name"]
    })
}

fn form() -> ElicitationRequest {
    ElicitationRequest::form("who are you?", schema())
}

fn accept(content: Value) -> AwaitAnswer {
    AwaitAnswer::Elicitation {
        action: ElicitationAction::Accept,
        content: Some(content),
    }
}

/// A machine executing a batch of calls `c1` and `c2`, its events drained.
fn executing() -> RunMachine {
    let cat = TestCatalog::new();
    let mut m = RunMachine::new(
        RunConfig::new("agent", "session", vec![Message::user("go")]),
        t(0),
    );
    let calls = vec![
        ToolCallRequest::new("calc.echo", json!({"n": 1})).with_id("c1"),
        ToolCallRequest::new("calc.echo", json!({"n": 2})).with_id("c2"),
    ];
    m.plan_result(PlanResult::tool_calls(calls), t(1), &cat)
        .unwrap();
    assert_eq!(m.phase_name(), PhaseName::Executing);
    m.drain_events().for_each(drop);
    m
}

fn ok(id: &str) -> ToolOutput {
    ToolOutput::ok(
        ToolCallId::new(id),
        "calc.echo".into(),
        json!({}),
        json!("done"),
    )
}

fn item(mode: ElicitationMode) -> AwaitItem {
    AwaitItem::Elicitation(Elicitation {
        id: "e".into(),
        tool_call_id: "c".into(),
        tool: "mcp.ask".into(),
        message: "?".into(),
        mode,
    })
}

#[test]
fn form_answers_are_checked_field_by_field() {
    let it = item(ElicitationMode::Form {
        requested_schema: schema(),
    });
    let err = |v: Value| it.validate(&accept(v)).unwrap_err();
    it.validate(&accept(json!({"name": "Ada"}))).unwrap();
    it.validate(&accept(json!({
        "name": "Ada", "age": 36, "color": "red", "size": "m", "ok": true,
        "score": 1.5, "tags": ["a", "b"]
    })))
    .unwrap();
    let missing = err(json!({"age": 3}));
    assert_eq!(
        missing,
        AnswerError::MissingElicitationField {
            field: "name".into()
        }
    );
    assert_eq!(missing.field(), Some("name"));
    assert_eq!(
        err(json!({"name": 3})),
        AnswerError::ElicitationFieldType {
            field: "name".into(),
            expected: "a string".into()
        }
    );
    assert_eq!(err(json!({"name": "A", "age": 1.5})).field(), Some("age"));
    assert_eq!(err(json!({"name": "A", "ok": "yes"})).field(), Some("ok"));
    assert_eq!(
        err(json!({"name": "A", "color": "blue"})),
        AnswerError::ElicitationValueNotOffered {
            field: "color".into(),
            value: "blue".into()
        }
    );
    assert_eq!(
        err(json!({"name": "A", "size": "xl"})).field(),
        Some("size")
    );
    assert_eq!(
        err(json!({"name": "A", "tags": ["c"]})).field(),
        Some("tags")
    );
    assert_eq!(
        err(json!({"name": "A", "shoe": 42})),
        AnswerError::UnknownElicitationField {
            field: "shoe".into()
        }
    );
    assert_eq!(err(json!("Ada")), AnswerError::ElicitationContentNotObject);
    assert_eq!(
        it.validate(&AwaitAnswer::Elicitation {
            action: ElicitationAction::Accept,
            content: None
        }),
        Err(AnswerError::ElicitationContentNotObject)
    );
}

#[test]
fn decline_cancel_and_url_accept_carry_no_content_and_kinds_must_match() {
    let form = item(ElicitationMode::Form {
        requested_schema: schema(),
    });
    let url = item(ElicitationMode::Url {
        url: "https://x.test".into(),
        elicitation_id: "1".into(),
    });
    for action in [ElicitationAction::Decline, ElicitationAction::Cancel] {
        let bare = AwaitAnswer::Elicitation {
            action,
            content: None,
        };
        form.validate(&bare).unwrap();
        url.validate(&bare).unwrap();
        let with = AwaitAnswer::Elicitation {
            action,
            content: Some(json!({})),
        };
        assert_eq!(
            form.validate(&with),
            Err(AnswerError::ElicitationContentNotAllowed { action })
        );
    }
    url.validate(&AwaitAnswer::Elicitation {
        action: ElicitationAction::Accept,
        content: None,
    })
    .unwrap();
    assert!(url.validate(&accept(json!({}))).is_err());
    assert_eq!(
        form.validate(&AwaitAnswer::Clarification { text: "hi".into() }),
        Err(AnswerError::WrongKind {
            expected: crate::awaiting::AwaitKind::Elicitation,
            got: crate::awaiting::AwaitKind::Clarification
        })
    );
}

#[test]
fn item_and_answer_wire_shapes_round_trip() {
    let it = item(ElicitationMode::Form {
        requested_schema: json!({"type": "object"}),
    });
    let wire = serde_json::to_value(&it).unwrap();
    assert_eq!(
        wire,
        json!({"kind": "elicitation", "id": "e", "tool_call_id": "c", "tool": "mcp.ask",
               "message": "?", "mode": "form", "requested_schema": {"type": "object"}})
    );
    assert_eq!(serde_json::from_value::<AwaitItem>(wire).unwrap(), it);
    let answer: AwaitAnswer = serde_json::from_value(
        json!({"kind": "elicitation", "action": "accept", "content": {"name": "A"}}),
    )
    .unwrap();
    assert_eq!(answer, accept(json!({"name": "A"})));
    assert_eq!(
        answer.elicitation_response().unwrap().content,
        Some(json!({"name": "A"}))
    );
}

#[test]
fn a_running_call_asks_and_the_answer_reaches_the_machine() {
    let mut m = executing();
    let id = m.elicit(&"c1".into(), form(), t(2)).unwrap();
    let events: Vec<EventKind> = m.drain_events().collect();
    assert!(matches!(
        events.as_slice(),
        [EventKind::AwaitRequested { items }] if items.len() == 1 && items[0].id() == &id
    ));
    assert_eq!(m.phase_name(), PhaseName::Executing);
    assert_eq!(m.elicitations().len(), 1);
    assert_eq!(m.elicitations()[0].tool.as_str(), "calc.echo");

    // A bad answer is typed and changes nothing.
    let before = m.clone();
    let err = m.answer(&id, accept(json!({"age": 1})), t(3)).unwrap_err();
    assert!(matches!(
        err,
        RunError::InvalidAnswer { error: AnswerError::MissingElicitationField { ref field }, .. }
            if field == "name"
    ));
    let wrong = m.answer(&id, AwaitAnswer::Clarification { text: "x".into() }, t(3));
    assert!(matches!(
        wrong,
        Err(RunError::InvalidAnswer {
            error: AnswerError::WrongKind { .. },
            ..
        })
    ));
    assert_eq!(m, before);

    let progress = m.answer(&id, accept(json!({"name": "Ada"})), t(3)).unwrap();
    assert_eq!(progress, AwaitProgress::Satisfied);
    assert!(m.elicitations().is_empty());
    assert!(matches!(
        m.drain_events().collect::<Vec<_>>().as_slice(),
        [EventKind::AwaitSatisfied { item_id, .. }] if item_id == &id
    ));
    assert_eq!(
        m.answer(&id, accept(json!({"name": "Ada"})), t(4)),
        Err(RunError::WrongPhase {
            input: "answer",
            phase: PhaseName::Executing
        })
    );
    // The batch goes on as usual.
    m.tool_result(ok("c1"), t(5)).unwrap();
    m.tool_result(ok("c2"), t(5)).unwrap();
    assert_eq!(m.phase_name(), PhaseName::Planning);
}

#[test]
fn only_running_calls_ask_and_at_most_the_bound_are_pending() {
    let mut m = executing();
    assert_eq!(
        m.elicit(&"nope".into(), form(), t(2)),
        Err(RunError::UnknownToolCall("nope".into()))
    );
    m.tool_result(ok("c2"), t(2)).unwrap();
    assert_eq!(
        m.elicit(&"c2".into(), form(), t(2)),
        Err(RunError::UnknownToolCall("c2".into()))
    );
    for _ in 0..MAX_PENDING_ELICITATIONS {
        m.elicit(&"c1".into(), form(), t(2)).unwrap();
    }
    assert_eq!(
        m.elicit(&"c1".into(), form(), t(2)),
        Err(RunError::TooManyElicitations {
            max: MAX_PENDING_ELICITATIONS
        })
    );
    // Ids are unique within the run, even across a snapshot.
    let json = serde_json::to_string(&m).unwrap();
    let copy: RunMachine = serde_json::from_str(&json).unwrap();
    assert_eq!(copy, m);
    let ids: std::collections::BTreeSet<AwaitItemId> =
        m.elicitations().iter().map(|e| e.id.clone()).collect();
    assert_eq!(ids.len(), MAX_PENDING_ELICITATIONS);
    // A planner cannot ask one.
    let mut p = RunMachine::new(
        RunConfig::new("agent", "session", vec![Message::user("go")]),
        t(0),
    );
    let items = vec![m.elicitations()[0].clone()]
        .into_iter()
        .map(AwaitItem::Elicitation)
        .collect();
    assert_eq!(
        p.plan_result(PlanResult::await_items(items), t(1), &TestCatalog::new()),
        Err(RunError::ElicitationFromPlanner)
    );
}

#[test]
fn the_end_of_the_call_the_run_or_the_process_withdraws_pending_questions() {
    // The call's result withdraws its own questions only.
    let mut m = executing();
    let a = m.elicit(&"c1".into(), form(), t(2)).unwrap();
    let b = m.elicit(&"c2".into(), form(), t(2)).unwrap();
    m.drain_events().for_each(drop);
    m.tool_result(ok("c1"), t(3)).unwrap();
    let events: Vec<EventKind> = m.drain_events().collect();
    assert!(matches!(
        events.as_slice(),
        [EventKind::AwaitWithdrawn { item_id }, EventKind::ToolFinished { .. }] if item_id == &a
    ));
    assert_eq!(m.elicitations()[0].id, b);

    // A cancel withdraws the rest before the run's last event.
    m.cancel("stop").unwrap();
    let events: Vec<EventKind> = m.drain_events().collect();
    assert!(matches!(
        events.as_slice(),
        [EventKind::AwaitWithdrawn { item_id }, EventKind::RunFinished { .. }] if item_id == &b
    ));
    let log: Vec<EventKind> = Vec::new();
    assert!(RunProjection::of(&log).awaiting.is_empty());

    // A recovering driver withdraws what the dead process was asked.
    let mut m = executing();
    m.elicit(&"c1".into(), form(), t(2)).unwrap();
    let json = serde_json::to_string(&m).unwrap();
    let mut recovered: RunMachine = serde_json::from_str(&json).unwrap();
    assert_eq!(recovered.withdraw_elicitations(), 1);
    assert!(recovered.elicitations().is_empty());
    assert!(matches!(
        recovered.drain_events().collect::<Vec<_>>().as_slice(),
        [EventKind::AwaitWithdrawn { .. }]
    ));
    // The call itself is still pending: it may run (and ask) again.
    assert!(recovered.pending_call(&"c1".into()).is_some());
}

#[test]
fn the_projection_shows_pending_questions_beside_a_human_pause() {
    let mut m = executing();
    let id = m.elicit(&"c1".into(), form(), t(2)).unwrap();
    m.pause(t(2)).unwrap();
    let mut log: Vec<EventKind> = m.drain_events().collect();
    let p = RunProjection::of(&log);
    assert!(p.paused, "a pause right after a question is a human's");
    assert_eq!(p.awaiting.len(), 1);
    m.answer(&id, accept(json!({"name": "A"})), t(3)).unwrap();
    log.extend(m.drain_events());
    assert!(RunProjection::of(&log).awaiting.is_empty());
    m.tool_result(ok("c1"), t(4)).unwrap();
    let out = m.tool_outputs().len() + m.batch_results().count();
    assert_eq!(out, 1);
    assert!(matches!(
        m.batch_results().next().map(|o| &o.result),
        Some(ToolResultBody::Json(_))
    ));
}

#[test]
fn an_out_of_range_answer_changes_nothing_and_defaults_are_recorded() {
    let mut m = executing();
    let order = ElicitationRequest::form(
        "how many?",
        json!({"type": "object", "properties": {
            "quantity": {"type": "integer", "maximum": 100},
            "plan": {"type": "string", "enum": ["free", "pro"], "default": "free"}},
            "required": ["quantity"]}),
    );
    let id = m.elicit(&"c1".into(), order, t(2)).unwrap();
    m.drain_events().for_each(drop);
    let before = m.clone();
    let err = m
        .answer(&id, accept(json!({"quantity": 500})), t(3))
        .unwrap_err();
    assert!(matches!(
        err,
        RunError::InvalidAnswer { error: AnswerError::ElicitationConstraint { ref field, ref constraint, .. }, .. }
            if field == "quantity" && constraint == "maximum"
    ));
    assert_eq!(m, before);
    m.answer(&id, accept(json!({"quantity": 7})), t(3)).unwrap();
    let events: Vec<EventKind> = m.drain_events().collect();
    let [EventKind::AwaitSatisfied { answer, .. }] = events.as_slice() else {
        panic!("expected the answer recorded, got {events:?}");
    };
    assert_eq!(answer, &accept(json!({"quantity": 7, "plan": "free"})));
}

#[test]
fn a_tool_that_stops_waiting_withdraws_only_its_question() {
    let mut m = executing();
    let a = m.elicit(&"c1".into(), form(), t(2)).unwrap();
    let b = m.elicit(&"c1".into(), form(), t(2)).unwrap();
    m.drain_events().for_each(drop);
    assert!(m.withdraw_elicitation(&a));
    let events: Vec<EventKind> = m.drain_events().collect();
    assert!(matches!(
        events.as_slice(),
        [EventKind::AwaitWithdrawn { item_id }] if item_id == &a
    ));
    assert_eq!(m.elicitations().len(), 1);
    assert_eq!(m.elicitations()[0].id, b);
    // Gone already: nothing happens.
    assert!(!m.withdraw_elicitation(&a));
    assert_eq!(m.drain_events().count(), 0);
    // The call still runs, and its result withdraws the other question.
    m.tool_result(ok("c1"), t(3)).unwrap();
    assert!(m.elicitations().is_empty());
}
