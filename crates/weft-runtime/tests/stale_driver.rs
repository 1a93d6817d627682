//! A driver that is alive but has lost its lease: it stalled past the
//! lease's TTL and another process took the run over (here the other
//! process takes the lease straight from the store, as its clock says the
//! old lease lapsed). The stale driver's next commit is refused
//! (`LeaseLost`) and it executes no more tools; nothing it did after the
//! takeover reaches the run's log.

#[macro_use]
mod stores;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use weft_core::Timestamp;
use weft_core::event::EventKind;
use weft_core::lease::{LeaseClaim, LeaseRequest};
use weft_core::planner::{PlanResult, ToolCallRequest};
use weft_core::store::RunStatus;
use weft_runtime::{Agent, Runtime, ScriptedPlanner, StartRequest};
use weft_tools::FnToolSet;

use stores::Db;

#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    ms: u64,
}

fn call(ms: u64) -> PlanResult {
    PlanResult::tool_calls(vec![ToolCallRequest::new("t.sleep", json!({"ms": ms}))])
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

async fn a_driver_that_lost_its_lease_runs_no_more_tools(db: &Db) {
    let store = db.open().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let tools = FnToolSet::new("t").tool("sleep", "Sleeps", move |args: SleepArgs| {
        let calls = counted.clone();
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(args.ms)).await;
            Ok::<_, weft_core::tool::ToolError>("slept")
        }
    });
    let planner = ScriptedPlanner::new(vec![call(400), call(1), PlanResult::final_text("done")]);
    let agent = Agent::builder("a", Arc::new(planner))
        .toolset(Arc::new(tools))
        .build();
    let runtime = Runtime::builder()
        .agent(agent)
        .session_store(store.clone())
        .build();
    let handle = runtime.start("a", StartRequest::user("go")).await.unwrap();
    let mut events = handle.events().await.unwrap();
    loop {
        let e = events.next().await.unwrap().unwrap();
        if matches!(e.kind, EventKind::ToolStarted { .. }) {
            break;
        }
    }
    // Another process, an hour ahead by its clock, finds the lease lapsed
    // and takes the run while the first call still runs.
    let later = Timestamp::from_millis(now_ms() + 3_600_000);
    let claim = store
        .acquire_lease(
            handle.run_id(),
            LeaseRequest {
                owner: "another-process",
                expires_at: Timestamp::from_millis(now_ms() + 7_200_000),
            },
            later,
        )
        .await
        .unwrap();
    assert!(matches!(claim, LeaseClaim::Granted { .. }), "{claim:?}");
    let logged = store.read_events(handle.run_id(), 0, None).await.unwrap();

    // Long enough for the first call to end and the second to have run.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the stale driver ran a tool"
    );
    let stored = store.load_run(handle.run_id()).await.unwrap().unwrap();
    assert_eq!(stored.record.status, RunStatus::Running);
    let after = store.read_events(handle.run_id(), 0, None).await.unwrap();
    assert_eq!(after, logged, "the stale driver's commit was applied");
}

on_both_stores!(a_driver_that_lost_its_lease_runs_no_more_tools);
