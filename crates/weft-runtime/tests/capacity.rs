//! Runs go to whichever process has room: two runtimes on one store stand
//! for two processes, each allowed to drive 2 runs at once. Eight runs are
//! started on the first; past its room they wait in the store's queue, and
//! both processes' sweepers take them as places free. No process ever
//! drives more than its limit, the second one drives some of them, and
//! every run finishes.

#[macro_use]
mod stores;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use weft_core::planner::{PlanResult, ToolCallRequest};
use weft_core::run::RunOutcome;
use weft_runtime::{Agent, Runtime, ScriptedPlanner, StartRequest};
use weft_tools::FnToolSet;

use stores::Db;

#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    ms: u64,
}

/// Runs in flight in one process, and the most seen at once.
#[derive(Default)]
struct Load {
    now: AtomicUsize,
    peak: AtomicUsize,
    calls: AtomicUsize,
}

fn process(store: Arc<dyn weft_core::session::FullStore>, load: Arc<Load>) -> Runtime {
    let tools = FnToolSet::new("t").tool("sleep", "Sleeps", move |args: SleepArgs| {
        let load = load.clone();
        async move {
            let now = load.now.fetch_add(1, Ordering::SeqCst) + 1;
            load.peak.fetch_max(now, Ordering::SeqCst);
            load.calls.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(args.ms)).await;
            load.now.fetch_sub(1, Ordering::SeqCst);
            Ok::<_, weft_core::tool::ToolError>("slept")
        }
    });
    let planner = ScriptedPlanner::new(vec![
        PlanResult::tool_calls(vec![ToolCallRequest::new("t.sleep", json!({"ms": 150}))]),
        PlanResult::final_text("done"),
    ]);
    let agent = Agent::builder("a", Arc::new(planner))
        .toolset(Arc::new(tools))
        .build();
    Runtime::builder()
        .agent(agent)
        .session_store(store)
        .lease_ttl(Duration::from_millis(400))
        .max_driven_runs(2)
        .build()
}

async fn runs_past_a_process_s_room_wait_for_any_process_with_room(db: &Db) {
    let (load_a, load_b) = (Arc::new(Load::default()), Arc::new(Load::default()));
    let a = process(db.open().await, load_a.clone());
    let b = process(db.open().await, load_b.clone());
    let _sweepers = (a.start_sweeper(), b.start_sweeper());
    let mut handles = Vec::new();
    for _ in 0..8 {
        handles.push(a.start("a", StartRequest::user("go")).await.unwrap());
    }
    for handle in handles {
        let outcome = tokio::time::timeout(Duration::from_secs(30), handle.outcome())
            .await
            .expect("every run finishes")
            .unwrap();
        assert!(
            matches!(outcome, RunOutcome::Response { .. }),
            "{outcome:?}"
        );
    }
    let (peak_a, peak_b) = (
        load_a.peak.load(Ordering::SeqCst),
        load_b.peak.load(Ordering::SeqCst),
    );
    assert!(peak_a <= 2 && peak_b <= 2, "peaks {peak_a} and {peak_b}");
    let (calls_a, calls_b) = (
        load_a.calls.load(Ordering::SeqCst),
        load_b.calls.load(Ordering::SeqCst),
    );
    assert_eq!(calls_a + calls_b, 8, "each run's call ran once");
    assert!(calls_b > 0, "the process with room took queued runs");
}

on_both_stores!(runs_past_a_process_s_room_wait_for_any_process_with_room);
