//! Scenario tests of the run machine: a scripted driver, a small catalog and a fake clock.

use std::num::NonZeroU32;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::awaiting::{AwaitAnswer, AwaitItem, Clarification, Question, QuestionOption, Questions};
use crate::ids::{AwaitItemId, ToolCallId};
use crate::message::{Message, Part, Role};
use crate::planner::{Decision, PlanResult, TerminationReason, ToolCallRequest};
use crate::time::Timestamp;
use crate::tool::{
    FieldIssue, FieldIssueKind, ToolError, ToolIdent, ToolOutput, ToolResultBody, ToolSpec,
};

/// A catalog of `calc.add` (requires integers `a` and `b`) and `calc.echo` (anything).
pub(crate) struct TestCatalog {
    specs: Vec<ToolSpec>,
}

impl TestCatalog {
    pub(crate) fn new() -> Self {
        let spec = |name: &str| ToolSpec {
            name: ToolIdent::new(name),
            description: String::new(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: Default::default(),
            tags: vec![],
        };
        Self {
            specs: vec![spec("calc.add"), spec("calc.echo")],
        }
    }

    /// This catalog with one more tool, which takes any object.
    pub(crate) fn with_tool(mut self, name: &str) -> Self {
        self.specs.push(ToolSpec {
            name: ToolIdent::new(name),
            description: String::new(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: Default::default(),
            tags: vec![],
        });
        self
    }

    /// Marks this catalog's tool `name` idempotent.
    pub(crate) fn set_idempotent(&mut self, name: &str) {
        for spec in self.specs.iter_mut().filter(|s| s.name.as_str() == name) {
            spec.annotations.idempotent = true;
        }
    }

    /// This catalog with `tags` on its tool `name`.
    pub(crate) fn with_tags(mut self, name: &str, tags: &[&str]) -> Self {
        for spec in self.specs.iter_mut().filter(|s| s.name.as_str() == name) {
            spec.tags = tags.iter().map(|t| (*t).to_owned()).collect();
        }
        self
    }
}

impl ToolCatalog for TestCatalog {
    fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.specs.iter().find(|s| s.name.as_str() == name)
    }

    fn names(&self) -> Vec<ToolIdent> {
        self.specs.iter().map(|s| s.name.clone()).collect()
    }

    fn validate(&self, spec: &ToolSpec, arguments: &Value) -> Result<(), Vec<FieldIssue>> {
        if spec.name.as_str() != "calc.add" {
            return Ok(());
        }
        let mut issues = Vec::new();
        for field in ["a", "b"] {
            match arguments.get(field) {
                None => issues.push(FieldIssue {
                    field: format!("/{field}"),
                    kind: FieldIssueKind::Missing,
                    message: format!("`{field}` is required"),
                }),
                Some(v) if !v.is_i64() => issues.push(FieldIssue {
                    field: format!("/{field}"),
                    kind: FieldIssueKind::WrongType,
                    message: format!("`{field}` must be an integer"),
                }),
                Some(_) => {}
            }
        }
        if issues.is_empty() {
            Ok(())
        } else {
            Err(issues)
        }
    }
}

fn t(ms: u64) -> Timestamp {
    Timestamp::from_millis(ms)
}

fn machine(policy: Policy) -> RunMachine {
    RunMachine::new(
        RunConfig::new("agent", "session", vec![Message::user("add things")]).with_policy(policy),
        t(0),
    )
}

fn add(id: &str, a: i64, b: i64) -> ToolCallRequest {
    ToolCallRequest::new("calc.add", json!({"a": a, "b": b})).with_id(id)
}

fn ok_for(call: &ToolCall) -> ToolOutput {
    ToolOutput::ok(
        call.id.clone(),
        call.name.clone(),
        call.payload.clone(),
        json!(1),
    )
}

fn pending_ids(m: &mut RunMachine, now: Timestamp) -> Vec<String> {
    match m.next_step(now) {
        Step::ExecuteTools { calls } => calls.iter().map(|c| c.id.to_string()).collect(),
        other => panic!("expected ExecuteTools, got {other:?}"),
    }
}

fn run_batch_ok(m: &mut RunMachine, now: Timestamp) {
    let calls: Vec<ToolCall> = match m.next_step(now) {
        Step::ExecuteTools { calls } => calls.iter().cloned().collect(),
        other => panic!("expected ExecuteTools, got {other:?}"),
    };
    for c in &calls {
        m.tool_result(ok_for(c), now).unwrap();
    }
}

fn error_texts(msg: &Message) -> Vec<(String, bool, String)> {
    msg.parts
        .iter()
        .map(|p| match p {
            Part::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                let text = match &content[0] {
                    Part::Text { text } => text.clone(),
                    other => format!("{other:?}"),
                };
                (tool_use_id.to_string(), *is_error, text)
            }
            other => panic!("expected tool result, got {other:?}"),
        })
        .collect()
}

#[test]
fn a_run_plans_executes_and_finishes() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    assert_eq!(
        m.next_step(t(1)),
        Step::Plan {
            kind: PlanKind::Start,
            finalize: None
        }
    );
    // Asking again without input gives the same step.
    assert_eq!(
        m.next_step(t(2)),
        Step::Plan {
            kind: PlanKind::Start,
            finalize: None
        }
    );
    let out = m
        .plan_result(PlanResult::tool_calls(vec![add("c1", 1, 2)]), t(3), &cat)
        .unwrap();
    assert_eq!(
        out,
        PlanOutcome::Continue {
            response_hook_suppressed: false
        }
    );
    assert_eq!(pending_ids(&mut m, t(4)), vec!["c1"]);
    assert_eq!(pending_ids(&mut m, t(4)), vec!["c1"]);
    run_batch_ok(&mut m, t(5));
    assert_eq!(
        m.next_step(t(6)),
        Step::Plan {
            kind: PlanKind::Resume,
            finalize: None
        }
    );
    let mut done = PlanResult::final_text("3");
    done.streamed = true;
    let out = m.plan_result(done, t(7), &cat).unwrap();
    assert_eq!(
        out,
        PlanOutcome::Continue {
            response_hook_suppressed: true
        }
    );
    let Step::Finish { outcome } = m.next_step(t(8)) else {
        panic!("not finished")
    };
    assert!(matches!(
        outcome,
        RunOutcome::Response {
            termination: None,
            ..
        }
    ));
    // Transcript: user, assistant tool use, tool result, final answer.
    let roles: Vec<Role> = m.transcript().iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        vec![Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(m.tool_outputs().len(), 1);
    assert_eq!(m.turn(), 2);
}

#[test]
fn tool_results_batch_rejects_missing_unknown_and_duplicate_ids() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    m.plan_result(
        PlanResult::tool_calls(vec![add("c1", 1, 1), add("c2", 2, 2)]),
        t(1),
        &cat,
    )
    .unwrap();
    let calls: Vec<ToolCall> = match m.next_step(t(1)) {
        Step::ExecuteTools { calls } => calls.iter().cloned().collect(),
        _ => unreachable!(),
    };
    let before = m.clone();
    assert_eq!(
        m.tool_results(vec![ok_for(&calls[0])], t(2)),
        Err(RunError::MissingToolResults(vec![ToolCallId::new("c2")]))
    );
    let mut stray = ok_for(&calls[0]);
    stray.tool_call_id = ToolCallId::new("nope");
    assert_eq!(
        m.tool_results(vec![ok_for(&calls[0]), stray], t(2)),
        Err(RunError::UnknownToolCall(ToolCallId::new("nope")))
    );
    assert_eq!(
        m.tool_results(vec![ok_for(&calls[0]), ok_for(&calls[0])], t(2)),
        Err(RunError::DuplicateToolResult(ToolCallId::new("c1")))
    );
    assert_eq!(m, before, "rejected inputs change nothing");
    // In any order.
    m.tool_results(vec![ok_for(&calls[1]), ok_for(&calls[0])], t(3))
        .unwrap();
    assert_eq!(m.phase_name(), PhaseName::Planning);
    // Results recorded in call order regardless of arrival order.
    let ids: Vec<&str> = m
        .tool_outputs()
        .iter()
        .map(|o| o.tool_call_id.as_str())
        .collect();
    assert_eq!(ids, vec!["c1", "c2"]);
    // A late duplicate is a typed error, not a panic.
    assert!(matches!(
        m.tool_result(ok_for(&calls[0]), t(4)),
        Err(RunError::WrongPhase { .. })
    ));
}

#[test]
fn inputs_in_the_wrong_phase_are_typed_errors() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    assert_eq!(
        m.resolve(Resolution::Fail, t(0), &cat),
        Err(RunError::WrongPhase {
            input: "resolve",
            phase: PhaseName::Planning
        })
    );
    assert!(matches!(
        m.answer(
            &AwaitItemId::new("x"),
            AwaitAnswer::Clarification { text: "y".into() },
            t(0)
        ),
        Err(RunError::WrongPhase {
            input: "answer",
            ..
        })
    ));
    m.plan_result(PlanResult::final_text("hi"), t(1), &cat)
        .unwrap();
    assert!(matches!(
        m.plan_result(PlanResult::final_text("again"), t(1), &cat),
        Err(RunError::WrongPhase { .. })
    ));
    assert!(m.cancel("late").is_err());
}

#[test]
fn tool_cap_trims_the_batch_then_forces_finalization() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy {
        max_tool_calls: NonZeroU32::new(3),
        ..Policy::default()
    });
    m.plan_result(
        PlanResult::tool_calls(vec![add("c1", 1, 1), add("c2", 1, 1)]),
        t(1),
        &cat,
    )
    .unwrap();
    run_batch_ok(&mut m, t(2));
    m.plan_result(
        PlanResult::tool_calls(vec![add("c3", 1, 1), add("c4", 1, 1)]),
        t(3),
        &cat,
    )
    .unwrap();
    assert_eq!(
        pending_ids(&mut m, t(3)),
        vec!["c3"],
        "only one call fits under the cap"
    );
    run_batch_ok(&mut m, t(4));
    let Step::Plan {
        kind: PlanKind::Resume,
        finalize: Some(term),
    } = m.next_step(t(5))
    else {
        panic!("expected a finalizing plan")
    };
    assert_eq!(term.reason, TerminationReason::ToolCap);
    assert_eq!(m.tool_calls_made(), 3);
    let last = m.transcript().last().unwrap();
    let results = error_texts(last);
    assert_eq!(results[1].0, "c4");
    assert!(results[1].1);
    assert!(results[1].2.contains("tool call cap"));
    // No further tool calls are accepted.
    assert_eq!(
        m.plan_result(PlanResult::tool_calls(vec![add("c5", 1, 1)]), t(6), &cat),
        Err(RunError::Finalizing)
    );
    m.plan_result(PlanResult::final_text("done"), t(6), &cat)
        .unwrap();
    let Step::Finish {
        outcome:
            RunOutcome::Response {
                termination: Some(term),
                ..
            },
    } = m.next_step(t(7))
    else {
        panic!("expected a response with termination")
    };
    assert_eq!(term.reason, TerminationReason::ToolCap);
}

#[test]
fn per_turn_cap_rejects_extra_calls_without_finalizing() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy {
        max_tool_calls_per_turn: NonZeroU32::new(1),
        ..Policy::default()
    });
    m.plan_result(
        PlanResult::tool_calls(vec![add("c1", 1, 1), add("c2", 1, 1)]),
        t(1),
        &cat,
    )
    .unwrap();
    assert_eq!(pending_ids(&mut m, t(1)), vec!["c1"]);
    run_batch_ok(&mut m, t(2));
    assert_eq!(
        m.next_step(t(3)),
        Step::Plan {
            kind: PlanKind::Resume,
            finalize: None
        }
    );
    let results = error_texts(m.transcript().last().unwrap());
    assert!(results[1].2.contains("at most 1 tool calls"));
}

#[test]
fn consecutive_failures_force_finalization() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy {
        max_consecutive_failures: NonZeroU32::new(2),
        ..Policy::default()
    });
    for (i, fail) in [true, false, true, true].into_iter().enumerate() {
        let id = format!("c{i}");
        m.plan_result(PlanResult::tool_calls(vec![add(&id, 1, 1)]), t(1), &cat)
            .unwrap();
        let call = m
            .pending_call(&ToolCallId::new(id.as_str()))
            .unwrap()
            .clone();
        let out = if fail {
            ToolOutput::error(
                call.id,
                call.name,
                call.payload,
                ToolError::new("boom", "failed"),
            )
        } else {
            ok_for(&call)
        };
        m.tool_result(out, t(2)).unwrap();
        let finalize = matches!(
            m.next_step(t(3)),
            Step::Plan {
                finalize: Some(_),
                ..
            }
        );
        assert_eq!(
            finalize,
            i == 3,
            "finalize only after two failures in a row (turn {i})"
        );
    }
    assert_eq!(
        m.termination().unwrap().reason,
        TerminationReason::FailureCap
    );
}

#[test]
fn time_budget_cancels_running_tools_and_grace_bounds_the_finalizer() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy {
        time_budget: Some(Duration::from_millis(100)),
        finalizer_grace: Duration::from_millis(50),
        ..Policy::default()
    });
    assert_eq!(m.poll_timeout(), Some(t(100)));
    m.plan_result(PlanResult::tool_calls(vec![add("c1", 1, 1)]), t(10), &cat)
        .unwrap();
    assert_eq!(pending_ids(&mut m, t(99)), vec!["c1"]);
    let Step::Plan {
        kind: PlanKind::Resume,
        finalize: Some(term),
    } = m.next_step(t(100))
    else {
        panic!("expected finalization at the budget")
    };
    assert_eq!(term.reason, TerminationReason::TimeBudget);
    assert_eq!(m.poll_timeout(), Some(t(150)));
    // The running call was answered as cancelled; a late result is rejected.
    let results = error_texts(m.transcript().last().unwrap());
    assert!(results[0].1 && results[0].2.contains("cancelled"));
    assert!(
        m.tool_result(
            ToolOutput::ok("c1".into(), "calc.add".into(), json!({}), json!(2)),
            t(101)
        )
        .is_err()
    );
    // The finalizer misses its grace.
    let Step::Finish {
        outcome:
            RunOutcome::Failed {
                failure: RunFailure::FinalizerTimeout { .. },
            },
    } = m.next_step(t(150))
    else {
        panic!("expected a finalizer timeout")
    };
}

#[test]
fn time_spent_awaiting_does_not_count() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy {
        time_budget: Some(Duration::from_millis(100)),
        ..Policy::default()
    });
    let item = AwaitItem::Clarification(Clarification {
        id: AwaitItemId::new("q1"),
        question: "which numbers?".into(),
        missing_fields: vec![],
        restrict_to_tool: None,
        example_input: None,
        clarifying_prompt: None,
    });
    m.plan_result(PlanResult::await_items(vec![item]), t(60), &cat)
        .unwrap();
    assert_eq!(m.poll_timeout(), None);
    assert!(matches!(m.next_step(t(10_000)), Step::Await { .. }));
    let progress = m
        .answer(
            &AwaitItemId::new("q1"),
            AwaitAnswer::Clarification {
                text: "1 and 2".into(),
            },
            t(10_000),
        )
        .unwrap();
    assert_eq!(progress, AwaitProgress::Satisfied);
    assert_eq!(m.active_ms(t(10_030)), 90);
    assert_eq!(
        m.next_step(t(10_030)),
        Step::Plan {
            kind: PlanKind::Resume,
            finalize: None
        }
    );
    assert_eq!(m.transcript().last().unwrap(), &Message::user("1 and 2"));
    assert!(matches!(
        m.next_step(t(10_040)),
        Step::Plan {
            finalize: Some(_),
            ..
        }
    ));
}

#[test]
fn a_clarification_is_asked_in_the_transcript_and_restricts_the_next_turn() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    let item = AwaitItem::Clarification(Clarification {
        id: AwaitItemId::new("q1"),
        question: "which numbers?".into(),
        missing_fields: vec!["a".into()],
        restrict_to_tool: Some(ToolIdent::new("calc.add")),
        example_input: None,
        clarifying_prompt: None,
    });
    m.plan_result(PlanResult::await_items(vec![item]), t(1), &cat)
        .unwrap();
    let answer = AwaitAnswer::Clarification {
        text: "1 and 2".into(),
    };
    m.answer(&AwaitItemId::new("q1"), answer, t(2)).unwrap();
    // The question, then its answer: the model sees what it is answering.
    let tail: Vec<&Message> = m
        .transcript()
        .iter()
        .skip(m.transcript().len() - 2)
        .collect();
    assert_eq!(tail[0].role, Role::Assistant);
    assert_eq!(
        tail[0].parts,
        vec![Part::Text {
            text: "which numbers?".into()
        }]
    );
    assert_eq!(tail[1], &Message::user("1 and 2"));
    // The next turn may call only the tool the question was for.
    m.next_step(t(3));
    let echo = ToolCallRequest::new("calc.echo", json!({"text": "x"})).with_id("e1");
    let out = m
        .plan_result(PlanResult::tool_calls(vec![echo]), t(3), &cat)
        .unwrap();
    let PlanOutcome::NeedsResolution(ctx) = out else {
        panic!("{out:?}")
    };
    assert_eq!(ctx.reason, InvalidReason::NotAllowed);
    let retry = Resolution::Retry {
        feedback: "use calc.add".into(),
    };
    m.resolve(retry, t(4), &cat).unwrap();
    m.next_step(t(4));
    m.plan_result(PlanResult::tool_calls(vec![add("a1", 1, 2)]), t(5), &cat)
        .unwrap();
    assert_eq!(pending_ids(&mut m, t(5)), vec!["a1"]);
}

#[test]
fn questions_answers_are_validated_and_become_the_tool_result() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    let item = AwaitItem::Questions(Questions {
        id: AwaitItemId::new("form"),
        tool_name: ToolIdent::new("ask.choose"),
        tool_call_id: ToolCallId::new("ask1"),
        payload: json!({}),
        title: None,
        questions: vec![Question {
            id: "color".into(),
            prompt: "Which color?".into(),
            options: vec![
                QuestionOption {
                    id: "r".into(),
                    label: "red".into(),
                },
                QuestionOption {
                    id: "g".into(),
                    label: "green".into(),
                },
            ],
            allow_multiple: false,
        }],
    });
    m.plan_result(PlanResult::await_items(vec![item]), t(1), &cat)
        .unwrap();
    let before = m.clone();
    let answer = |opts: &[&str]| AwaitAnswer::Questions {
        answers: [(
            "color".to_owned(),
            opts.iter().map(|s| s.to_string()).collect(),
        )]
        .into(),
    };
    let id = AwaitItemId::new("form");
    assert!(matches!(
        m.answer(&id, answer(&["blue"]), t(2)),
        Err(RunError::InvalidAnswer { .. })
    ));
    assert!(matches!(
        m.answer(&id, answer(&["r", "g"]), t(2)),
        Err(RunError::InvalidAnswer { .. })
    ));
    assert!(matches!(
        m.answer(&id, answer(&[]), t(2)),
        Err(RunError::InvalidAnswer { .. })
    ));
    assert!(matches!(
        m.answer(&id, AwaitAnswer::Clarification { text: "red".into() }, t(2)),
        Err(RunError::InvalidAnswer { .. })
    ));
    assert_eq!(
        m.answer(&AwaitItemId::new("other"), answer(&["r"]), t(2)),
        Err(RunError::UnknownAwaitItem(AwaitItemId::new("other")))
    );
    assert_eq!(
        m, before,
        "rejected answers leave the run paused and intact"
    );
    m.answer(&id, answer(&["g"]), t(3)).unwrap();
    assert!(matches!(
        m.answer(&id, answer(&["g"]), t(3)),
        Err(RunError::WrongPhase { .. })
    ));
    let last = m.transcript().last().unwrap();
    assert_eq!(
        error_texts(last),
        vec![("ask1".into(), false, r#"{"color":["g"]}"#.into())]
    );
}

#[test]
fn confirmation_pauses_before_execution_and_denial_is_the_result() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy {
        confirm_tools: [ToolIdent::new("calc.add")].into(),
        ..Policy::default()
    });
    m.plan_result(
        PlanResult::tool_calls(vec![
            add("c1", 1, 1),
            ToolCallRequest::new("calc.echo", json!({})).with_id("e1"),
        ]),
        t(1),
        &cat,
    )
    .unwrap();
    let Step::Await { items, .. } = m.next_step(t(2)) else {
        panic!("expected await")
    };
    assert_eq!(items.len(), 1);
    let item_id = items[0].id().clone();
    m.answer(
        &item_id,
        AwaitAnswer::Confirmation {
            approved: false,
            reason: Some("not today".into()),
        },
        t(3),
    )
    .unwrap();
    assert_eq!(pending_ids(&mut m, t(3)), vec!["e1"]);
    run_batch_ok(&mut m, t(4));
    let results = error_texts(m.transcript().last().unwrap());
    assert_eq!(
        results[0],
        (
            "c1".into(),
            true,
            "error (not_executed): denied by a human: not today".into()
        )
    );
    assert_eq!(m.tool_calls_made(), 1);
}

// ---- invalid tool calls ----------------------------------------------------

fn bad_call_turn(m: &mut RunMachine, cat: &TestCatalog) -> PlanOutcome {
    bad_call_turn_n(m, cat, "")
}

fn bad_call_turn_n(m: &mut RunMachine, cat: &TestCatalog, n: &str) -> PlanOutcome {
    m.plan_result(
        PlanResult::tool_calls(vec![
            add(&format!("ok1{n}"), 1, 2),
            ToolCallRequest::raw(format!("bad{n}"), "calc.add", r#"{"a": 1"#),
            add(&format!("ok2{n}"), 3, 4),
        ]),
        t(1),
        cat,
    )
    .unwrap()
}

#[test]
fn invalid_call_needs_resolution_with_context() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    let PlanOutcome::NeedsResolution(ctx) = bad_call_turn(&mut m, &cat) else {
        panic!("expected resolution")
    };
    assert_eq!(ctx.tool_name, "calc.add");
    assert_eq!(ctx.tool_call_id.as_str(), "bad");
    assert!(matches!(ctx.reason, InvalidReason::MalformedJson { .. }));
    assert_eq!(
        ctx.available,
        vec![ToolIdent::new("calc.add"), ToolIdent::new("calc.echo")]
    );
    assert_eq!(ctx.retries_left, 2);
    assert!(matches!(m.next_step(t(2)), Step::Resolve { .. }));
}

#[test]
fn resolution_fail_ends_the_run() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    bad_call_turn(&mut m, &cat);
    m.resolve(Resolution::Fail, t(2), &cat).unwrap();
    let Step::Finish {
        outcome:
            RunOutcome::Failed {
                failure: RunFailure::InvalidToolCall { tool_call_id, .. },
            },
    } = m.next_step(t(3))
    else {
        panic!("expected failure")
    };
    assert_eq!(tool_call_id.as_str(), "bad");
    assert!(m.tool_outputs().is_empty(), "nothing executed");
}

#[test]
fn resolution_retry_records_feedback_and_replans() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    bad_call_turn(&mut m, &cat);
    let out = m
        .resolve(
            Resolution::Retry {
                feedback: "send valid JSON".into(),
            },
            t(2),
            &cat,
        )
        .unwrap();
    assert_eq!(out, PlanOutcome::TurnRetried);
    assert_eq!(
        m.next_step(t(3)),
        Step::Plan {
            kind: PlanKind::Resume,
            finalize: None
        }
    );
    let msgs: Vec<&Message> = m.transcript().iter().collect();
    assert_eq!(msgs.len(), 3);
    let uses: Vec<(String, Value)> = msgs[1]
        .parts
        .iter()
        .map(|p| match p {
            Part::ToolUse { id, input, .. } => (id.to_string(), (**input).clone()),
            _ => panic!("expected tool use"),
        })
        .collect();
    assert_eq!(
        uses,
        vec![
            ("ok1".into(), json!({"a": 1, "b": 2})),
            ("bad".into(), json!(r#"{"a": 1"#)),
            ("ok2".into(), json!({"a": 3, "b": 4})),
        ]
    );
    let other = "error (not_executed): not executed because another call in this turn was invalid";
    assert_eq!(
        error_texts(msgs[2]),
        vec![
            ("ok1".into(), true, other.into()),
            (
                "bad".into(),
                true,
                "error (invalid_arguments): send valid JSON".into()
            ),
            ("ok2".into(), true, other.into()),
        ]
    );
    assert_eq!(m.tool_calls_made(), 0);
    // Retries are bounded.
    bad_call_turn_n(&mut m, &cat, "2");
    m.resolve(
        Resolution::Retry {
            feedback: "again".into(),
        },
        t(4),
        &cat,
    )
    .unwrap();
    let PlanOutcome::NeedsResolution(ctx) = bad_call_turn_n(&mut m, &cat, "3") else {
        panic!()
    };
    assert_eq!(ctx.retries_left, 0);
    assert_eq!(
        m.resolve(
            Resolution::Retry {
                feedback: "x".into()
            },
            t(5),
            &cat
        ),
        Err(RunError::RetryLimitReached { max: 2 })
    );
    assert_eq!(m.phase_name(), PhaseName::Resolving);
}

#[test]
fn resolution_skip_records_reason_and_executes_nothing() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    bad_call_turn(&mut m, &cat);
    let out = m
        .resolve(
            Resolution::Skip {
                reason: "skipped by policy".into(),
            },
            t(2),
            &cat,
        )
        .unwrap();
    assert_eq!(
        out,
        PlanOutcome::Continue {
            response_hook_suppressed: false
        }
    );
    assert_eq!(
        m.next_step(t(3)),
        Step::Plan {
            kind: PlanKind::Resume,
            finalize: None
        }
    );
    let results = error_texts(m.transcript().last().unwrap());
    assert_eq!(
        results[1],
        (
            "bad".into(),
            true,
            "error (invalid_arguments): skipped by policy".into()
        )
    );
    assert!(
        results[0]
            .2
            .contains("another call in this turn was skipped")
    );
    assert_eq!(m.tool_calls_made(), 0);
}

#[test]
fn resolution_repair_swaps_the_tool_and_rechecks_arguments() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy {
        allowed_tools: Some([ToolIdent::new("calc.add")].into()),
        ..Policy::default()
    });
    let out = m
        .plan_result(
            PlanResult::tool_calls(vec![
                ToolCallRequest::new("calc.ad", json!({"a": 1, "b": 2})).with_id("x1"),
                ToolCallRequest::new("calc.echo", json!({"a": "z"})).with_id("x2"),
            ]),
            t(1),
            &cat,
        )
        .unwrap();
    let PlanOutcome::NeedsResolution(ctx) = out else {
        panic!()
    };
    assert_eq!(ctx.reason, InvalidReason::UnknownTool);
    assert_eq!(ctx.available, vec![ToolIdent::new("calc.add")]);
    // Repair with a tool that is not allowed is rejected.
    assert_eq!(
        m.resolve(
            Resolution::Repair {
                tool: ToolIdent::new("calc.echo")
            },
            t(2),
            &cat
        ),
        Err(RunError::RepairNotAllowed(ToolIdent::new("calc.echo")))
    );
    let out = m
        .resolve(
            Resolution::Repair {
                tool: ToolIdent::new("calc.add"),
            },
            t(2),
            &cat,
        )
        .unwrap();
    // The second call is not allowed by policy: it needs resolution too.
    let PlanOutcome::NeedsResolution(ctx) = out else {
        panic!()
    };
    assert_eq!(ctx.tool_call_id.as_str(), "x2");
    assert_eq!(ctx.reason, InvalidReason::NotAllowed);
    // Repairing it to calc.add fails the schema: resolution again, same call.
    let out = m
        .resolve(
            Resolution::Repair {
                tool: ToolIdent::new("calc.add"),
            },
            t(3),
            &cat,
        )
        .unwrap();
    let PlanOutcome::NeedsResolution(ctx) = out else {
        panic!()
    };
    assert_eq!(ctx.tool_call_id.as_str(), "x2");
    let InvalidReason::SchemaViolation { issues } = &ctx.reason else {
        panic!()
    };
    assert_eq!(issues.len(), 2);
    assert_eq!(issues[0].kind, FieldIssueKind::WrongType);
    assert_eq!(issues[1].kind, FieldIssueKind::Missing);
    m.resolve(
        Resolution::Skip {
            reason: "bad".into(),
        },
        t(4),
        &cat,
    )
    .unwrap();
    let results = error_texts(m.transcript().last().unwrap());
    assert_eq!(results[0].0, "x1");
    // The planner is told each field issue, and gets a retry hint built
    // from them: the missing field, the tool, the arguments that failed.
    assert_eq!(
        results[1].2,
        "error (invalid_arguments): bad\n- /a: `a` must be an integer\n- /b: `b` is required\n\
         retry hint: missing_fields\nmissing fields: /b"
    );
    let out = m
        .tool_outputs()
        .iter()
        .find(|o| o.tool_call_id.as_str() == "x2")
        .unwrap();
    let hint = out.retry_hint.as_ref().expect("a retry hint");
    assert_eq!(hint.reason, crate::tool::RetryReason::MissingFields);
    assert_eq!(hint.missing_fields, ["/b"]);
    assert_eq!(hint.tool.as_ref().map(|t| t.as_str()), Some("calc.add"));
    assert_eq!(hint.prior_input.as_ref(), Some(&*out.payload));
    // The valid call of the turn was not run and gets no hint.
    let x1 = &m.tool_outputs()[m.tool_outputs().len() - 2];
    assert!(x1.retry_hint.is_none());
}

#[test]
fn repaired_turn_executes_with_the_repaired_tool() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    let out = m
        .plan_result(
            PlanResult::tool_calls(vec![
                ToolCallRequest::new("add", json!({"a": 1, "b": 2})).with_id("x1"),
            ]),
            t(1),
            &cat,
        )
        .unwrap();
    assert!(matches!(out, PlanOutcome::NeedsResolution(_)));
    let out = m
        .resolve(
            Resolution::Repair {
                tool: ToolIdent::new("calc.add"),
            },
            t(2),
            &cat,
        )
        .unwrap();
    assert_eq!(
        out,
        PlanOutcome::Continue {
            response_hook_suppressed: false
        }
    );
    let Step::ExecuteTools { calls } = m.next_step(t(3)) else {
        panic!()
    };
    let call = calls.iter().next().unwrap();
    assert_eq!(call.name.as_str(), "calc.add");
    let Part::ToolUse { name, .. } = &m.transcript().last().unwrap().parts[0] else {
        panic!()
    };
    assert_eq!(name, "calc.add");
}

#[test]
fn ids_are_assigned_and_duplicates_rejected() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    m.plan_result(
        PlanResult::tool_calls(vec![
            ToolCallRequest::new("calc.echo", json!({})),
            ToolCallRequest::new("calc.echo", json!({})),
        ]),
        t(1),
        &cat,
    )
    .unwrap();
    assert_eq!(pending_ids(&mut m, t(1)), vec!["call_1", "call_2"]);
    run_batch_ok(&mut m, t(2));
    assert_eq!(
        m.plan_result(
            PlanResult::tool_calls(vec![add("call_1", 1, 1)]),
            t(3),
            &cat
        ),
        Err(RunError::DuplicateCallId(ToolCallId::new("call_1")))
    );
    assert_eq!(
        m.plan_result(PlanResult::tool_calls(vec![]), t(3), &cat),
        Err(RunError::NoToolCalls)
    );
}

#[test]
fn snapshot_round_trip_and_version_check() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    m.plan_result(PlanResult::tool_calls(vec![add("c1", 1, 1)]), t(1), &cat)
        .unwrap();
    let json = serde_json::to_value(&m).unwrap();
    assert_eq!(json["format"], json!(FORMAT_VERSION));
    let mut back: RunMachine = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(back, m);
    assert_eq!(pending_ids(&mut back, t(2)), vec!["c1"]);
    let mut newer = json;
    newer["format"] = json!(FORMAT_VERSION + 1);
    let err = serde_json::from_value::<RunMachine>(newer)
        .unwrap_err()
        .to_string();
    assert!(err.contains("format 2 is not supported"), "{err}");
}

#[test]
fn rendering_strips_server_data_and_marks_omissions() {
    let mut out = ToolOutput::with_body(
        "c".into(),
        "t.x".into(),
        json!({}),
        ToolResultBody::Omitted(crate::tool::Omission::TooLarge {
            bytes: 70000,
            limit: 65536,
        }),
    );
    out.server_data = Some(Box::new(json!({"secret": "ui only"})));
    let Part::ToolResult {
        content, is_error, ..
    } = render_tool_output(&out)
    else {
        panic!()
    };
    assert!(!is_error);
    let Part::Text { text } = &content[0] else {
        panic!()
    };
    assert!(text.contains("70000 bytes exceeds the 65536-byte budget"));
    assert!(!text.contains("ui only"));
}

#[test]
fn arguments_given_as_raw_text_are_parsed() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    m.plan_result(
        PlanResult::tool_calls(vec![ToolCallRequest::raw(
            "r1",
            "calc.add",
            r#"{"a":1,"b":2}"#,
        )]),
        t(1),
        &cat,
    )
    .unwrap();
    let call = m.pending_call(&ToolCallId::new("r1")).unwrap();
    assert_eq!(*call.payload, json!({"a": 1, "b": 2}));
}

#[test]
fn malformed_arguments_cannot_be_repaired_so_resolution_cannot_loop() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    let out = m
        .plan_result(
            PlanResult::tool_calls(vec![ToolCallRequest::raw("m1", "calc.add", "{\"a\":")]),
            t(1),
            &cat,
        )
        .unwrap();
    let PlanOutcome::NeedsResolution(ctx) = out else {
        panic!("{out:?}")
    };
    assert!(matches!(ctx.reason, InvalidReason::MalformedJson { .. }));
    // Another tool would get the same broken arguments, again and again.
    let repair = Resolution::Repair {
        tool: ToolIdent::new("calc.add"),
    };
    let err = m.resolve(repair, t(2), &cat).unwrap_err();
    assert!(
        matches!(err, RunError::RepairNotApplicable { .. }),
        "{err:?}"
    );
    // The machine is unchanged and takes a resolution that ends the loop.
    let retried = Resolution::Retry {
        feedback: "send valid JSON".into(),
    };
    assert_eq!(m.resolve(retried, t(2), &cat), Ok(PlanOutcome::TurnRetried));
}

#[test]
fn final_tool_result_ends_a_nested_run() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    m.plan_result(
        PlanResult::new(Decision::FinalToolResult {
            result: json!({"sum": 3}),
        }),
        t(1),
        &cat,
    )
    .unwrap();
    let Step::Finish {
        outcome:
            RunOutcome::ToolResult {
                result,
                termination: None,
            },
    } = m.next_step(t(2))
    else {
        panic!("expected a tool result outcome")
    };
    assert_eq!(result, &json!({"sum": 3}));
}

#[test]
fn time_spent_paused_does_not_count_and_pause_is_checked() {
    let mut m = machine(Policy {
        time_budget: Some(Duration::from_millis(100)),
        ..Policy::default()
    });
    m.pause(t(50)).unwrap();
    assert!(m.is_paused());
    assert!(matches!(
        m.pause(t(51)),
        Err(RunError::WrongPhase { input: "pause", .. })
    ));
    assert_eq!(m.poll_timeout(), None);
    assert_eq!(m.active_ms(t(5_000)), 50);
    m.continue_run(t(5_000)).unwrap();
    assert!(m.continue_run(t(5_001)).is_err());
    assert_eq!(m.poll_timeout(), Some(t(5_050)));
    assert!(matches!(
        m.next_step(t(5_049)),
        Step::Plan { finalize: None, .. }
    ));
    assert!(matches!(
        m.next_step(t(5_050)),
        Step::Plan {
            finalize: Some(_),
            ..
        }
    ));
    let json = serde_json::to_value(&m).unwrap();
    assert!(json.get("paused").is_none());
}

// ---- tool policy by name, tag and annotation -------------------------------

fn tagged_catalog() -> TestCatalog {
    let spec = |name: &str, tags: &[&str], destructive: bool| ToolSpec {
        name: ToolIdent::new(name),
        description: String::new(),
        input_schema: json!({"type": "object"}),
        output_schema: None,
        annotations: crate::tool::ToolAnnotations {
            destructive,
            ..Default::default()
        },
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
    };
    TestCatalog {
        specs: vec![
            spec("fs.read", &["files"], false),
            spec("fs.delete", &["files"], true),
            spec("net.fetch", &["network"], false),
        ],
    }
}

#[test]
fn the_tool_policy_allows_denies_and_confirms_by_name_tag_and_annotation() {
    let cat = tagged_catalog();
    let spec = |name: &str| cat.spec(name).unwrap().clone();
    let policy = Policy {
        denied_tags: ["network".to_owned()].into(),
        confirm_destructive: true,
        ..Policy::default()
    };
    assert!(policy.permits(&spec("fs.read")));
    assert!(!policy.permits(&spec("net.fetch")));
    assert!(policy.needs_confirmation(&spec("fs.delete")));
    assert!(!policy.needs_confirmation(&spec("fs.read")));
    // An allowed tag admits only tagged tools; a denied name always wins.
    let narrow = Policy {
        allowed_tags: Some(["files".to_owned()].into()),
        denied_tools: [ToolIdent::new("fs.delete")].into(),
        confirm_tags: ["files".to_owned()].into(),
        ..Policy::default()
    };
    assert!(narrow.permits(&spec("fs.read")));
    assert!(!narrow.permits(&spec("fs.delete")));
    assert!(!narrow.permits(&spec("net.fetch")));
    assert!(narrow.needs_confirmation(&spec("fs.read")));

    // A denied tool is not allowed, and not offered as an alternative.
    let mut m = machine(policy.clone());
    let outcome = m
        .plan_result(
            PlanResult::tool_calls(vec![
                ToolCallRequest::new("net.fetch", json!({})).with_id("n1"),
            ]),
            t(1),
            &cat,
        )
        .unwrap();
    let PlanOutcome::NeedsResolution(ctx) = outcome else {
        panic!("expected resolution, got {outcome:?}")
    };
    assert_eq!(ctx.reason, InvalidReason::NotAllowed);
    assert_eq!(
        ctx.available,
        vec![ToolIdent::new("fs.read"), ToolIdent::new("fs.delete")]
    );

    // A destructive tool waits for approval; the other call of the batch does not.
    let mut m = machine(policy);
    m.plan_result(
        PlanResult::tool_calls(vec![
            ToolCallRequest::new("fs.read", json!({})).with_id("r1"),
            ToolCallRequest::new("fs.delete", json!({})).with_id("d1"),
        ]),
        t(1),
        &cat,
    )
    .unwrap();
    let Step::Await { items, .. } = m.next_step(t(2)) else {
        panic!("expected await")
    };
    let [AwaitItem::Confirmation(c)] = items else {
        panic!("{items:?}")
    };
    assert_eq!(c.tool_name, ToolIdent::new("fs.delete"));
}

#[test]
fn generated_call_ids_skip_past_ids_the_planner_chose_in_their_form() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    let calls = vec![
        ToolCallRequest::new("calc.echo", json!({})).with_id("call_3"),
        ToolCallRequest::new("calc.echo", json!({})),
        ToolCallRequest::new("calc.echo", json!({})).with_id("call_x"),
        ToolCallRequest::new("calc.echo", json!({})),
    ];
    m.plan_result(PlanResult::tool_calls(calls), t(1), &cat)
        .unwrap();
    let Step::ExecuteTools { calls } = m.next_step(t(1)) else {
        panic!()
    };
    let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["call_3", "call_4", "call_x", "call_5"]);
    // A planner id already used is refused.
    let calls: Vec<ToolCall> = calls.iter().cloned().collect();
    for c in calls {
        m.tool_result(ToolOutput::ok(c.id, c.name, c.payload, json!(1)), t(2))
            .unwrap();
    }
    let again = vec![ToolCallRequest::new("calc.echo", json!({})).with_id("call_4")];
    assert!(matches!(
        m.plan_result(PlanResult::tool_calls(again), t(3), &cat),
        Err(RunError::DuplicateCallId(_))
    ));
}

#[test]
fn a_machine_split_for_storage_comes_back_whole_and_counts_are_checked() {
    let cat = TestCatalog::new();
    let mut m = machine(Policy::default());
    m.next_step(t(0));
    m.plan_result(PlanResult::tool_calls(vec![add("c1", 1, 2)]), t(1), &cat)
        .unwrap();
    run_batch_ok(&mut m, t(2));
    m.drain_events().for_each(drop);
    let messages: Vec<Message> = m.transcript().iter().cloned().collect();
    let outputs: Vec<_> = m.tool_outputs().iter().cloned().collect();
    assert!(!messages.is_empty() && !outputs.is_empty());

    let head = serde_json::to_value(m.snapshot_head()).unwrap();
    assert!(head.get("transcript").is_none() && head.get("outputs").is_none());
    assert_eq!(
        head["parts"],
        json!({"messages": messages.len(), "outputs": outputs.len()})
    );
    assert_eq!(head["format"], json!(FORMAT_VERSION));
    let head: SnapshotHead = serde_json::from_value(head).unwrap();
    assert_eq!(
        (head.messages(), head.outputs()),
        (messages.len(), outputs.len())
    );
    let back = RunMachine::from_parts(head.clone(), messages.clone(), outputs.clone()).unwrap();
    assert_eq!(back, m);

    let short = messages[1..].to_vec();
    let err = RunMachine::from_parts(head.clone(), short, outputs.clone()).unwrap_err();
    assert!(err.0.contains("transcript messages"), "{err}");
    let mut extra = outputs.clone();
    extra.push(outputs[0].clone());
    let err = RunMachine::from_parts(head, messages, extra).unwrap_err();
    assert!(err.0.contains("tool outputs"), "{err}");
}

#[test]
fn a_toolset_outage_is_one_event_with_its_cause_and_a_recovery_another() {
    let mut m = machine(Policy::default());
    m.drain_events().for_each(drop);
    use crate::event::EventKind;
    let toolset_events = |m: &mut RunMachine| -> Vec<EventKind> {
        m.drain_events()
            .filter(|e| {
                matches!(
                    e,
                    EventKind::ToolsetUnavailable { .. } | EventKind::ToolsetAvailable { .. }
                )
            })
            .collect()
    };
    assert!(m.toolset_availability([("fs", "cannot start npx: exit 1")]));
    assert_eq!(
        toolset_events(&mut m),
        vec![EventKind::ToolsetUnavailable {
            toolset: "fs".into(),
            cause: "cannot start npx: exit 1".into(),
        }]
    );
    assert!(
        m.reminders()
            .any(|r| r.id == "toolset:fs" && r.text.contains("exit 1"))
    );
    // The same outage again: nothing new.
    assert!(!m.toolset_availability([("fs", "cannot start npx: exit 1")]));
    assert!(toolset_events(&mut m).is_empty());
    // Back: one event, and the reminder says so.
    assert!(m.toolset_availability([]));
    assert_eq!(
        toolset_events(&mut m),
        vec![EventKind::ToolsetAvailable {
            toolset: "fs".into()
        }]
    );
    assert!(
        m.reminders()
            .any(|r| r.id == "toolset:fs" && r.text.contains("available again"))
    );
    assert!(!m.toolset_availability([]));
    assert!(toolset_events(&mut m).is_empty());
}
