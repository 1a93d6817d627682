//! [`bench_commit`]: how long one durable step takes (a commit of a few
//! events and the machine snapshot), for `weft bench` and the store example.

use std::time::Instant;

use serde_json::{Value, json};
use weft_core::event::{EventKind, RunEvent};
use weft_core::message::Message;
use weft_core::run::{RunConfig, RunMachine};
use weft_core::store::{Commit, RunRecord, RunStatus, RunStore, StoreError};
use weft_core::{AgentId, RunId, SessionId, Timestamp};

/// Events each benchmark step commits.
const EVENTS_PER_STEP: u64 = 3;

/// Creates a fresh run and commits `steps` steps to it (each three events and
/// a snapshot with a ten-message transcript), then reports the timing as
/// JSON: `{"steps", "events_per_step", "snapshot_bytes", "total_ms",
/// "us_per_commit", "commits_per_sec"}`, or `{"error": ...}`.
pub async fn bench_commit(store: &dyn RunStore, steps: usize) -> Value {
    match run(store, steps).await {
        Ok(v) => v,
        Err(e) => json!({ "error": e.to_string() }),
    }
}

async fn run(store: &dyn RunStore, steps: usize) -> Result<Value, StoreError> {
    let started_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(0));
    let run_id = RunId::new(format!("bench-{started_ms}"));
    let now = Timestamp::from_millis(started_ms / 1000);
    let messages = (0..10)
        .map(|i| {
            Message::user(format!(
                "message {i}: {}",
                "lorem ipsum dolor sit amet ".repeat(8)
            ))
        })
        .collect();
    let machine = RunMachine::new(
        RunConfig {
            messages,
            ..RunConfig::default()
        },
        now,
    );
    let snapshot_bytes = serde_json::to_vec(&machine).map_or(0, |v| v.len());
    let record = RunRecord {
        run_id: run_id.clone(),
        agent_id: AgentId::new("bench"),
        session_id: SessionId::new(format!("bench-{started_ms}")),
        status: RunStatus::Running,
        labels: Default::default(),
        created_at: now,
        updated_at: now,
    };
    store.create_run(&record, &[], &machine).await?;
    let mut seq = 0;
    let start = Instant::now();
    for step in 0..steps {
        let events: Vec<RunEvent> = (0..EVENTS_PER_STEP)
            .map(|i| {
                seq += 1;
                RunEvent {
                    seq,
                    at: now,
                    kind: EventKind::AssistantChunk {
                        text: format!("step {step} chunk {i}: some streamed assistant text"),
                    },
                }
            })
            .collect();
        store
            .commit(Commit {
                run_id: &run_id,
                events: &events,
                snapshot: Some(&machine),
                status: RunStatus::Running,
                now,
            })
            .await?;
    }
    let elapsed = start.elapsed();
    let steps_f = steps.max(1) as f64;
    let us = elapsed.as_secs_f64() * 1e6 / steps_f;
    Ok(json!({
        "steps": steps,
        "events_per_step": EVENTS_PER_STEP,
        "snapshot_bytes": snapshot_bytes,
        "total_ms": elapsed.as_secs_f64() * 1e3,
        "us_per_commit": us,
        "commits_per_sec": if us > 0.0 { 1e6 / us } else { 0.0 },
    }))
}
