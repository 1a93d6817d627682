//! Pause and cancel asked of a process that does not drive the run: two
//! runtimes on one store stand for two processes; the request reaches the
//! driving one through the store, which applies it at once (cancel) or at
//! the run's next step (pause).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use weft_core::event::EventKind;
use weft_core::planner::{PlanResult, ToolCallRequest};
use weft_core::run::RunOutcome;
use weft_core::store::{RunStatus, RunStore};
use weft_runtime::{Agent, MemoryStore, RunHandle, Runtime, ScriptedPlanner, StartRequest};
use weft_tools::{FnToolSet, ToolSet};

#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    ms: u64,
}

fn tools(calls: Arc<AtomicUsize>) -> Arc<dyn ToolSet> {
    Arc::new(
        FnToolSet::new("t").tool("sleep", "Sleeps", move |args: SleepArgs| {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(args.ms)).await;
                Ok::<_, weft_core::tool::ToolError>("slept")
            }
        }),
    )
}

fn call(ms: u64) -> PlanResult {
    PlanResult::tool_calls(vec![ToolCallRequest::new("t.sleep", json!({"ms": ms}))])
}

/// A runtime ("process") on `store` whose agent sleeps as `turns` say.
fn process(store: &Arc<MemoryStore>, turns: Vec<PlanResult>, calls: &Arc<AtomicUsize>) -> Runtime {
    let planner = Arc::new(ScriptedPlanner::new(turns).with_finalize("finalized"));
    let agent = Agent::builder("a", planner)
        .toolset(tools(calls.clone()))
        .build();
    Runtime::builder().agent(agent).store(store.clone()).build()
}

async fn tool_started(handle: &RunHandle) {
    let mut events = handle.events().await.unwrap();
    loop {
        let e = events.next().await.unwrap().unwrap();
        if matches!(e.kind, EventKind::ToolStarted { .. }) {
            return;
        }
    }
}

async fn wait_status(store: &MemoryStore, handle: &RunHandle, status: RunStatus) {
    for _ in 0..1_000 {
        let run = store.load_run(handle.run_id()).await.unwrap().unwrap();
        if run.record.status == status {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("run never reached {status:?}");
}

#[tokio::test]
async fn a_cancel_asked_elsewhere_stops_the_driver_at_once() {
    let store = Arc::new(MemoryStore::new());
    let calls = Arc::new(AtomicUsize::new(0));
    let turns = vec![call(30_000), PlanResult::final_text("never")];
    let a = process(&store, turns.clone(), &calls);
    let b = process(&store, turns, &calls);
    let handle = a.start("a", StartRequest::user("go")).await.unwrap();
    tool_started(&handle).await;

    let asked = Instant::now();
    b.cancel(handle.run_id(), "stopped from another node")
        .await
        .unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(5), handle.outcome())
        .await
        .unwrap()
        .unwrap();
    let RunOutcome::Cancelled { reason } = &outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(reason, "stopped from another node");
    // Within a few polls, not the tool's 30 s.
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "{:?}",
        asked.elapsed()
    );
    let stored = store.load_run(handle.run_id()).await.unwrap().unwrap();
    assert_eq!(stored.record.status, RunStatus::Cancelled);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // The request was cleared with the commit that stopped the run.
    assert!(
        !store
            .request_control(handle.run_id(), &weft_core::lease::ControlRequest::Pause)
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn a_pause_asked_elsewhere_stops_at_the_next_step_and_either_process_continues() {
    let store = Arc::new(MemoryStore::new());
    let calls = Arc::new(AtomicUsize::new(0));
    let turns = vec![call(400), call(1), PlanResult::final_text("done")];
    let a = process(&store, turns.clone(), &calls);
    let b = process(&store, turns, &calls);
    let handle = a.start("a", StartRequest::user("go")).await.unwrap();
    tool_started(&handle).await;

    b.pause(handle.run_id()).await.unwrap();
    wait_status(&store, &handle, RunStatus::Paused).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the second call waits");

    // Nobody drives a paused run: the asking process continues it itself.
    b.continue_run(handle.run_id()).await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(5), b.outcome(handle.run_id()))
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(outcome, RunOutcome::Response { .. }),
        "{outcome:?}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}
