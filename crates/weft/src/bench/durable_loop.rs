//! `weft bench durable-loop`: workload W(k) (see [`super::agent_loop`]) with
//! each store behind the runtime — in memory, SQLite, PostgreSQL — so the
//! cost of durability per step is visible.
//!
//! For each store it prints one JSON line: µs per step over sequential runs
//! (a step commits the plan, then the tool result: two durable writes), and
//! durable steps per second with `concurrent` runs at once. The durable
//! stores' lines also carry `snapshot_write_bytes`: what one commit of a
//! run writes to `runs.snapshot` and its parts at step 10 and at step 1,000
//! ([`weft_store::bench::snapshot_write_bytes`]), next to the bytes of the
//! whole machine at those steps.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};
use weft_core::store::RunStore;
use weft_runtime::{Agent, MemoryStore, Runtime, RuntimeError, StartRequest};

use super::agent_loop::LoopPlanner;
use super::runs_for;
use crate::builtin;

/// Settings of the durable-loop benchmark.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Tool-calling turns per run.
    pub k: u32,
    /// Minimum seconds of sequential runs per store.
    pub seconds: f64,
    /// Runs at once for the throughput figure.
    pub concurrent: usize,
    /// The PostgreSQL URL (`None` skips PostgreSQL).
    pub postgres: Option<String>,
}

fn runtime(k: u32, store: Arc<dyn RunStore>) -> Runtime {
    let agent = Agent::builder("w", Arc::new(LoopPlanner { k }))
        // No caps: W(k) runs k turns whatever k is.
        .policy(weft_core::run::Policy::default())
        .toolset(builtin::calc())
        .build();
    Runtime::builder().agent(agent).store(store).build()
}

async fn measure(
    name: &str,
    store: Arc<dyn RunStore>,
    s: &Settings,
) -> Result<Value, RuntimeError> {
    let rt = runtime(s.k, store);
    let (runs, seq_secs) = runs_for(&rt, 5, s.seconds).await?;
    let steps = (runs * u64::from(s.k)) as f64;
    let started = Instant::now();
    let mut handles = Vec::with_capacity(s.concurrent);
    for _ in 0..s.concurrent {
        handles.push(rt.start("w", StartRequest::user("go")).await?);
    }
    for h in &handles {
        h.outcome().await?;
    }
    let conc_secs = started.elapsed().as_secs_f64();
    let conc_steps = (s.concurrent as u64 * u64::from(s.k)) as f64;
    Ok(json!({
        "bench": "durable-loop",
        "store": name,
        "k": s.k,
        "sequential_runs": runs,
        "us_per_step": round(seq_secs * 1e6 / steps),
        "sequential_steps_per_s": round(steps / seq_secs),
        "concurrent_runs": s.concurrent,
        "durable_steps_per_s": round(conc_steps / conc_secs),
    }))
}

fn round(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// Runs the benchmark on every store, one JSON line each (a store that cannot
/// be opened gets a line with its error).
pub fn run(s: &Settings) -> anyhow::Result<Vec<Value>> {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    tokio.block_on(async {
        let mut lines = Vec::new();
        lines.push(measure("memory", Arc::new(MemoryStore::keep_finished(1000)), s).await?);
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("bench.db");
        let sqlite: Arc<dyn RunStore> = weft_store::connect(&path.display().to_string()).await?;
        let written = weft_store::bench::snapshot_write_bytes(&[10, 1000]);
        let mut line = measure("sqlite", sqlite, s).await?;
        line["snapshot_write_bytes"] = written.clone();
        lines.push(line);
        if let Some(url) = &s.postgres {
            match weft_store::connect(url).await {
                Ok(pg) => {
                    let mut line = measure("postgres", pg, s).await?;
                    line["snapshot_write_bytes"] = written;
                    lines.push(line);
                }
                Err(e) => lines.push(
                    json!({"bench": "durable-loop", "store": "postgres", "error": e.to_string()}),
                ),
            }
        }
        Ok(lines)
    })
}
