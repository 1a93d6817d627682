//! Snapshot tests: a run committed step by step, stored as a head and its
//! parts, reloads equal to the machine committed, from this store, a
//! reopened one or another one on the same database; its head does not
//! grow with the run; a lost or extra part is a typed error.

use serde_json::json;
use weft_core::message::Message;
use weft_core::planner::{PlanResult, ToolCallRequest};
use weft_core::run::{RunConfig, RunMachine, Step};
use weft_core::session::FullStore;
use weft_core::store::{Commit, RunStatus, StoreError};
use weft_core::tool::ToolOutput;
use weft_core::{RunId, Timestamp};

use super::{Catalog, events, record};

/// Raw SQL on the harness's database, beside the store.
#[async_trait::async_trait]
pub trait RawSql: Send + Sync {
    /// Runs `sql`; the rows it changed.
    async fn execute(&self, sql: &str) -> u64;
    /// The single integer `sql` selects.
    async fn int(&self, sql: &str) -> i64;
}

/// A run being driven and committed: its machine and its last event.
pub struct Driven {
    /// The run.
    pub run_id: RunId,
    /// The machine as last committed.
    pub machine: RunMachine,
    seq: u64,
    turns: usize,
}

impl Driven {
    /// Creates the run `run` in `store`, its transcript starting with one
    /// user message.
    pub async fn start(store: &dyn FullStore, run: &str) -> Self {
        let now = Timestamp::from_millis(0);
        let config = RunConfig::new("agent", "session", vec![Message::user("go on")]);
        let machine = RunMachine::new(config, now);
        let rec = record(run, "s1", 1);
        store
            .create_run(&rec, &events(1, 1), &machine)
            .await
            .unwrap();
        Self {
            run_id: rec.run_id,
            machine,
            seq: 1,
            turns: 0,
        }
    }

    /// Drives `turns` tool-calling turns, committing after each one (one
    /// event and the machine, unfenced).
    pub async fn commit_turns(&mut self, store: &dyn FullStore, turns: usize) {
        for _ in 0..turns {
            self.turn();
            self.seq += 1;
            let evs = events(self.seq, self.seq);
            store
                .commit(Commit {
                    run_id: &self.run_id,
                    events: &evs,
                    snapshot: Some(&self.machine),
                    status: RunStatus::Running,
                    now: Timestamp::from_millis(self.seq),
                    fence: None,
                })
                .await
                .unwrap();
        }
    }

    /// Checks that `store` loads the machine last committed.
    pub async fn assert_loads(&self, store: &dyn FullStore) {
        let loaded = store.load_run(&self.run_id).await.unwrap().unwrap();
        assert!(
            loaded.snapshot == self.machine,
            "run `{}` after {} turns reloads different",
            self.run_id,
            self.turns
        );
        assert_eq!(loaded.last_seq, self.seq);
    }

    fn turn(&mut self) {
        self.turns += 1;
        let (m, n) = (&mut self.machine, self.turns);
        let now = Timestamp::from_millis(n as u64);
        assert!(matches!(m.next_step(now), Step::Plan { .. }));
        let call = ToolCallRequest::new("demo.echo", json!({ "turn": n })).with_id(format!("c{n}"));
        m.plan_result(PlanResult::tool_calls(vec![call]), now, &Catalog::new())
            .unwrap();
        let Step::ExecuteTools { calls } = m.next_step(now) else {
            panic!("turn {n} executes no tools");
        };
        let outputs: Vec<ToolOutput> = calls
            .iter()
            .map(|c| {
                let text = format!("echo {n}: {}", "some tool output ".repeat(4));
                ToolOutput::ok(c.id.clone(), c.name.clone(), c.payload.clone(), json!(text))
            })
            .collect();
        m.tool_results(outputs, now).unwrap();
        m.drain_events().for_each(drop);
    }
}

pub async fn a_run_committed_step_by_step_reloads_equal(store: &dyn FullStore) {
    let mut run = Driven::start(store, "r1").await;
    run.assert_loads(store).await;
    for _ in 0..8 {
        run.commit_turns(store, 5).await;
        run.assert_loads(store).await;
    }
    // A commit without a snapshot keeps the stored machine.
    run.seq += 1;
    let evs = events(run.seq, run.seq);
    let c = super::commit(&run.run_id, &evs, RunStatus::Running, run.seq);
    store.commit(c).await.unwrap();
    run.assert_loads(store).await;
    // Finishing the run (its cached counts are forgotten) stores it whole.
    run.seq += 1;
    let evs = events(run.seq, run.seq);
    let mut c = super::commit(&run.run_id, &evs, RunStatus::Completed, run.seq);
    c.snapshot = Some(&run.machine);
    store.commit(c).await.unwrap();
    run.assert_loads(store).await;
}

/// `first` drives a run, `second` (another store on the same database, as
/// another process) takes it over with nothing cached, then `first` commits
/// again with what it cached before. Returns the run for the harness to
/// load from a reopened store.
pub async fn another_store_continues_the_run(
    first: &dyn FullStore,
    second: &dyn FullStore,
) -> Driven {
    let mut run = Driven::start(first, "r1").await;
    run.commit_turns(first, 12).await;
    run.assert_loads(second).await;
    run.commit_turns(second, 12).await;
    run.assert_loads(second).await;
    run.assert_loads(first).await;
    run.commit_turns(first, 6).await;
    run.assert_loads(first).await;
    run.assert_loads(second).await;
    run
}

pub async fn the_stored_head_does_not_grow_with_the_run(store: &dyn FullStore, raw: &dyn RawSql) {
    let mut run = Driven::start(store, "r1").await;
    let size = |run: &Driven| {
        format!(
            "SELECT CAST(length(snapshot) AS BIGINT) FROM runs WHERE run_id = '{}'",
            run.run_id
        )
    };
    run.commit_turns(store, 10).await;
    let at_10 = raw.int(&size(&run)).await;
    run.commit_turns(store, 190).await;
    let at_200 = raw.int(&size(&run)).await;
    // Only the counters' digits differ.
    assert!(
        (at_200 - at_10).abs() <= 32,
        "head of {at_10} bytes at step 10, {at_200} at step 200"
    );
    let whole = serde_json::to_string(&run.machine).unwrap().len() as i64;
    assert!(whole > 20 * at_200, "whole {whole}, head {at_200}");
    run.assert_loads(store).await;
}

pub async fn a_lost_or_extra_part_is_corrupt(store: &dyn FullStore, raw: &dyn RawSql) {
    let mut run = Driven::start(store, "r1").await;
    run.commit_turns(store, 5).await;
    let corrupt = |err: StoreError| match err {
        StoreError::Corrupt { message } => message,
        other => panic!("expected Corrupt, got {other:?}"),
    };

    let body: i64 = raw
        .int("SELECT count(*) FROM run_snapshot_parts WHERE run_id = 'r1' AND kind = 'output'")
        .await;
    assert_eq!(body, 5);
    let extra = raw
        .execute(
            "INSERT INTO run_snapshot_parts (run_id, kind, idx, body) \
             SELECT run_id, kind, 5, body FROM run_snapshot_parts \
             WHERE run_id = 'r1' AND kind = 'output' AND idx = 4",
        )
        .await;
    assert_eq!(extra, 1);
    let message = corrupt(store.load_run(&run.run_id).await.unwrap_err());
    assert!(message.contains("6 tool outputs"), "{message}");
    assert!(message.contains("r1"), "{message}");

    let lost = raw
        .execute(
            "DELETE FROM run_snapshot_parts WHERE run_id = 'r1' AND kind = 'message' AND idx = 3",
        )
        .await;
    assert_eq!(lost, 1);
    let message = corrupt(store.load_run(&run.run_id).await.unwrap_err());
    assert!(message.contains("message part 3 is missing"), "{message}");
    assert!(message.contains("r1"), "{message}");
}

/// A run whose snapshot `first` stored whole, as before snapshots had parts,
/// loads from `second` (another store, nothing cached), which then stores
/// it in parts.
pub async fn a_whole_snapshot_from_before_parts_still_loads(
    first: &dyn FullStore,
    second: &dyn FullStore,
    raw: &dyn RawSql,
) {
    let mut run = Driven::start(first, "r1").await;
    run.commit_turns(first, 4).await;
    let whole = serde_json::to_string(&run.machine)
        .unwrap()
        .replace('\'', "''");
    let sql = format!("UPDATE runs SET snapshot = '{whole}' WHERE run_id = 'r1'");
    assert_eq!(raw.execute(&sql).await, 1);
    raw.execute("DELETE FROM run_snapshot_parts WHERE run_id = 'r1'")
        .await;
    run.assert_loads(second).await;
    run.commit_turns(second, 3).await;
    run.assert_loads(second).await;
    let outputs = "SELECT count(*) FROM run_snapshot_parts WHERE run_id = 'r1' AND kind = 'output'";
    assert_eq!(raw.int(outputs).await, 7);
}
