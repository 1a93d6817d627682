//! `GET /metrics` counts what goes wrong: a run whose planner fails adds to
//! the failed-runs counter (by agent and reason), and a driver task that
//! panics adds to the drive-errors counter (by reason), not to the failed
//! runs. A real server over a SQLite store, with the [`Metrics`] as the
//! runtime's observer, as `weft serve` wires them.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use common::TOKEN_A;
use common::served::Served;
use weft_core::planner::{PlanInput, PlanResult, PlanResumeInput, Planner, PlannerError};
use weft_runtime::{Agent, Runtime, ScriptedPlanner};
use weft_server::{AppState, Metrics, MetricsAccess, Tenants};

/// A planner whose first turn panics.
struct Panicking;

#[async_trait]
impl Planner for Panicking {
    async fn plan_start(&self, _: PlanInput<'_>) -> Result<PlanResult, PlannerError> {
        panic!("the planner exploded")
    }

    async fn plan_resume(&self, _: PlanResumeInput<'_>) -> Result<PlanResult, PlannerError> {
        panic!("the planner exploded")
    }
}

/// A server whose runtime reports to the metrics it serves openly, with
/// `broken` (a script with no turns: its planner fails at once) and
/// `panicky` (its planner panics).
async fn server() -> (Served, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("weft.db").display());
    let store = weft_store::connect(&url).await.unwrap();
    let metrics = Arc::new(Metrics::new());
    let runtime = Runtime::builder()
        .session_store(store.clone())
        .observer(metrics.clone())
        .agent(Agent::builder("broken", Arc::new(ScriptedPlanner::new(Vec::new()))).build())
        .agent(Agent::builder("panicky", Arc::new(Panicking)).build())
        .build();
    let tenants = Tenants::parse(&format!("tenant-a={TOKEN_A}")).unwrap();
    let state = AppState::new(runtime, store, tenants).with_metrics(metrics, MetricsAccess::Open);
    (Served::start(state).await, dir)
}

/// The value of `series` (a name with its labels) in the exposition, if any.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        let (name, value) = l.rsplit_once(' ')?;
        (name == series).then(|| value.parse().unwrap())
    })
}

/// Scrapes until `series` shows `want`; the whole exposition.
async fn until(server: &Served, series: &str, want: f64) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let reply = server
            .client
            .get(server.url("/metrics"))
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 200);
        let text = reply.text().await.unwrap();
        if sample(&text, series) == Some(want) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{series} never reached {want}:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

const BROKEN_FAILED: &str = r#"weft_runs_failed_total{agent="broken",reason="planner"}"#;
const BROKEN_FINISHED: &str = r#"weft_runs_finished_total{agent="broken",outcome="failed"}"#;
const PANICS: &str = r#"weft_run_drive_errors_total{reason="panic"}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_counts_as_failed_by_reason() {
    let (server, _dir) = server().await;
    let before = until(&server, "weft_event_streams_open", 0.0).await;
    assert_eq!(sample(&before, BROKEN_FAILED), None, "nothing failed yet");

    server.started(TOKEN_A, "broken").await;
    let after = until(&server, BROKEN_FAILED, 1.0).await;
    assert_eq!(sample(&after, BROKEN_FINISHED), Some(1.0));
    assert_eq!(
        sample(&after, r#"weft_runs_started_total{agent="broken"}"#),
        Some(1.0)
    );
    assert_eq!(
        sample(&after, PANICS),
        None,
        "a failed run is no drive error"
    );

    server.started(TOKEN_A, "broken").await;
    until(&server, BROKEN_FAILED, 2.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_driver_counts_as_a_drive_error() {
    let (server, _dir) = server().await;
    let before = until(&server, "weft_event_streams_open", 0.0).await;
    assert_eq!(sample(&before, PANICS), None, "no drive error yet");

    let run = server.started(TOKEN_A, "panicky").await;
    let after = until(&server, PANICS, 1.0).await;
    // The run has no outcome: it is paused for a human to look at.
    assert!(
        !after.contains(r#"weft_runs_failed_total{agent="panicky""#),
        "{after}"
    );
    assert!(
        !after.contains(r#"weft_runs_finished_total{agent="panicky""#),
        "{after}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let view: serde_json::Value = server
            .get(&format!("/v1/runs/{run}"), TOKEN_A)
            .await
            .json()
            .await
            .unwrap();
        if view["paused"] == true {
            break;
        }
        assert!(Instant::now() < deadline, "the run was not paused: {view}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
