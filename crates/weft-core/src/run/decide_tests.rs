//! Tests of the decisions the machine makes for its driver: tools called
//! alone, what child runs may use, which calls run again after a crash,
//! showing an answer that was not streamed, and saying how an invalid call
//! is resolved.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::tests::TestCatalog;
use super::*;
use crate::event::EventKind;
use crate::message::Message;
use crate::planner::{PlanResult, ToolCallRequest};
use crate::time::Timestamp;
use crate::tool::{ToolError, ToolIdent, ToolOutput, ToolResultBody};

fn t(ms: u64) -> Timestamp {
    Timestamp::from_millis(ms)
}

fn machine(policy: Policy) -> RunMachine {
    RunMachine::new(
        RunConfig::new("agent", "session", vec![Message::user("go")]).with_policy(policy),
        t(0),
    )
}

fn call(id: &str, tool: &str) -> ToolCallRequest {
    let args = match tool {
        "calc.add" => json!({"a": 1, "b": 2}),
        _ => json!({}),
    };
    ToolCallRequest::new(tool, args).with_id(id)
}

fn pending(m: &mut RunMachine, now: Timestamp) -> Vec<ToolCall> {
    match m.next_step(now) {
        Step::ExecuteTools { calls } => calls.iter().cloned().collect(),
        other => panic!("expected tool calls, got {other:?}"),
    }
}

fn error_of(output: &ToolOutput) -> &ToolError {
    match &output.result {
        ToolResultBody::Error(e) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

fn finished(events: &[EventKind]) -> Vec<Arc<ToolOutput>> {
    events
        .iter()
        .filter_map(|e| match e {
            EventKind::ToolFinished { output } => Some(output.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_turn_calling_an_exclusive_tool_beside_others_runs_none_of_its_calls() {
    let cat = TestCatalog::new();
    let policy = Policy {
        exclusive_tools: [ToolIdent::new("calc.echo")].into(),
        max_tool_calls: NonZeroU32::new(5),
        ..Policy::default()
    };
    let mut m = machine(policy);
    let _ = m.next_step(t(0));
    let mixed = vec![call("1", "calc.echo"), call("2", "calc.add")];
    m.plan_result(PlanResult::tool_calls(mixed), t(1), &cat)
        .unwrap();
    let events: Vec<EventKind> = m.drain_events().collect();
    let outputs = finished(&events);
    let messages: Vec<&str> = outputs
        .iter()
        .map(|o| error_of(o).message.as_str())
        .collect();
    assert_eq!(
        messages,
        [
            "`calc.echo` must be called alone",
            "`calc.add` was skipped because `calc.echo` must be called alone",
        ]
    );
    assert!(
        outputs
            .iter()
            .all(|o| error_of(o).code == ToolError::NOT_EXECUTED)
    );
    // Nothing ran, so nothing counts against the caps; the planner plans again.
    assert_eq!(m.tool_calls_made(), 0);
    assert!(matches!(m.next_step(t(2)), Step::Plan { .. }));
    // Called alone, the tool runs.
    m.plan_result(
        PlanResult::tool_calls(vec![call("3", "calc.echo")]),
        t(3),
        &cat,
    )
    .unwrap();
    let calls = pending(&mut m, t(3));
    assert_eq!(calls.len(), 1);
    assert_eq!(m.tool_calls_made(), 1);
}

#[test]
fn a_child_may_use_what_the_parent_s_caps_leave() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy {
        time_budget: Some(Duration::from_secs(10)),
        max_tool_calls: NonZeroU32::new(5),
        max_turns: NonZeroU32::new(3),
        ..Policy::default()
    });
    let _ = m.next_step(t(0));
    let calls = vec![call("1", "calc.add"), call("2", "calc.echo")];
    m.plan_result(PlanResult::tool_calls(calls), t(1_000), &cat)
        .unwrap();
    let _ = pending(&mut m, t(1_000));
    let allowance = m.child_allowance(t(4_000));
    assert_eq!(allowance.time_left, Some(Duration::from_secs(6)));
    assert_eq!(allowance.tool_calls_left, Some(3));
    assert_eq!(allowance.turns_left, Some(2));
    // Without caps, a child is not bounded by its parent.
    let free = machine(Policy::default()).child_allowance(t(4_000));
    assert_eq!(free, crate::tool::child::ChildAllowance::default());
}

#[test]
fn after_a_crash_only_idempotent_calls_run_again() {
    let mut cat = TestCatalog::new().with_tool("files.read");
    cat.set_idempotent("files.read");
    let mut m = machine(Policy::default());
    let _ = m.next_step(t(0));
    let calls = vec![
        call("1", "calc.add"),
        call("2", "files.read"),
        call("3", "calc.echo"),
    ];
    m.plan_result(PlanResult::tool_calls(calls), t(1), &cat)
        .unwrap();
    let running = pending(&mut m, t(1));
    // `calc.echo` finished before the crash.
    m.tool_result(
        ToolOutput::ok(
            running[2].id.clone(),
            running[2].name.clone(),
            running[2].payload.clone(),
            json!("echo"),
        ),
        t(2),
    )
    .unwrap();
    let _ = m.drain_events().count();
    // The process dies; another takes the run back from its snapshot.
    let mut m: RunMachine = serde_json::from_value(serde_json::to_value(&m).unwrap()).unwrap();
    assert_eq!(m.recover(&cat, t(5)), 1);
    let events: Vec<EventKind> = m.drain_events().collect();
    let outputs = finished(&events);
    assert_eq!(outputs.len(), 1);
    assert_eq!(outputs[0].name.as_str(), "calc.add");
    let e = error_of(&outputs[0]);
    assert_eq!(e.code, ToolError::UNAVAILABLE);
    assert!(e.message.contains("interrupted by a restart"), "{e:?}");
    assert!(outputs[0].retry_hint.is_some());
    let again: Vec<String> = pending(&mut m, t(5))
        .iter()
        .map(|c| c.name.to_string())
        .collect();
    assert_eq!(again, ["files.read"]);
    // Outside a batch there is nothing to take back.
    let mut planning = machine(Policy::default());
    let _ = planning.drain_events().count();
    assert_eq!(planning.recover(&cat, t(0)), 0);
    assert!(!planning.has_events());
}

#[test]
fn an_answer_that_was_not_streamed_is_shown_whole_before_the_run_ends() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    let _ = m.next_step(t(0));
    let _ = m.drain_events().count();
    m.plan_result(PlanResult::final_text("all done"), t(1), &cat)
        .unwrap();
    let events: Vec<EventKind> = m.drain_events().collect();
    assert!(matches!(
        events.as_slice(),
        [EventKind::AssistantChunk { text }, EventKind::RunFinished { .. }] if text == "all done"
    ));
    // A streamed answer was shown as it came: the machine adds nothing.
    let mut m = machine(Policy::default());
    let _ = m.next_step(t(0));
    let _ = m.drain_events().count();
    let mut streamed = PlanResult::final_text("all done");
    streamed.streamed = true;
    m.plan_result(streamed, t(1), &cat).unwrap();
    let events: Vec<EventKind> = m.drain_events().collect();
    assert!(matches!(events.as_slice(), [EventKind::RunFinished { .. }]));
}

#[test]
fn resolving_an_invalid_call_says_which_call_why_and_how() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    let _ = m.next_step(t(0));
    let _ = m.drain_events().count();
    let outcome = m
        .plan_result(
            PlanResult::tool_calls(vec![call("1", "calc.nope")]),
            t(1),
            &cat,
        )
        .unwrap();
    assert!(matches!(outcome, PlanOutcome::NeedsResolution(_)));
    let retry = Resolution::Retry {
        feedback: "no such tool".into(),
    };
    m.resolve_or_fail(retry, t(1), &cat).unwrap();
    let thought = m.drain_events().find_map(|e| match e {
        EventKind::PlannerThought { text, labels } => Some((text, labels)),
        _ => None,
    });
    let (text, labels) = thought.expect("a planner thought");
    assert_eq!(
        labels.get("kind").map(String::as_str),
        Some("invalid_tool_call")
    );
    assert!(text.starts_with("invalid call `calc.nope` (1):"), "{text}");
    assert!(text.ends_with("resolution: retry"), "{text}");
}

#[test]
fn charged_outputs_are_counted_per_tool_and_survive_a_snapshot() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    let echo = ToolIdent::new("calc.echo");
    for (turn, id) in ["1", "2", "3"].into_iter().enumerate() {
        let now = t(10 * turn as u64);
        let _ = m.next_step(now);
        m.plan_result(
            PlanResult::tool_calls(vec![call(id, "calc.echo")]),
            now,
            &cat,
        )
        .unwrap();
        let calls = pending(&mut m, now);
        let out = ToolOutput::ok(calls[0].id.clone(), echo.clone(), json!({}), json!("ok"));
        // The second call's output spends nothing (a failed advice, say).
        let out = if id == "2" { out } else { out.charged() };
        m.tool_result(out, now).unwrap();
        assert_eq!(m.uses_of(&ToolIdent::new("calc.add")), 0);
    }
    assert_eq!(m.uses_of(&echo), 2);
    let restored: RunMachine = serde_json::from_value(serde_json::to_value(&m).unwrap()).unwrap();
    assert_eq!(restored.uses_of(&echo), 2);
    assert!(m.state().is_empty(), "the count is typed, not a state key");
}

#[test]
fn an_await_is_not_a_pause_and_old_logs_are_read_the_same() {
    use crate::awaiting::{AwaitItem, Clarification};
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    let _ = m.next_step(t(0));
    let item = AwaitItem::Clarification(Clarification {
        id: crate::AwaitItemId::new("q1"),
        question: "which?".into(),
        missing_fields: vec![],
        restrict_to_tool: None,
        example_input: None,
        clarifying_prompt: None,
    });
    m.plan_result(PlanResult::await_items(vec![item]), t(1), &cat)
        .unwrap();
    let mut log: Vec<EventKind> = m.drain_events().collect();
    assert!(
        log.iter()
            .any(|e| matches!(e, EventKind::AwaitRequested { .. }))
    );
    assert!(
        !log.iter().any(|e| matches!(e, EventKind::RunPaused { .. })),
        "awaiting answers is said by the await alone: {log:?}"
    );
    let p = RunProjection::of(&log);
    assert!(!p.paused);
    assert_eq!(p.awaiting.len(), 1);

    // A log written before the split has the await's pause right after it.
    let at = log
        .iter()
        .position(|e| matches!(e, EventKind::AwaitRequested { .. }))
        .unwrap();
    let mut old = log.clone();
    old.insert(
        at + 1,
        EventKind::RunPaused {
            reason: "awaiting answers".into(),
        },
    );
    assert!(!RunProjection::of(&old).paused);

    // A person's pause, while the run awaits, is one.
    m.pause(t(2)).unwrap();
    log.extend(m.drain_events());
    assert!(RunProjection::of(&log).paused);
}

#[test]
fn a_running_call_s_child_is_linked_by_the_machine_and_only_while_it_runs() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    let _ = m.next_step(t(0));
    let (child, agent) = (crate::RunId::new("p.1"), crate::AgentId::new("helper"));
    // Nothing runs yet: no call to link.
    assert!(
        m.child_linked(&"1".into(), child.clone(), agent.clone())
            .is_err()
    );
    m.plan_result(
        PlanResult::tool_calls(vec![call("1", "calc.echo")]),
        t(1),
        &cat,
    )
    .unwrap();
    let calls = pending(&mut m, t(1));
    let _ = m.drain_events().count();
    assert!(
        m.child_linked(&"9".into(), child.clone(), agent.clone())
            .is_err()
    );
    m.child_linked(&calls[0].id, child.clone(), agent.clone())
        .unwrap();
    let events: Vec<EventKind> = m.drain_events().collect();
    assert!(matches!(
        events.as_slice(),
        [EventKind::ChildRunLinked { tool_call_id, child_run_id, agent_id }]
            if tool_call_id == &calls[0].id && child_run_id == &child && agent_id == &agent
    ));
    let out = ToolOutput::ok(
        calls[0].id.clone(),
        ToolIdent::new("calc.echo"),
        json!({}),
        json!("ok"),
    );
    m.tool_result(out, t(2)).unwrap();
    // The call has its result: a late link is refused.
    assert!(m.child_linked(&calls[0].id, child, agent).is_err());
}
