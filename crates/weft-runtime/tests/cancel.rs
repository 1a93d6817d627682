//! A cancel that is answered `Ok` stops the run: no planner or tool step
//! starts after it, and a cancel that loses a race with the run's end says
//! so instead of being answered and ignored. Checked against a planner that
//! loops, a cancel racing an answer, and random interleavings of every
//! control input (cancel, pause, continue, answer).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use weft_core::AwaitItemId;
use weft_core::awaiting::{AwaitAnswer, AwaitItem, Clarification};
use weft_core::event::EventKind;
use weft_core::planner::{PlanResult, ToolCallRequest};
use weft_core::run::RunOutcome;
use weft_core::store::RunStatus;
use weft_core::tool::ToolError;
use weft_runtime::{Agent, Runtime, RuntimeError, ScriptedPlanner, StartRequest, TokioClock};
use weft_tools::FnToolSet;

#[derive(Deserialize, JsonSchema)]
struct WorkArgs {
    ms: u64,
}

/// A runtime whose one agent plays `turns`; `work` counts the tool's starts.
fn runtime(turns: Vec<PlanResult>, work: Arc<AtomicUsize>) -> Runtime {
    let tools = FnToolSet::new("t").tool("work", "Works a while", move |args: WorkArgs| {
        let work = work.clone();
        async move {
            work.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(args.ms)).await;
            Ok::<_, ToolError>("done")
        }
    });
    let planner = Arc::new(ScriptedPlanner::new(turns).with_finalize("finalized"));
    let agent = Agent::builder("a", planner)
        .toolset(Arc::new(tools))
        .build();
    Runtime::builder()
        .agent(agent)
        .clock(Arc::new(TokioClock::new()))
        .build()
}

fn work(ms: u64) -> PlanResult {
    PlanResult::tool_calls(vec![ToolCallRequest::new("t.work", json!({ "ms": ms }))])
}

fn clarification() -> PlanResult {
    PlanResult::await_items(vec![AwaitItem::Clarification(Clarification {
        id: AwaitItemId::new("which"),
        question: "which one?".into(),
        missing_fields: vec![],
        restrict_to_tool: None,
        example_input: None,
        clarifying_prompt: None,
    })])
}

fn answer() -> AwaitAnswer {
    AwaitAnswer::Clarification {
        text: "the first".into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_at_the_first_event_stops_a_run_that_loops() {
    for _ in 0..6 {
        let started = Arc::new(AtomicUsize::new(0));
        let mut turns: Vec<PlanResult> = (0..100).map(|_| work(0)).collect();
        turns.push(PlanResult::final_text("looped to the end"));
        let rt = runtime(turns, started.clone());
        let handle = rt.start("a", StartRequest::user("loop")).await.unwrap();
        let mut events = handle.events().await.unwrap();
        events.next().await.unwrap().unwrap();
        rt.cancel(handle.run_id(), "stop").await.unwrap();
        let at_cancel = started.load(Ordering::SeqCst);
        let outcome = handle.outcome().await.unwrap();
        assert!(
            matches!(outcome, RunOutcome::Cancelled { .. }),
            "{outcome:?}"
        );
        assert_eq!(started.load(Ordering::SeqCst), at_cancel);
        assert!(at_cancel < 100, "the run went on to {at_cancel} tool calls");
        let stored = rt.store().load_run(handle.run_id()).await.unwrap().unwrap();
        assert_eq!(stored.record.status, RunStatus::Cancelled);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_racing_an_answer_ends_cancelled_or_says_it_came_too_late() {
    let (mut cancelled, mut too_late) = (0, 0);
    for _ in 0..40 {
        let started = Arc::new(AtomicUsize::new(0));
        let rt = runtime(
            vec![clarification(), PlanResult::final_text("answered")],
            started,
        );
        let handle = rt.start("a", StartRequest::user("ask")).await.unwrap();
        let run_id = handle.run_id().clone();
        wait_for_status(&rt, &run_id, RunStatus::Awaiting).await;
        let item = AwaitItemId::new("which");
        let (answered, cancel) = tokio::join!(
            rt.answer(&run_id, &item, answer()),
            rt.cancel(&run_id, "stop")
        );
        let outcome = handle.outcome().await.unwrap();
        match cancel {
            Ok(()) => {
                cancelled += 1;
                assert!(
                    matches!(outcome, RunOutcome::Cancelled { .. }),
                    "cancel answered Ok, then {outcome:?} (answer: {answered:?})"
                );
            }
            Err(RuntimeError::Finished(_)) => {
                too_late += 1;
                assert!(answered.is_ok());
                assert!(
                    matches!(outcome, RunOutcome::Response { .. }),
                    "{outcome:?}"
                );
            }
            Err(e) => panic!("cancel failed: {e}"),
        }
    }
    assert!(cancelled > 0, "no cancel took ({too_late} came too late)");
}

/// Waits until the stored run has `status`.
async fn wait_for_status(rt: &Runtime, run_id: &weft_core::RunId, status: RunStatus) {
    for _ in 0..500 {
        let stored = rt.store().load_run(run_id).await.unwrap().unwrap();
        if stored.record.status == status {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    panic!("run never reached {status:?}");
}

#[derive(Debug, Clone)]
enum Control {
    Cancel,
    Pause,
    Continue,
    Answer,
    Wait(u64),
}

fn control() -> impl Strategy<Value = Control> {
    prop_oneof![
        2 => Just(Control::Cancel),
        2 => Just(Control::Pause),
        2 => Just(Control::Continue),
        2 => Just(Control::Answer),
        3 => (0u64..8).prop_map(Control::Wait),
    ]
}

/// Plays `controls` against a run that works, asks, works again and
/// answers, some of them at once (`together`), and checks the cancel rule.
async fn play(controls: Vec<Control>, together: bool) -> Result<(), TestCaseError> {
    let started = Arc::new(AtomicUsize::new(0));
    let rt = Arc::new(runtime(
        vec![
            work(3),
            clarification(),
            work(3),
            PlanResult::final_text("done"),
        ],
        started.clone(),
    ));
    let handle = rt.start("a", StartRequest::user("go")).await.unwrap();
    let run_id = handle.run_id().clone();
    let item = AwaitItemId::new("which");
    // The tool starts counted when a cancel was answered Ok.
    let taken: Arc<std::sync::Mutex<Option<usize>>> = Arc::default();
    let apply = |c: Control| {
        let (rt, run_id, item, started, taken) = (
            rt.clone(),
            run_id.clone(),
            item.clone(),
            started.clone(),
            taken.clone(),
        );
        async move {
            match c {
                Control::Cancel => {
                    if rt.cancel(&run_id, "stop").await.is_ok() {
                        let mut taken = taken.lock().unwrap();
                        taken.get_or_insert(started.load(Ordering::SeqCst));
                    }
                }
                Control::Pause => drop(rt.pause(&run_id).await),
                Control::Continue => drop(rt.continue_run(&run_id).await),
                Control::Answer => drop(rt.answer(&run_id, &item, answer()).await),
                Control::Wait(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
            }
        }
    };
    if together {
        let tasks: Vec<_> = controls
            .into_iter()
            .map(|c| tokio::spawn(apply(c)))
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    } else {
        for c in controls {
            apply(c).await;
        }
    }
    // Let the run end: continue a pause, answer a question.
    let outcome = loop {
        let _ = rt.continue_run(&run_id).await;
        let _ = rt.answer(&run_id, &item, answer()).await;
        match tokio::time::timeout(Duration::from_millis(200), handle.outcome()).await {
            Ok(outcome) => break outcome.unwrap(),
            Err(_) => continue,
        }
    };
    let taken = *taken.lock().unwrap();
    if let Some(at_cancel) = taken {
        prop_assert!(
            matches!(outcome, RunOutcome::Cancelled { .. }),
            "a cancel was answered Ok, then {:?}",
            outcome
        );
        prop_assert_eq!(started.load(Ordering::SeqCst), at_cancel);
        let stored = rt.store().load_run(&run_id).await.unwrap().unwrap();
        prop_assert_eq!(stored.record.status, RunStatus::Cancelled);
    } else {
        prop_assert!(
            !matches!(outcome, RunOutcome::Cancelled { .. }),
            "cancelled though no cancel was answered Ok"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn control_inputs_in_any_order_keep_the_cancel_rule(
        controls in proptest::collection::vec(control(), 1..8),
        together in any::<bool>(),
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(play(controls, together))?;
    }
}

#[tokio::test]
async fn the_log_ends_at_the_cancel() {
    let started = Arc::new(AtomicUsize::new(0));
    let rt = runtime(vec![work(20), work(20), work(20)], started.clone());
    let handle = rt.start("a", StartRequest::user("go")).await.unwrap();
    let mut events = handle.events().await.unwrap();
    loop {
        let e = events.next().await.unwrap().unwrap();
        if matches!(e.kind, EventKind::ToolStarted { .. }) {
            break;
        }
    }
    rt.cancel(handle.run_id(), "stop").await.unwrap();
    let at_cancel = started.load(Ordering::SeqCst);
    let log = rt
        .store()
        .read_events(handle.run_id(), 0, None)
        .await
        .unwrap();
    let starts = log
        .iter()
        .filter(|e| matches!(e.kind, EventKind::ToolStarted { .. }))
        .count();
    assert_eq!(starts, at_cancel, "a tool started after the cancel");
    assert!(
        matches!(
            log.last().map(|e| &e.kind),
            Some(EventKind::RunFinished {
                outcome: RunOutcome::Cancelled { .. }
            })
        ),
        "{log:?}"
    );
}
