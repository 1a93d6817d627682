//! Tests of [`StartableToolSet`]: single flight, failure streaks, recovery, stop.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use tokio::sync::Semaphore;
use weft_core::ids::{RunId, SessionId, ToolCallId, TurnId};
use weft_core::tool::{RetryReason, ToolError, ToolIdent, ToolRequest, ToolSpec};

use super::StartableToolSet;
use crate::capability::{Lifecycle, find_lifecycle};
use crate::toolset::{ToolFailure, ToolReply, ToolSet};

/// A toolset that counts its starts and stops and fails its first `fail_first` starts.
#[derive(Default)]
struct Probe {
    starts: AtomicUsize,
    stops: AtomicUsize,
    fail_first: usize,
    /// When set, each start waits for a permit.
    gate: Option<Arc<Semaphore>>,
}

#[async_trait]
impl ToolSet for Probe {
    fn name(&self) -> &str {
        "probe"
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        Ok(Vec::new())
    }

    async fn call_tool(&self, _request: ToolRequest) -> Result<ToolReply, ToolFailure> {
        Ok(ToolReply::json(json!("ok")))
    }

    fn lifecycle(&self) -> Option<&dyn Lifecycle> {
        Some(self)
    }
}

#[async_trait]
impl Lifecycle for Probe {
    async fn start(&self) -> Result<(), ToolError> {
        let n = self.starts.fetch_add(1, Ordering::SeqCst);
        match &self.gate {
            Some(gate) => drop(gate.acquire().await),
            None => tokio::time::sleep(Duration::from_millis(5)).await,
        }
        if n < self.fail_first {
            return Err(ToolError::new("boom", format!("start {n} failed")));
        }
        Ok(())
    }

    async fn stop(&self) -> Result<(), ToolError> {
        self.stops.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

fn request() -> ToolRequest {
    ToolRequest {
        name: ToolIdent::from("probe.x"),
        payload: json!({}).into(),
        run_id: RunId::new("r"),
        session_id: SessionId::new("s"),
        turn_id: TurnId::new("t"),
        tool_call_id: ToolCallId::new("c"),
        parent_tool_call_id: None,
        labels: Default::default(),
        output: Default::default(),
        elicit: Default::default(),
        children: Default::default(),
    }
}

async fn race(
    set: &Arc<StartableToolSet<Probe>>,
    callers: usize,
) -> Vec<Result<ToolReply, ToolFailure>> {
    let tasks: Vec<_> = (0..callers)
        .map(|_| {
            let set = Arc::clone(set);
            tokio::spawn(async move { set.call_tool(request()).await })
        })
        .collect();
    let mut out = Vec::new();
    for task in tasks {
        out.push(task.await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_concurrent_first_callers_start_once() {
    let set = Arc::new(StartableToolSet::new(Probe::default()));
    let results = race(&set, 100).await;
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(set.get_ref().starts.load(Ordering::SeqCst), 1);
    assert!(set.is_started());
}

#[tokio::test]
async fn concurrent_callers_share_one_failed_attempt_and_the_next_use_retries() {
    let gate = Arc::new(Semaphore::new(0));
    let probe = Probe {
        fail_first: 1,
        gate: Some(Arc::clone(&gate)),
        ..Probe::default()
    };
    let set = Arc::new(StartableToolSet::new(probe));
    let tasks: Vec<_> = (0..100)
        .map(|_| {
            let set = Arc::clone(&set);
            tokio::spawn(async move { set.call_tool(request()).await })
        })
        .collect();
    // On this single-threaded runtime, every spawned task reaches the gate before the sleep ends.
    tokio::time::sleep(Duration::from_millis(20)).await;
    gate.add_permits(1000);
    for task in tasks {
        let failure = task.await.unwrap().unwrap_err();
        assert_eq!(failure.error.code, ToolError::UNAVAILABLE);
        assert_eq!(
            failure.retry_hint.unwrap().reason,
            RetryReason::ToolUnavailable
        );
    }
    assert_eq!(set.get_ref().starts.load(Ordering::SeqCst), 1);
    assert!(set.call_tool(request()).await.is_ok());
    assert_eq!(set.get_ref().starts.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn failure_streak_is_reported_once_and_recovery_once() {
    let set = StartableToolSet::new(Probe {
        fail_first: 2,
        ..Probe::default()
    });
    assert!(!set.should_report_failure());
    assert!(set.call_tool(request()).await.is_err());
    assert!(set.last_error().is_some());
    assert!(set.should_report_failure());
    assert!(!set.should_report_failure());
    assert!(set.call_tool(request()).await.is_err());
    assert!(!set.should_report_failure(), "same streak");
    assert!(!set.consume_recovery());
    assert!(set.call_tool(request()).await.is_ok());
    assert!(set.consume_recovery());
    assert!(!set.consume_recovery());
    assert!(!set.should_report_failure());
    assert!(set.last_error().is_none());
    assert_eq!(set.get_ref().starts.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_success_without_a_streak_is_no_recovery() {
    let set = StartableToolSet::new(Probe::default());
    assert!(set.call_tool(request()).await.is_ok());
    assert!(!set.consume_recovery());
}

#[tokio::test]
async fn stop_resets() {
    let set = StartableToolSet::new(Probe {
        fail_first: 1,
        ..Probe::default()
    });
    assert!(set.start().await.is_err());
    set.stop().await.unwrap();
    assert!(!set.should_report_failure(), "stop ends the streak");
    assert_eq!(
        set.get_ref().stops.load(Ordering::SeqCst),
        0,
        "never started, nothing to stop"
    );
    set.start().await.unwrap();
    assert!(
        !set.consume_recovery(),
        "stop cleared the streak, so no recovery"
    );
    set.stop().await.unwrap();
    assert!(!set.is_started());
    assert_eq!(set.get_ref().stops.load(Ordering::SeqCst), 1);
    assert!(set.list_tools().await.is_ok());
    assert_eq!(set.get_ref().starts.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn the_wrapper_is_the_outermost_lifecycle() {
    let set = StartableToolSet::new(Probe::default());
    let lifecycle = find_lifecycle(&set).unwrap();
    lifecycle.start().await.unwrap();
    lifecycle.start().await.unwrap();
    assert!(set.is_started());
    assert_eq!(set.get_ref().starts.load(Ordering::SeqCst), 1);
}
