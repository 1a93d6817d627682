//! Benchmarks of the durable step: [`bench_commit`] (one run, commits one
//! after another: the latency of a step) and [`bench_commit_concurrent`]
//! (many runs committing at once: the throughput of durable steps), for
//! `weft bench` and the store's example.
//!
//! A step is a commit of three events and the machine snapshot, a machine
//! with a ten-message transcript (about 3 KB of JSON). Both report also
//! [`snapshot_write_bytes`]: what a commit of a growing run writes to
//! `runs.snapshot` and the parts table at its 10th and 1,000th step.

use std::time::{Duration, Instant};

use futures_util::future::try_join_all;
use serde_json::{Value, json};
use weft_core::event::{EventKind, RunEvent};
use weft_core::message::Message;
use weft_core::planner::{PlanResult, ToolCallRequest};
use weft_core::run::{RunConfig, RunMachine, Step, ToolCatalog};
use weft_core::store::{Commit, RunRecord, RunStatus, RunStore, StoreError};
use weft_core::tool::{FieldIssue, ToolIdent, ToolOutput, ToolSpec};
use weft_core::{AgentId, RunId, SessionId, Timestamp};

/// Events each benchmark step commits.
const EVENTS_PER_STEP: u64 = 3;

/// The steps at which [`snapshot_write_bytes`] is reported by the benchmarks.
const WRITE_STEPS: [usize; 2] = [10, 1000];

/// Creates a fresh run and commits `steps` steps to it, one after another;
/// reports `{"steps", "events_per_step", "snapshot_bytes", "total_ms",
/// "us_per_commit", "commits_per_sec", "snapshot_write_bytes"}`, or
/// `{"error": ...}`.
pub async fn bench_commit(store: &dyn RunStore, steps: usize) -> Value {
    bench_commit_concurrent(store, 1, steps).await
}

/// Creates `runs` fresh runs and commits `steps` steps to each, the runs
/// concurrently; reports like [`bench_commit`] plus `"runs"`, where
/// `us_per_commit` is wall time divided by all commits.
pub async fn bench_commit_concurrent(store: &dyn RunStore, runs: usize, steps: usize) -> Value {
    let machine = machine();
    let snapshot_bytes = serde_json::to_vec(&machine).map_or(0, |v| v.len());
    let tag = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    let started = Instant::now();
    let all = try_join_all((0..runs.max(1)).map(|r| {
        one_run(
            store,
            RunId::new(format!("bench-{tag}-{r}")),
            &machine,
            steps,
        )
    }));
    match all.await {
        Ok(_) => report(runs.max(1), steps, snapshot_bytes, started.elapsed()),
        Err(e) => json!({ "error": e.to_string() }),
    }
}

fn machine() -> RunMachine {
    let messages = (0..10)
        .map(|i| {
            Message::user(format!(
                "message {i}: {}",
                "lorem ipsum dolor sit amet ".repeat(8)
            ))
        })
        .collect();
    RunMachine::new(
        RunConfig::new("bench", "bench", messages),
        Timestamp::from_millis(0),
    )
}

async fn one_run(
    store: &dyn RunStore,
    run_id: RunId,
    machine: &RunMachine,
    steps: usize,
) -> Result<(), StoreError> {
    let now = Timestamp::from_millis(0);
    let record = RunRecord {
        run_id: run_id.clone(),
        agent_id: AgentId::new("bench"),
        session_id: SessionId::new(run_id.as_str()),
        status: RunStatus::Running,
        labels: Default::default(),
        created_at: now,
        updated_at: now,
    };
    // Leased and fenced, as the runtime commits.
    let lease = weft_core::lease::LeaseRequest {
        owner: "bench",
        expires_at: Timestamp::from_millis(u64::MAX >> 2),
    };
    let epoch = store
        .create_leased_run(&record, &[], machine, lease)
        .await?;
    let mut seq = 0;
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
                snapshot: Some(machine),
                status: RunStatus::Running,
                now,
                fence: Some(epoch),
            })
            .await?;
    }
    Ok(())
}

fn report(runs: usize, steps: usize, snapshot_bytes: usize, elapsed: Duration) -> Value {
    let commits = (runs * steps).max(1) as f64;
    let us = elapsed.as_secs_f64() * 1e6 / commits;
    json!({
        "runs": runs,
        "steps": steps,
        "events_per_step": EVENTS_PER_STEP,
        "snapshot_bytes": snapshot_bytes,
        "total_ms": elapsed.as_secs_f64() * 1e3,
        "us_per_commit": us,
        "commits_per_sec": if us > 0.0 { 1e6 / us } else { 0.0 },
        "snapshot_write_bytes": snapshot_write_bytes(&WRITE_STEPS),
    })
}

/// The median time of one `fdatasync` in `dir` on this machine: `samples`
/// appends of 4 KiB to a scratch file, each synced (`File::sync_data`); the
/// floor under a durable commit. The file is removed afterwards.
pub fn fdatasync_p50(dir: &std::path::Path, samples: usize) -> std::io::Result<Duration> {
    use std::io::Write as _;
    let path = dir.join("weft-fdatasync-probe");
    let mut file = std::fs::File::create(&path)?;
    let block = [0x5au8; 4096];
    let mut times = Vec::with_capacity(samples.max(1));
    for _ in 0..samples.max(1) {
        file.write_all(&block)?;
        let started = Instant::now();
        file.sync_data()?;
        times.push(started.elapsed());
    }
    drop(file);
    std::fs::remove_file(&path)?;
    times.sort();
    Ok(times[times.len() / 2])
}

/// The bytes one commit of a run writes to `runs.snapshot` and the parts
/// table (JSON: the head and the parts the store does not hold yet), at
/// each of `steps` of one run, next to the bytes of the whole machine (what
/// a commit wrote before snapshots were stored in parts): `{"step_N":
/// {"snapshot_and_parts": .., "whole_snapshot": ..}, ...}`. A step is one
/// tool-calling turn (a call and its result: two messages, one output),
/// committed once; computed from the encoded commits, without a database.
pub fn snapshot_write_bytes(steps: &[usize]) -> Value {
    let last = steps.iter().copied().max().unwrap_or(0);
    let catalog = EchoCatalog::new();
    let mut m = machine();
    let mut known = (0, 0);
    let mut report = serde_json::Map::new();
    for step in 1..=last {
        if let Err(e) = turn(&mut m, step, &catalog) {
            return json!({ "error": e });
        }
        m.drain_events().for_each(drop);
        let written = match weft_store::commit_bytes(&m, known.0, known.1) {
            Ok(bytes) => bytes,
            Err(e) => return json!({ "error": e.to_string() }),
        };
        known = (m.transcript().len(), m.tool_outputs().len());
        if steps.contains(&step) {
            let whole = serde_json::to_vec(&m).map_or(0, |v| v.len());
            report.insert(
                format!("step_{step}"),
                json!({ "snapshot_and_parts": written, "whole_snapshot": whole }),
            );
        }
    }
    Value::Object(report)
}

/// One tool-calling turn of `m`: a call of `bench.echo` and its result.
fn turn(m: &mut RunMachine, step: usize, catalog: &EchoCatalog) -> Result<(), String> {
    let now = Timestamp::from_millis(step as u64);
    if !matches!(m.next_step(now), Step::Plan { .. }) {
        return Err(format!("the machine does not plan at step {step}"));
    }
    let call =
        ToolCallRequest::new("bench.echo", json!({ "step": step })).with_id(format!("call-{step}"));
    m.plan_result(PlanResult::tool_calls(vec![call]), now, catalog)
        .map_err(|e| e.to_string())?;
    let calls = match m.next_step(now) {
        Step::ExecuteTools { calls } => calls.iter().cloned().collect::<Vec<_>>(),
        _ => return Err(format!("the machine executes no tools at step {step}")),
    };
    let outputs = calls
        .into_iter()
        .map(|c| {
            let text = format!("echo of step {step}: {}", "lorem ipsum ".repeat(8));
            ToolOutput::ok(c.id, c.name, c.payload, Value::String(text))
        })
        .collect();
    m.tool_results(outputs, now).map_err(|e| e.to_string())?;
    Ok(())
}

/// One tool, `bench.echo`, taking any arguments.
struct EchoCatalog {
    spec: ToolSpec,
}

impl EchoCatalog {
    fn new() -> Self {
        Self {
            spec: ToolSpec {
                name: ToolIdent::new("bench.echo"),
                description: "Echoes its input.".into(),
                input_schema: json!({"type": "object"}),
                output_schema: None,
                annotations: Default::default(),
                tags: Vec::new(),
            },
        }
    }
}

impl ToolCatalog for EchoCatalog {
    fn spec(&self, name: &str) -> Option<&ToolSpec> {
        (self.spec.name.as_str() == name).then_some(&self.spec)
    }

    fn names(&self) -> Vec<ToolIdent> {
        vec![self.spec.name.clone()]
    }

    fn validate(&self, _spec: &ToolSpec, _arguments: &Value) -> Result<(), Vec<FieldIssue>> {
        Ok(())
    }
}
