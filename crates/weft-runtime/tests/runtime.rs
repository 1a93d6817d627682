//! End-to-end runtime tests with real in-process tools and a scripted planner.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use weft_core::AwaitItemId;
use weft_core::awaiting::{AwaitAnswer, AwaitItem, Clarification};
use weft_core::event::{EventKind, RunEvent};
use weft_core::planner::{PlanResult, TerminationReason, ToolCallRequest};
use weft_core::run::{Policy, RunFailure, RunOutcome};
use weft_core::store::RunStatus;
use weft_core::tool::{RetryReason, ToolError, ToolResultBody};
use weft_runtime::{Agent, EventStream, Runtime, ScriptedPlanner, StartRequest, TokioClock};
use weft_tools::{FnToolSet, ToolSet};

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    ms: u64,
}

#[derive(Deserialize, JsonSchema)]
struct SizeArgs {
    bytes: usize,
}

fn tools(executions: Arc<AtomicUsize>) -> Arc<dyn ToolSet> {
    let e = executions.clone();
    Arc::new(
        FnToolSet::new("t")
            .tool("add", "Adds two integers", move |args: AddArgs| {
                let e = e.clone();
                async move {
                    e.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, ToolError>(args.a + args.b)
                }
            })
            .tool("sleep", "Sleeps", |args: SleepArgs| async move {
                tokio::time::sleep(Duration::from_millis(args.ms)).await;
                Ok::<_, ToolError>("slept")
            })
            .tool("boom", "Panics", |_args: SizeArgs| async move {
                if true {
                    panic!("tool exploded");
                }
                Ok::<_, ToolError>(0)
            })
            .tool("big", "Returns a big string", |args: SizeArgs| async move {
                Ok::<_, ToolError>("x".repeat(args.bytes))
            })
            .tool("fail", "Fails at length", |args: SizeArgs| async move {
                Err::<i64, _>(ToolError::new(ToolError::INTERNAL, "é".repeat(args.bytes)))
            }),
    )
}

fn clarification(id: &str, question: &str) -> PlanResult {
    PlanResult::await_items(vec![AwaitItem::Clarification(Clarification {
        id: AwaitItemId::new(id),
        question: question.into(),
        missing_fields: vec![],
        restrict_to_tool: None,
        example_input: None,
        clarifying_prompt: None,
    })])
}

fn call(name: &str, args: Value) -> PlanResult {
    PlanResult::tool_calls(vec![ToolCallRequest::new(name, args)])
}

fn runtime(
    turns: Vec<PlanResult>,
    policy: Policy,
    timeout: Duration,
) -> (Runtime, Arc<AtomicUsize>) {
    let executions = Arc::new(AtomicUsize::new(0));
    let planner = Arc::new(ScriptedPlanner::new(turns).with_finalize("finalized"));
    let agent = Agent::builder("a", planner)
        .toolset(tools(executions.clone()))
        .policy(policy)
        .tool_timeout(timeout)
        .build();
    // The runtime's clock follows tokio's, so a test on paused time
    // (`start_paused = true`) spends no real time on budgets and timeouts.
    (
        Runtime::builder()
            .agent(agent)
            .payload_budget(1024)
            .clock(Arc::new(TokioClock::new()))
            .build(),
        executions,
    )
}

async fn collect(mut events: EventStream) -> Vec<RunEvent> {
    let mut out = Vec::new();
    while let Some(e) = events.next().await {
        out.push(e.unwrap());
    }
    out
}

fn finished_outputs(events: &[RunEvent]) -> Vec<&weft_core::tool::ToolOutput> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolFinished { output } => Some(&**output),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_run_completes_with_tool_calls_and_a_gap_free_event_log() {
    let (rt, executions) = runtime(
        vec![
            call("t.add", json!({"a": 1, "b": 2})),
            call("t.add", json!({"a": 3, "b": 4})),
            PlanResult::final_text("the sums are 3 and 7"),
        ],
        Policy::default(),
        Duration::from_secs(5),
    );
    let handle = rt.start("a", StartRequest::user("add")).await.unwrap();
    let events = collect(handle.events().await.unwrap()).await;
    let outcome = handle.outcome().await.unwrap();
    let RunOutcome::Response {
        message,
        termination: None,
    } = outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(message.joined_text(), "the sums are 3 and 7");
    assert_eq!(executions.load(Ordering::SeqCst), 2);
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    let outputs = finished_outputs(&events);
    assert_eq!(outputs[0].result, ToolResultBody::Json(json!(3)));
    assert_eq!(outputs[1].result, ToolResultBody::Json(json!(7)));
    assert!(matches!(events[0].kind, EventKind::RunStarted { .. }));
    assert!(matches!(
        events.last().unwrap().kind,
        EventKind::RunFinished { .. }
    ));
    assert!(events.iter().any(
        |e| matches!(&e.kind, EventKind::AssistantChunk { text } if text == "the sums are 3 and 7")
    ));
    // Replay from a sequence number yields exactly the later events.
    let replay = collect(rt.subscribe(handle.run_id(), 3).await.unwrap()).await;
    assert_eq!(replay, events[3..].to_vec());
    let stored = rt.store().load_run(handle.run_id()).await.unwrap().unwrap();
    assert_eq!(stored.record.status, RunStatus::Completed);
}

#[tokio::test]
async fn await_answer_continue() {
    let ask = clarification("which", "Which numbers?");
    let (rt, executions) = runtime(
        vec![
            ask,
            call("t.add", json!({"a": 20, "b": 22})),
            PlanResult::final_text("42"),
        ],
        Policy::default(),
        Duration::from_secs(5),
    );
    let handle = rt.start("a", StartRequest::user("add")).await.unwrap();
    let mut events = handle.events().await.unwrap();
    loop {
        let e = events.next().await.unwrap().unwrap();
        if let EventKind::AwaitRequested { items } = e.kind {
            assert_eq!(items.len(), 1);
            break;
        }
    }
    // Wait until the pause is committed, then check bad answers are rejected.
    loop {
        let r = rt.store().load_run(handle.run_id()).await.unwrap().unwrap();
        if r.record.status == RunStatus::Awaiting {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let bad = rt
        .answer(
            handle.run_id(),
            &AwaitItemId::new("nope"),
            AwaitAnswer::Clarification { text: "x".into() },
        )
        .await;
    assert!(bad.is_err());
    let wrong_kind = rt
        .answer(
            handle.run_id(),
            &AwaitItemId::new("which"),
            AwaitAnswer::Confirmation {
                approved: true,
                reason: None,
            },
        )
        .await;
    assert!(wrong_kind.is_err());
    let stored = rt.store().load_run(handle.run_id()).await.unwrap().unwrap();
    assert_eq!(stored.record.status, RunStatus::Awaiting);
    assert_eq!(executions.load(Ordering::SeqCst), 0);
    rt.answer(
        handle.run_id(),
        &AwaitItemId::new("which"),
        AwaitAnswer::Clarification {
            text: "20 and 22".into(),
        },
    )
    .await
    .unwrap();
    let outcome = handle.outcome().await.unwrap();
    assert!(matches!(outcome, RunOutcome::Response { .. }));
    assert_eq!(executions.load(Ordering::SeqCst), 1);
    let rest = collect(events).await;
    assert!(
        rest.iter()
            .any(|e| matches!(e.kind, EventKind::AwaitSatisfied { .. }))
    );
    assert!(
        rest.iter()
            .any(|e| matches!(e.kind, EventKind::RunContinued))
    );
    // A second answer to a satisfied await is rejected.
    let again = rt
        .answer(
            handle.run_id(),
            &AwaitItemId::new("which"),
            AwaitAnswer::Clarification { text: "x".into() },
        )
        .await;
    assert!(again.is_err());
}

#[tokio::test]
async fn cancel_during_a_slow_tool_stops_it() {
    let (rt, _) = runtime(
        vec![
            call("t.sleep", json!({"ms": 30_000})),
            PlanResult::final_text("never"),
        ],
        Policy::default(),
        Duration::from_secs(60),
    );
    let handle = rt.start("a", StartRequest::user("sleep")).await.unwrap();
    let mut events = handle.events().await.unwrap();
    loop {
        let e = events.next().await.unwrap().unwrap();
        if matches!(e.kind, EventKind::ToolStarted { .. }) {
            break;
        }
    }
    let started = std::time::Instant::now();
    rt.cancel(handle.run_id(), "user pressed stop")
        .await
        .unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(5), handle.outcome())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(outcome, RunOutcome::Cancelled { .. }),
        "{outcome:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    let stored = rt.store().load_run(handle.run_id()).await.unwrap().unwrap();
    assert_eq!(stored.record.status, RunStatus::Cancelled);
}

#[tokio::test]
async fn tool_timeout_yields_retry_reason_timeout() {
    let (rt, _) = runtime(
        vec![
            call("t.sleep", json!({"ms": 5_000})),
            PlanResult::final_text("ok"),
        ],
        Policy::default(),
        Duration::from_millis(50),
    );
    let handle = rt.start("a", StartRequest::user("sleep")).await.unwrap();
    let events = collect(handle.events().await.unwrap()).await;
    let out = finished_outputs(&events)[0];
    let ToolResultBody::Error(e) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(e.code, ToolError::TIMEOUT);
    assert_eq!(
        out.retry_hint.as_ref().unwrap().reason,
        RetryReason::Timeout
    );
    assert!(matches!(
        handle.outcome().await.unwrap(),
        RunOutcome::Response { .. }
    ));
}

#[tokio::test]
async fn a_panicking_tool_is_an_error_result_and_the_run_continues() {
    let (rt, executions) = runtime(
        vec![
            call("t.boom", json!({"bytes": 1})),
            call("t.add", json!({"a": 1, "b": 1})),
            PlanResult::final_text("survived"),
        ],
        Policy::default(),
        Duration::from_secs(5),
    );
    let handle = rt.start("a", StartRequest::user("boom")).await.unwrap();
    let events = collect(handle.events().await.unwrap()).await;
    let outputs = finished_outputs(&events);
    let ToolResultBody::Error(e) = &outputs[0].result else {
        panic!()
    };
    assert_eq!(e.code, ToolError::PANICKED);
    assert!(e.message.contains("tool exploded"));
    assert_eq!(executions.load(Ordering::SeqCst), 1);
    assert!(matches!(
        handle.outcome().await.unwrap(),
        RunOutcome::Response { .. }
    ));
}

#[tokio::test]
async fn an_oversized_result_is_omitted_with_its_reason() {
    let (rt, _) = runtime(
        vec![
            call("t.big", json!({"bytes": 5000})),
            PlanResult::final_text("ok"),
        ],
        Policy::default(),
        Duration::from_secs(5),
    );
    let handle = rt.start("a", StartRequest::user("big")).await.unwrap();
    handle.outcome().await.unwrap();
    let stored = rt.store().load_run(handle.run_id()).await.unwrap().unwrap();
    let out = &stored.snapshot.tool_outputs()[0];
    assert_eq!(
        out.result,
        ToolResultBody::Omitted(weft_core::tool::Omission::TooLarge {
            bytes: 5002,
            limit: 1024
        })
    );
    assert_eq!(out.result_bytes, 5002);
    // Bounds are the tool's to report; this tool reported none.
    assert_eq!(out.bounds, None);
    // The model transcript carries the marker, not the data.
    let tool_msg = stored.snapshot.transcript().get(2).unwrap();
    let text = format!("{tool_msg:?}");
    assert!(text.contains("result omitted"));
    assert!(text.contains("narrow the request"));
    assert!(!text.contains("returned 0"), "{text}");
    assert!(!text.contains("xxxx"));
}

#[tokio::test(start_paused = true)]
async fn time_budget_forces_finalization() {
    let (rt, _) = runtime(
        vec![
            call("t.sleep", json!({"ms": 10_000})),
            PlanResult::final_text("unreached"),
        ],
        Policy {
            time_budget: Some(Duration::from_millis(100)),
            ..Policy::default()
        },
        Duration::from_secs(60),
    );
    let handle = rt.start("a", StartRequest::user("sleep")).await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(5), handle.outcome())
        .await
        .unwrap()
        .unwrap();
    let RunOutcome::Response {
        message,
        termination: Some(t),
    } = outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(t.reason, TerminationReason::TimeBudget);
    assert_eq!(message.joined_text(), "finalized");
    let events = collect(rt.subscribe(handle.run_id(), 0).await.unwrap()).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e.kind, EventKind::Termination { .. }))
    );
}

/// A run of ten tool turns under `policy` is made to finalize by the cap
/// `reason`, after `executed` tool calls.
async fn a_cap_forces_finalization(policy: Policy, reason: TerminationReason, executed: usize) {
    let turns = (0..10)
        .map(|i| call("t.add", json!({"a": i, "b": 1})))
        .collect();
    let (rt, executions) = runtime(turns, policy, Duration::from_secs(5));
    let handle = rt.start("a", StartRequest::user("loop")).await.unwrap();
    let outcome = handle.outcome().await.unwrap();
    let RunOutcome::Response {
        termination: Some(t),
        ..
    } = outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(t.reason, reason);
    assert_eq!(executions.load(Ordering::SeqCst), executed);
}

#[tokio::test]
async fn tool_cap_forces_finalization() {
    let policy = Policy {
        max_tool_calls: NonZeroU32::new(3),
        ..Policy::default()
    };
    a_cap_forces_finalization(policy, TerminationReason::ToolCap, 3).await;
}

#[tokio::test]
async fn an_oversized_error_message_is_cut_within_the_budget() {
    let (rt, _) = runtime(
        vec![
            call("t.fail", json!({"bytes": 100_000})),
            PlanResult::final_text("ok"),
        ],
        Policy::default(),
        Duration::from_secs(5),
    );
    let handle = rt.start("a", StartRequest::user("fail")).await.unwrap();
    handle.outcome().await.unwrap();
    let stored = rt.store().load_run(handle.run_id()).await.unwrap().unwrap();
    let ToolResultBody::Error(e) = &stored.snapshot.tool_outputs()[0].result else {
        panic!("{:?}", stored.snapshot.tool_outputs()[0].result);
    };
    // The runtime's budget here is 1 KiB: the message keeps at most that.
    assert!(e.message.len() < 1024 + 64, "{}", e.message.len());
    assert!(
        e.message.ends_with("of 200000 bytes cut)"),
        "{}",
        &e.message[1000..]
    );
}

#[tokio::test]
async fn turn_cap_forces_finalization() {
    let policy = Policy {
        max_turns: NonZeroU32::new(4),
        ..Policy::default()
    };
    a_cap_forces_finalization(policy, TerminationReason::TurnCap, 4).await;
}

#[test]
fn an_agent_has_every_cap_unless_given_a_policy() {
    let planner = Arc::new(ScriptedPlanner::new(vec![]));
    let agent = Agent::builder("a", planner.clone()).build();
    let p = agent.policy();
    assert!(p.max_turns.is_some() && p.max_tool_calls.is_some());
    assert!(p.max_consecutive_failures.is_some() && p.time_budget.is_some());
    // A cap left unset is filled in; one that is set is kept.
    let raised = Policy {
        max_turns: NonZeroU32::new(1_000),
        ..Policy::default()
    }
    .with_default_caps();
    assert_eq!(raised.max_turns, NonZeroU32::new(1_000));
    assert_eq!(raised.max_tool_calls, Policy::bounded().max_tool_calls);
    // Given explicitly, a policy is used as is.
    let open = Agent::builder("a", planner)
        .policy(Policy::default())
        .build();
    assert_eq!(open.policy().max_turns, None);
}

#[tokio::test]
async fn invalid_calls_are_retried_with_feedback_then_fail() {
    let bad = || call("t.add", json!({"a": "one"}));
    let (rt, executions) = runtime(
        vec![bad(), bad(), bad(), PlanResult::final_text("x")],
        Policy::default(),
        Duration::from_secs(5),
    );
    let handle = rt.start("a", StartRequest::user("bad")).await.unwrap();
    let outcome = handle.outcome().await.unwrap();
    let RunOutcome::Failed {
        failure: RunFailure::InvalidToolCall { tool_name, .. },
    } = outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(tool_name, "t.add");
    assert_eq!(executions.load(Ordering::SeqCst), 0);
    let stored = rt.store().load_run(handle.run_id()).await.unwrap().unwrap();
    // Two retried turns were recorded with feedback naming the field problems.
    let feedback: Vec<String> = stored
        .snapshot
        .tool_outputs()
        .iter()
        .map(|o| match &o.result {
            ToolResultBody::Error(e) => e.message.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(feedback.len(), 2);
    assert!(feedback[0].contains("/a"), "{}", feedback[0]);
}

async fn wait_status(rt: &Runtime, run: &weft_core::RunId, status: RunStatus) {
    for _ in 0..500 {
        let r = rt.store().load_run(run).await.unwrap().unwrap();
        if r.record.status == status {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("run never reached {status:?}");
}

#[tokio::test(start_paused = true)]
async fn pause_stops_at_the_next_step_and_resume_continues() {
    let (rt, executions) = runtime(
        vec![
            call("t.sleep", json!({"ms": 100})),
            call("t.add", json!({"a": 1, "b": 1})),
            PlanResult::final_text("done"),
        ],
        Policy {
            time_budget: Some(Duration::from_millis(1500)),
            ..Policy::default()
        },
        Duration::from_secs(5),
    );
    let handle = rt.start("a", StartRequest::user("go")).await.unwrap();
    let mut events = handle.events().await.unwrap();
    loop {
        if matches!(
            events.next().await.unwrap().unwrap().kind,
            EventKind::ToolStarted { .. }
        ) {
            break;
        }
    }
    rt.pause(handle.run_id()).await.unwrap();
    wait_status(&rt, handle.run_id(), RunStatus::Paused).await;
    assert_eq!(
        executions.load(Ordering::SeqCst),
        0,
        "the add call waits for resume"
    );
    // Paused time does not count: sleep past the budget, then resume.
    tokio::time::sleep(Duration::from_millis(1600)).await;
    assert!(rt.continue_run(handle.run_id()).await.is_ok());
    assert!(
        rt.continue_run(handle.run_id()).await.is_err(),
        "a running run is not paused"
    );
    let outcome = handle.outcome().await.unwrap();
    let RunOutcome::Response {
        termination: None, ..
    } = outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(executions.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn cancel_a_paused_run_finishes_it() {
    let ask = clarification("q", "?");
    let (rt, _) = runtime(vec![ask], Policy::default(), Duration::from_secs(5));
    let handle = rt.start("a", StartRequest::user("go")).await.unwrap();
    wait_status(&rt, handle.run_id(), RunStatus::Awaiting).await;
    rt.pause(handle.run_id()).await.unwrap();
    wait_status(&rt, handle.run_id(), RunStatus::Paused).await;
    let answer = rt
        .answer(
            handle.run_id(),
            &AwaitItemId::new("q"),
            AwaitAnswer::Clarification { text: "x".into() },
        )
        .await;
    assert!(answer.is_err(), "a paused run takes no answers");
    rt.continue_run(handle.run_id()).await.unwrap();
    wait_status(&rt, handle.run_id(), RunStatus::Awaiting).await;
    rt.cancel(handle.run_id(), "no longer needed")
        .await
        .unwrap();
    let outcome = handle.outcome().await.unwrap();
    assert_eq!(
        outcome,
        RunOutcome::Cancelled {
            reason: "no longer needed".into()
        }
    );
    assert!(rt.cancel(handle.run_id(), "again").await.is_err());
    let events = collect(rt.subscribe(handle.run_id(), 0).await.unwrap()).await;
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
}

#[tokio::test]
async fn pause_and_cancel_while_the_driver_hands_the_run_back_are_not_lost() {
    for round in 0..20 {
        let ask = clarification("q", "?");
        let (rt, _) = runtime(vec![ask], Policy::default(), Duration::from_secs(5));
        let handle = rt.start("a", StartRequest::user("go")).await.unwrap();
        let mut events = handle.events().await.unwrap();
        loop {
            if matches!(
                events.next().await.unwrap().unwrap().kind,
                EventKind::AwaitRequested { .. }
            ) {
                break;
            }
        }
        // The driver is committing the pause for the await right now.
        if round % 2 == 0 {
            rt.pause(handle.run_id()).await.unwrap();
            wait_status(&rt, handle.run_id(), RunStatus::Paused).await;
        } else {
            rt.cancel(handle.run_id(), "stop").await.unwrap();
            let outcome = tokio::time::timeout(Duration::from_secs(5), handle.outcome())
                .await
                .unwrap()
                .unwrap();
            assert_eq!(
                outcome,
                RunOutcome::Cancelled {
                    reason: "stop".into()
                }
            );
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

#[tokio::test]
async fn recovery_reruns_only_idempotent_calls_that_were_in_flight() {
    use weft_runtime::MemoryStore;
    let store = Arc::new(MemoryStore::new());
    let idem_runs = Arc::new(AtomicUsize::new(0));
    let once_runs = Arc::new(AtomicUsize::new(0));
    // The first process's tools hang, as if the process died mid-call.
    let tools = |hang: bool| -> Arc<dyn ToolSet> {
        let (i, o) = (idem_runs.clone(), once_runs.clone());
        Arc::new(
            FnToolSet::new("t")
                .tool("once", "Not idempotent", move |_: Nothing| {
                    let o = o.clone();
                    async move {
                        o.fetch_add(1, Ordering::SeqCst);
                        if hang {
                            std::future::pending::<()>().await;
                        }
                        Ok::<_, ToolError>("once")
                    }
                })
                .tool("again", "Idempotent", move |_: Nothing| {
                    let i = i.clone();
                    async move {
                        i.fetch_add(1, Ordering::SeqCst);
                        if hang {
                            std::future::pending::<()>().await;
                        }
                        Ok::<_, ToolError>("again")
                    }
                })
                .idempotent(),
        )
    };
    let turns = vec![
        PlanResult::tool_calls(vec![
            ToolCallRequest::new("t.once", json!({})),
            ToolCallRequest::new("t.again", json!({})),
        ]),
        PlanResult::final_text("recovered"),
    ];
    let build = |hang: bool| {
        let agent = Agent::builder("a", Arc::new(ScriptedPlanner::new(turns.clone())))
            .toolset(tools(hang))
            .build();
        Runtime::builder().agent(agent).store(store.clone()).build()
    };
    let first = build(true);
    let handle = first.start("a", StartRequest::user("go")).await.unwrap();
    let mut events = handle.events().await.unwrap();
    let mut started = 0;
    while started < 2 {
        if matches!(
            events.next().await.unwrap().unwrap().kind,
            EventKind::ToolStarted { .. }
        ) {
            started += 1;
        }
    }
    // A second process cannot take the run over while the first holds it,
    // and does once the first one dies. It dies too, while the idempotent
    // call runs again: the interrupted call's result it recorded must be
    // stored with the run's state by then, or a third process would answer
    // that call a second time.
    let second = build(true);
    assert!(second.recover(handle.run_id()).await.is_err());
    first.shutdown().await;
    assert!(second.recover(handle.run_id()).await.unwrap());
    let mut events = second.subscribe(handle.run_id(), 0).await.unwrap();
    let mut seen = 0;
    while seen < 2 {
        match events.next().await.unwrap().unwrap().kind {
            EventKind::ToolFinished { .. } | EventKind::ToolStarted { .. } => seen += 1,
            _ => {}
        }
    }
    // Past the batch's first flush of events (a real timer of the driver,
    // which stores the events of running calls without a snapshot).
    tokio::time::sleep(Duration::from_millis(300)).await;
    second.shutdown().await;
    let third = build(false);
    assert!(third.recover(handle.run_id()).await.unwrap());
    let second = third;
    let outcome = second.outcome(handle.run_id()).await.unwrap();
    assert!(
        matches!(outcome, RunOutcome::Response { .. }),
        "{outcome:?}"
    );
    assert_eq!(
        once_runs.load(Ordering::SeqCst),
        1,
        "the non-idempotent call is not run again"
    );
    assert_eq!(
        idem_runs.load(Ordering::SeqCst),
        3,
        "the idempotent call is run again, by each process"
    );
    let log = collect(second.subscribe(handle.run_id(), 0).await.unwrap()).await;
    let finished_once = log
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::ToolFinished { output } if output.name.as_str() == "t.once"))
        .count();
    assert_eq!(finished_once, 1, "the interrupted call is answered once");
    let stored = second
        .store()
        .load_run(handle.run_id())
        .await
        .unwrap()
        .unwrap();
    let outputs = stored.snapshot.tool_outputs();
    let ToolResultBody::Error(e) = &outputs[0].result else {
        panic!("{:?}", outputs[0])
    };
    assert_eq!(e.code, ToolError::UNAVAILABLE);
    assert!(e.message.contains("interrupted by a restart"));
    assert_eq!(
        outputs[0].retry_hint.as_ref().unwrap().reason,
        RetryReason::ToolUnavailable
    );
    assert_eq!(outputs[1].result, ToolResultBody::Json(json!("again")));
    assert!(
        !second.recover(handle.run_id()).await.unwrap(),
        "a finished run is not recovered"
    );
}

#[tokio::test]
async fn a_planner_s_notes_become_planner_thought_events() {
    let mut answer = PlanResult::final_text("done");
    answer.notes = vec!["checked the cache".into(), "nothing to call".into()];
    let agent = Agent::builder("noted", Arc::new(ScriptedPlanner::new(vec![answer]))).build();
    let rt = Runtime::builder().agent(agent).build();
    let handle = rt.start("noted", StartRequest::user("hi")).await.unwrap();
    handle.outcome().await.unwrap();
    let mut events = handle.events().await.unwrap();
    let mut thoughts = Vec::new();
    while let Some(e) = events.next().await {
        if let EventKind::PlannerThought { text, .. } = e.unwrap().kind {
            thoughts.push(text);
        }
    }
    assert_eq!(thoughts, ["checked the cache", "nothing to call"]);
}
