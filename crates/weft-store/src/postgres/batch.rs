//! Group commit for PostgreSQL: the one-statement commits of different runs
//! that wait at the same time go to the server together, as one statement,
//! so they share its round trip, its transaction and its sync to disk.
//!
//! A task of the store's own (the commit batcher) takes every commit that
//! waits, at most one per run and [`MAX_BATCH`] in all, and sends them as
//! one statement whose `WITH` clauses update the run rows that still
//! continue where each commit expects (log position, lease epoch, status
//! running), and insert the events and parts of those commits only.
//!
//! A commit made while no other commit of the process is under way does not
//! go through the batcher: it sends its own statement ([`super::at_once`]),
//! so a lone run pays no hand-over between tasks. Only commits that meet
//! others are batched, where the hand-over is shared.
//!
//! A commit is acknowledged only after its statement is durable, so the
//! contract is unchanged. A commit the statement did not apply (its run
//! moved, or its lease was lost), and every commit of a statement that
//! failed, are answered "not applied": their callers take the general path
//! ([`crate::sql_commit`]), which tells the cases apart, one commit at a
//! time. A statement that landed although its answer was lost is safe
//! there too: the general path finds the events stored and skips them.
//!
//! Commits that append to a session transcript are not batched: two of them
//! in one session would update the session row twice in one statement.
//! They take the single-commit statement ([`super::at_once`]).

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::{PgPool, Postgres};
use tokio::sync::{mpsc, oneshot};

use crate::commit::CommitJob;
use crate::error::Failure;
use crate::group_stats::{Counters, GroupCommitStats};

/// Most commits one statement carries.
const MAX_BATCH: usize = 128;

/// How many commits may wait for the batcher before senders wait too.
const QUEUE: usize = 4096;

/// How long the batcher keeps its connection without commits to write.
const LINGER: Duration = Duration::from_secs(1);

/// The commits of a batch, each joined by its position (`job`) in the
/// input; the writes of a commit happen only when its run row's update
/// matched. Run rows are locked in run id order.
const BATCH: &str = "\
WITH input AS (
    SELECT * FROM unnest($1::int[], $2::text[], $3::bigint[], $4::bigint[], $5::text[],
                         $6::bigint[], $7::bigint[], $8::text[], $9::bool[])
        AS i(job, run_id, new_last, now, snapshot, expected, fence, status, release)
), updated AS (
    UPDATE runs SET last_seq = i.new_last, status = i.status, updated_at = i.now,
        snapshot = COALESCE(i.snapshot, runs.snapshot),
        lease_owner = CASE WHEN i.release THEN NULL ELSE runs.lease_owner END,
        lease_expires = CASE WHEN i.release THEN 0 ELSE runs.lease_expires END,
        control_request = CASE WHEN i.status = 'running' THEN runs.control_request ELSE NULL END
    FROM input i
    WHERE runs.run_id = i.run_id AND runs.status = 'running' AND runs.last_seq = i.expected
      AND runs.lease_epoch = COALESCE(i.fence, runs.lease_epoch)
    RETURNING i.job, runs.run_id, i.status
), events AS (
    INSERT INTO run_events (run_id, seq, body)
    SELECT updated.run_id, e.seq, e.body
    FROM unnest($10::int[], $11::bigint[], $12::text[]) AS e(job, seq, body)
    JOIN updated ON updated.job = e.job
), parts AS (
    INSERT INTO run_snapshot_parts (run_id, kind, idx, body)
    SELECT updated.run_id, p.kind, p.idx, p.body
    FROM unnest($13::int[], $14::text[], $15::bigint[], $16::text[]) AS p(job, kind, idx, body)
    JOIN updated ON updated.job = p.job
    ON CONFLICT (run_id, kind, idx) DO NOTHING
), answers AS (
    DELETE FROM run_answers USING updated
    WHERE run_answers.run_id = updated.run_id AND updated.status <> 'running'
)
SELECT job FROM updated";

/// A commit waiting for the batcher, where its log continues, and where to
/// send whether it was applied.
struct Pending {
    job: Arc<CommitJob>,
    expected: u64,
    new_last: u64,
    reply: oneshot::Sender<bool>,
}

/// The handle to the commit batcher; its task ends when every handle is
/// dropped.
#[derive(Debug, Clone)]
pub(crate) struct Batcher {
    queue: mpsc::Sender<Pending>,
    counters: Arc<Counters>,
    /// Commits of this process under way, batched or not.
    busy: Arc<AtomicUsize>,
}

/// A commit under way (see [`Batcher::enter`]).
pub(crate) struct Busy {
    busy: Arc<AtomicUsize>,
    /// Whether no other commit was under way when this one began.
    pub(crate) alone: bool,
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Batcher {
    /// Starts the batcher's task on the current runtime, writing to `pool`.
    pub(crate) fn start(pool: PgPool) -> Self {
        let (queue, rx) = mpsc::channel(QUEUE);
        let counters = Arc::new(Counters::default());
        tokio::spawn(run(pool, rx, counters.clone()));
        Self {
            queue,
            counters,
            busy: Arc::default(),
        }
    }

    /// Marks a commit under way until the guard is dropped; the guard says
    /// whether it is alone (then it is not worth batching).
    pub(crate) fn enter(&self) -> Busy {
        let before = self.busy.fetch_add(1, Ordering::AcqRel);
        Busy {
            busy: self.busy.clone(),
            alone: before == 0,
        }
    }

    /// Counts a commit sent in a statement of its own.
    pub(crate) fn record_single(&self) {
        self.counters.record(1);
    }

    /// How the commits so far were grouped.
    pub(crate) fn stats(&self) -> GroupCommitStats {
        self.counters.stats()
    }

    /// Applies `job`, whose events continue the log at `expected` up to
    /// `new_last` and which appends no transcript, in the next batch;
    /// whether it was applied. When not, nothing of it was written.
    pub(crate) async fn commit(&self, job: &Arc<CommitJob>, expected: u64, new_last: u64) -> bool {
        let (reply, applied) = oneshot::channel();
        let pending = Pending {
            job: job.clone(),
            expected,
            new_last,
            reply,
        };
        // A batcher that is gone (its runtime shut down) leaves the commit
        // to the general path.
        if self.queue.send(pending).await.is_err() {
            return false;
        }
        applied.await.unwrap_or(false)
    }
}

/// Writes batch after batch until every sender is gone, through a
/// connection it keeps while commits keep coming (a pooled connection is
/// pinged each time it goes back to the pool: a round trip per batch
/// saved), and gives back after [`LINGER`] without any.
async fn run(pool: PgPool, mut rx: mpsc::Receiver<Pending>, counters: Arc<Counters>) {
    let mut waiting: Vec<Pending> = Vec::new();
    let mut conn: Option<PoolConnection<Postgres>> = None;
    loop {
        if waiting.is_empty() {
            let next = match conn {
                Some(_) => match tokio::time::timeout(LINGER, rx.recv()).await {
                    Ok(next) => next,
                    Err(_) => {
                        conn = None;
                        rx.recv().await
                    }
                },
                None => rx.recv().await,
            };
            match next {
                Some(first) => waiting.push(first),
                None => return,
            }
        }
        while waiting.len() < QUEUE
            && let Ok(next) = rx.try_recv()
        {
            waiting.push(next);
        }
        let batch = take_batch(&mut waiting);
        counters.record(batch.len() as u64);
        let applied = match write(&pool, &mut conn, &batch).await {
            Ok(applied) => applied,
            Err(e) => {
                // The connection may be broken: the next batch takes another.
                conn = None;
                tracing::debug!(error = ?e, commits = batch.len(), "batched commit failed; each takes the general path");
                HashSet::new()
            }
        };
        for (i, pending) in batch.into_iter().enumerate() {
            let _ = pending.reply.send(applied.contains(&i));
        }
    }
}

/// Takes the next batch from `waiting`: at most [`MAX_BATCH`] commits, one
/// per run (a later commit of a run waits for the next batch), in run id
/// order.
fn take_batch(waiting: &mut Vec<Pending>) -> Vec<Pending> {
    let mut runs = HashSet::new();
    let mut batch = Vec::new();
    let mut later = Vec::new();
    for pending in waiting.drain(..) {
        if batch.len() < MAX_BATCH && runs.insert(pending.job.run_id.clone()) {
            batch.push(pending);
        } else {
            later.push(pending);
        }
    }
    *waiting = later;
    batch.sort_by(|a, b| a.job.run_id.as_str().cmp(b.job.run_id.as_str()));
    batch
}

/// Sends `batch` as one statement through `conn` (taken from `pool` when
/// there is none); the positions of the commits it applied.
async fn write(
    pool: &PgPool,
    conn: &mut Option<PoolConnection<Postgres>>,
    batch: &[Pending],
) -> Result<HashSet<usize>, Failure> {
    let conn = match conn {
        Some(conn) => conn,
        None => conn.insert(pool.acquire().await?),
    };
    let mut input = Input::default();
    for (i, pending) in batch.iter().enumerate() {
        input.push(i, pending)?;
    }
    let applied: Vec<(i32,)> = sqlx::query_as(BATCH)
        .bind(input.jobs)
        .bind(input.run_ids)
        .bind(input.new_lasts)
        .bind(input.nows)
        .bind(input.snapshots)
        .bind(input.expected)
        .bind(input.fences)
        .bind(input.statuses)
        .bind(input.releases)
        .bind(input.event_jobs)
        .bind(input.event_seqs)
        .bind(input.event_bodies)
        .bind(input.part_jobs)
        .bind(input.part_kinds)
        .bind(input.part_indexes)
        .bind(input.part_bodies)
        .fetch_all(&mut **conn)
        .await?;
    Ok(applied
        .into_iter()
        .filter_map(|(job,)| usize::try_from(job).ok())
        .collect())
}

/// The statement's arrays, one column each.
#[derive(Default)]
struct Input<'a> {
    jobs: Vec<i32>,
    run_ids: Vec<&'a str>,
    new_lasts: Vec<i64>,
    nows: Vec<i64>,
    snapshots: Vec<Option<&'a str>>,
    expected: Vec<i64>,
    fences: Vec<Option<i64>>,
    statuses: Vec<&'a str>,
    releases: Vec<bool>,
    event_jobs: Vec<i32>,
    event_seqs: Vec<i64>,
    event_bodies: Vec<&'a str>,
    part_jobs: Vec<i32>,
    part_kinds: Vec<&'a str>,
    part_indexes: Vec<i64>,
    part_bodies: Vec<&'a str>,
}

impl<'a> Input<'a> {
    fn push(&mut self, i: usize, pending: &'a Pending) -> Result<(), Failure> {
        let job = &pending.job;
        let index = i32::try_from(i).unwrap_or(i32::MAX);
        self.jobs.push(index);
        self.run_ids.push(job.run_id.as_str());
        self.new_lasts
            .push(crate::codec::int(pending.new_last, "event seq")?);
        self.nows.push(job.now);
        self.snapshots
            .push(job.snapshot.as_ref().map(|s| s.head.as_str()));
        self.expected
            .push(crate::codec::int(pending.expected, "event seq")?);
        self.fences.push(job.fence);
        self.statuses.push(job.status.as_str());
        self.releases.push(job.release);
        for (seq, body) in &job.events {
            self.event_jobs.push(index);
            self.event_seqs.push(*seq);
            self.event_bodies.push(body.as_str());
        }
        for (kind, idx, body) in job.snapshot.iter().flat_map(|s| &s.parts) {
            self.part_jobs.push(index);
            self.part_kinds.push(kind);
            self.part_indexes.push(*idx);
            self.part_bodies.push(body.as_str());
        }
        Ok(())
    }
}
