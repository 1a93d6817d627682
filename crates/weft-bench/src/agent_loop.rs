//! Workload W(k): a scripted planner that on turns 1..=k calls the in-process
//! tool `calc.add` with `{"a": turn, "b": 1}` and on turn k+1 answers "done".
//! A step is one planner turn plus its tool call.
//!
//! Two measurements, printed as JSON lines:
//! - sequential: runs one after another for at least `seconds`; µs per step
//!   and runs per second (the store keeps the last 1000 finished runs);
//! - concurrent: `concurrent` runs started at once; wall time and resident
//!   memory per run (peak RSS minus the RSS before the runs, divided by the
//!   number of runs), and the heap in use and resident size per run while
//!   all of them wait halfway ([`super::gate`]), and the heap per run once
//!   all have finished. Runs, their event logs and snapshots stay in the
//!   in-memory store, so this counts everything a run leaves behind.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use weft_core::planner::{
    PlanInput, PlanResult, PlanResumeInput, Planner, PlannerError, ToolCallRequest,
};
use weft_runtime::{Agent, MemoryStore, Runtime, RuntimeError, StartRequest};

use super::gate::Gate;
use super::heap::HeapProbe;
use super::{one_run, rss, runs_for};
use weft_tools::builtin;

/// The W(k) planner.
#[derive(Debug, Clone, Default)]
pub struct LoopPlanner {
    /// Number of tool-calling turns.
    pub k: u32,
    /// Where runs wait halfway through their turns, when set.
    pub gate: Option<Arc<Gate>>,
}

impl LoopPlanner {
    fn turn(&self, turn: u32) -> PlanResult {
        if turn <= self.k {
            PlanResult::tool_calls(vec![ToolCallRequest::new(
                "calc.add",
                json!({"a": turn, "b": 1}),
            )])
        } else {
            PlanResult::final_text("done")
        }
    }
}

#[async_trait]
impl Planner for LoopPlanner {
    async fn plan_start(&self, _input: PlanInput<'_>) -> Result<PlanResult, PlannerError> {
        Ok(self.turn(1))
    }

    async fn plan_resume(&self, input: PlanResumeInput<'_>) -> Result<PlanResult, PlannerError> {
        let done = u32::try_from(input.tool_outputs.len()).unwrap_or(u32::MAX);
        if let Some(gate) = &self.gate
            && done == (self.k / 2).max(1)
        {
            gate.pass().await;
        }
        Ok(self.turn(done.saturating_add(1)))
    }
}

/// Settings of the agent-loop benchmark.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Tool-calling turns per run.
    pub k: u32,
    /// Minimum duration of the sequential part.
    pub seconds: f64,
    /// Runs started at once in the concurrent part.
    pub concurrent: usize,
    /// Keep only this many finished runs in the store during the concurrent
    /// part (all when absent), to separate the runtime's own memory per run
    /// from what the store retains.
    pub keep_finished: Option<usize>,
}

fn runtime(k: u32, store: MemoryStore, gate: Option<Arc<Gate>>) -> Runtime {
    let agent = Agent::builder("w", Arc::new(LoopPlanner { k, gate }))
        // No caps: W(k) runs k turns whatever k is.
        .policy(weft_core::run::Policy::default())
        .toolset(builtin::calc())
        .build();
    Runtime::builder()
        .agent(agent)
        .store(Arc::new(store))
        .build()
}

/// The sequential measurement, on a single-threaded runtime.
pub fn sequential(s: Settings) -> anyhow::Result<Value> {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    tokio.block_on(async {
        // Finished runs beyond the last 1000 are dropped, so the figure is the
        // runtime's cost per step, not the cost of a store growing for ever.
        let rt = runtime(s.k, MemoryStore::keep_finished(1000), None);
        let (runs, secs) = runs_for(&rt, 100, s.seconds).await?;
        let steps = runs * u64::from(s.k);
        Ok(json!({
            "bench": "agent-loop",
            "mode": "sequential",
            "k": s.k,
            "runs": runs,
            "seconds": round(secs, 3),
            "us_per_step": round(secs * 1e6 / steps as f64, 3),
            "runs_per_s": round(runs as f64 / secs, 1),
        }))
    })
}

/// The concurrent measurement, on a multi-threaded runtime.
pub fn concurrent(s: Settings) -> anyhow::Result<Value> {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    tokio.block_on(async {
        let store = match s.keep_finished {
            Some(n) => MemoryStore::keep_finished(n),
            None => MemoryStore::new(),
        };
        // Runs wait halfway (when they have a half to wait at), so memory
        // is read with all of them in flight.
        let gate = (s.k >= 1).then(|| Arc::new(Gate::default()));
        let rt = runtime(s.k, store, gate.clone());
        // Warm up: list tools, fill allocator caches.
        for _ in 0..10 {
            match one_run(&rt).await {
                Err(e) if s.keep_finished.is_some() && forgotten(&e) => {}
                other => other?,
            }
        }
        if let Some(gate) = &gate {
            gate.arm();
        }
        let peak_reset = rss::reset_peak();
        let baseline = rss::current_kib().unwrap_or(0);
        let heap = HeapProbe::start();
        let heap_baseline = heap.in_use();
        let started = Instant::now();
        let mut handles = Vec::with_capacity(s.concurrent);
        for _ in 0..s.concurrent {
            handles.push(rt.start("w", StartRequest::user("go")).await?);
        }
        let (mut in_flight_rss, mut in_flight_heap) = (None, None);
        if let Some(gate) = &gate {
            // A run that fails before the gate never arrives: then no
            // in-flight figures, and its error is reported below.
            let all = gate.all_arrived(s.concurrent);
            if tokio::time::timeout(Duration::from_secs(60), all).await.is_ok() {
                in_flight_rss = rss::current_kib();
                in_flight_heap = heap.in_use();
            }
            gate.open();
        }
        for h in &handles {
            match h.outcome().await {
                Ok(o) if o.is_success() => {}
                // With a bounded store, a run that finished before we asked
                // may already be forgotten: that is its only way to vanish.
                Err(e) if s.keep_finished.is_some() && forgotten(&e) => {}
                Ok(_) => return Err(RuntimeError::Interrupted(h.run_id().clone()).into()),
                Err(e) => return Err(e.into()),
            }
        }
        let wall = started.elapsed();
        // What the finished runs leave behind in the store.
        let finished_heap = heap.in_use();
        drop(heap);
        let peak = rss::peak_kib().unwrap_or(0);
        let runs = s.concurrent as f64;
        let per_run = peak.saturating_sub(baseline) as f64 / runs;
        let kib_per = |now: Option<u64>, before: u64, unit: f64| {
            now.map(|n| round(n.saturating_sub(before) as f64 / unit / runs, 2))
        };
        Ok(json!({
            "bench": "agent-loop",
            "mode": "concurrent",
            "k": s.k,
            "runs": s.concurrent,
            "wall_ms": round(wall.as_secs_f64() * 1e3, 2),
            "rss_baseline_kib": baseline,
            "rss_peak_kib": peak,
            "peak_reset": peak_reset,
            "store_keeps_finished": s.keep_finished,
            "kib_per_run": round(per_run, 2),
            "in_flight_rss_kib_per_run": kib_per(in_flight_rss, baseline, 1.0),
            "in_flight_heap_kib_per_run": heap_baseline.and_then(|b| kib_per(in_flight_heap, b, 1024.0)),
            "finished_heap_kib_per_run": heap_baseline.and_then(|b| kib_per(finished_heap, b, 1024.0)),
        }))
    })
}

/// Whether `e` says the run is gone from a store that forgets finished runs.
fn forgotten(e: &RuntimeError) -> bool {
    matches!(
        e,
        RuntimeError::RunNotFound(_)
            | RuntimeError::Store(weft_core::store::StoreError::RunNotFound { .. })
    )
}

fn round(v: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (v * f).round() / f
}
