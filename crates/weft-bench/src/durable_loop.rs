//! `weft bench durable-loop`: workload W(k) (see [`super::agent_loop`]) with
//! each store behind the runtime — in memory, SQLite, PostgreSQL, the
//! durable ones in each durability mode — so the cost of durability per step
//! is visible.
//!
//! For each store it prints one JSON line: µs per step over sequential runs,
//! and durable steps per second with `concurrent` runs at once (started
//! together, round after round for a third of the sequential time). SQLite's
//! lines also carry the machine's `fdatasync` p50 (the floor under a synced
//! commit), the commits per step of the sequential runs, and how group
//! commit grouped the concurrent runs' commits (transactions, commits,
//! mean and largest batch). The durable stores' lines carry
//! `snapshot_write_bytes`: what one commit of a run writes to
//! `runs.snapshot` and its parts at step 10 and at step 1,000
//! ([`crate::store_commit::snapshot_write_bytes`]), next to the bytes of the
//! whole machine at those steps.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};
use weft_core::store::RunStore;
use weft_runtime::{Agent, MemoryStore, Runtime, RuntimeError, StartRequest};
use weft_store::{Durability, GroupCommitStats, SqliteOptions, SqliteStore};

use super::agent_loop::LoopPlanner;
use super::runs_for;
use weft_tools::builtin;

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

/// Unmeasured runs first, per store.
const WARMUP: u32 = 5;

fn runtime(k: u32, store: Arc<dyn RunStore>) -> Runtime {
    let agent = Agent::builder("w", Arc::new(LoopPlanner { k, gate: None }))
        // No caps: W(k) runs k turns whatever k is.
        .policy(weft_core::run::Policy::default())
        .toolset(builtin::calc())
        .build();
    Runtime::builder().agent(agent).store(store).build()
}

/// Measures W(k) on `store`; `groups` reads its group-commit counters.
async fn measure(
    name: &str,
    store: Arc<dyn RunStore>,
    groups: Option<&dyn Fn() -> GroupCommitStats>,
    s: &Settings,
) -> Result<Value, RuntimeError> {
    let rt = runtime(s.k, store);
    let before = groups.map(|g| g());
    let (runs, seq_secs) = runs_for(&rt, WARMUP, s.seconds).await?;
    let steps = (runs * u64::from(s.k)) as f64;
    let sequential = groups.map(|g| g());
    // Rounds of `concurrent` runs, each round started at once as that many
    // clients would (their creations share commits too), until a third of
    // the sequential time has passed: one round of short runs is over too
    // soon to measure.
    let started = Instant::now();
    let mut rounds = 0u64;
    while rounds == 0 || started.elapsed().as_secs_f64() < s.seconds / 3.0 {
        let handles = futures_util::future::try_join_all(
            (0..s.concurrent).map(|_| rt.start("w", StartRequest::user("go"))),
        )
        .await?;
        for h in &handles {
            h.outcome().await?;
        }
        rounds += 1;
    }
    let conc_secs = started.elapsed().as_secs_f64();
    let conc_steps = (rounds * s.concurrent as u64 * u64::from(s.k)) as f64;
    let mut line = json!({
        "bench": "durable-loop",
        "store": name,
        "k": s.k,
        "sequential_runs": runs,
        "us_per_step": round(seq_secs * 1e6 / steps),
        "sequential_steps_per_s": round(steps / seq_secs),
        "concurrent_runs": s.concurrent,
        "concurrent_rounds": rounds,
        "durable_steps_per_s": round(conc_steps / conc_secs),
    });
    if let (Some(g), Some(before), Some(sequential)) = (groups, before, sequential) {
        let seq = sequential.since(&before);
        let all_steps = ((runs + u64::from(WARMUP)) * u64::from(s.k)) as f64;
        line["commits_per_step"] = json!(round(seq.commits as f64 / all_steps));
        let conc = g().since(&sequential);
        line["group_commit"] = json!({
            "transactions": conc.batches,
            "commits": conc.commits,
            "mean_batch": round(conc.mean()),
            "largest_batch": conc.largest,
        });
    }
    Ok(line)
}

fn round(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// SQLite in `mode`, in a fresh file under `dir`.
async fn sqlite(dir: &std::path::Path, mode: Durability, s: &Settings) -> anyhow::Result<Value> {
    let path = dir.join(format!("bench-{mode}.db"));
    let store =
        Arc::new(SqliteStore::open_with(SqliteOptions::new(path).with_durability(mode)).await?);
    let counters = store.clone();
    let groups = move || counters.group_commit_stats().unwrap_or_default();
    let mut line = measure(&format!("sqlite/{mode}"), store.clone(), Some(&groups), s).await?;
    if let Some(c) = store.checkpoint_stats() {
        line["background_checkpoints"] =
            json!({"checkpoints": c.checkpoints, "largest_wal_frames": c.largest_wal_frames});
    }
    store.close().await;
    Ok(line)
}

/// PostgreSQL at `url` in `mode`; a line with the error when it cannot be opened.
async fn postgres(url: &str, mode: Durability, s: &Settings) -> anyhow::Result<Value> {
    let name = format!("postgres/{mode}");
    let mut options = weft_store::PostgresOptions::from_url(url);
    options.durability = mode;
    match weft_store::PostgresStore::open_with(options).await {
        Ok(pg) => {
            let store = Arc::new(pg);
            let counters = store.clone();
            let groups = move || counters.group_commit_stats();
            let line = measure(&name, store.clone(), Some(&groups), s).await?;
            store.close().await;
            Ok(line)
        }
        Err(e) => Ok(json!({"bench": "durable-loop", "store": name, "error": e.to_string()})),
    }
}

/// Runs the benchmark on every store, one JSON line each.
pub fn run(s: &Settings) -> anyhow::Result<Vec<Value>> {
    let dir = tempfile::tempdir()?;
    let fdatasync = crate::store_commit::fdatasync_p50(dir.path(), 200)?;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    tokio.block_on(async {
        let mut lines = Vec::new();
        lines.push(
            measure(
                "memory",
                Arc::new(MemoryStore::keep_finished(1000)),
                None,
                s,
            )
            .await?,
        );
        let written = crate::store_commit::snapshot_write_bytes(&[10, 1000]);
        for mode in [Durability::Sync, Durability::Process] {
            let mut line = sqlite(dir.path(), mode, s).await?;
            line["fdatasync_p50_us"] = json!(round(fdatasync.as_secs_f64() * 1e6));
            line["snapshot_write_bytes"] = written.clone();
            lines.push(line);
        }
        if let Some(url) = &s.postgres {
            for mode in [Durability::Sync, Durability::Process] {
                let mut line = postgres(url, mode, s).await?;
                line["snapshot_write_bytes"] = written.clone();
                lines.push(line);
            }
        }
        Ok(lines)
    })
}
