//! Group commit for SQLite: commits that arrive while one is being written
//! share the next transaction, so they share its sync to disk.
//!
//! With `synchronous = FULL` a commit's cost is the disk sync; runs
//! committing concurrently would each pay it in turn. Instead one task owns
//! the writes of commits: it takes every commit waiting, applies each in its
//! own savepoint (so one commit's failure, such as a gap, leaves the others
//! alone), and ends the transaction once. A commit is acknowledged only after
//! that transaction is durable, so the contract is unchanged: a commit either
//! lands whole or not at all. A lone commit is written at once, without
//! waiting for company.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::future::BoxFuture;
use sqlx::{Acquire, Sqlite, SqlitePool, Transaction};
use tokio::sync::{mpsc, oneshot};
use weft_core::store::StoreError;

use crate::commit::CommitJob;
use crate::error::{Failure, backend};

/// Most commits one transaction carries.
const MAX_BATCH: usize = 256;

/// How many commits may wait for the writer before senders wait too.
const QUEUE: usize = 4096;

/// Applies one commit inside a transaction the writer opens and ends: the
/// store's `commit_in`.
pub(crate) type Apply = for<'a, 't> fn(
    &'a mut Transaction<'t, Sqlite>,
    &'a CommitJob,
) -> BoxFuture<'a, Result<(), Failure>>;

/// A commit waiting for the writer, and where to send its outcome.
struct Pending {
    job: Arc<CommitJob>,
    reply: oneshot::Sender<Result<(), Failure>>,
}

/// How the commits written so far were grouped: a benchmark's figure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupCommitStats {
    /// Transactions written (each one sync to disk).
    pub batches: u64,
    /// Commits they carried.
    pub commits: u64,
    /// Most commits one transaction carried.
    pub largest: u64,
}

impl GroupCommitStats {
    /// Commits per transaction on average (0 before the first).
    pub fn mean(&self) -> f64 {
        if self.batches == 0 {
            0.0
        } else {
            self.commits as f64 / self.batches as f64
        }
    }

    /// What was written after `earlier` was taken (`largest` stays the
    /// largest of all).
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            batches: self.batches.saturating_sub(earlier.batches),
            commits: self.commits.saturating_sub(earlier.commits),
            largest: self.largest,
        }
    }
}

#[derive(Debug, Default)]
struct Counters {
    batches: AtomicU64,
    commits: AtomicU64,
    largest: AtomicU64,
}

/// The handle to the group-commit task; the task ends when every handle is
/// dropped.
#[derive(Debug, Clone)]
pub(crate) struct GroupCommitter {
    queue: mpsc::Sender<Pending>,
    counters: Arc<Counters>,
}

impl GroupCommitter {
    /// Starts the task on the current tokio runtime, writing through
    /// `writer` with `apply`.
    pub(crate) fn start(writer: SqlitePool, apply: Apply) -> Self {
        let (queue, rx) = mpsc::channel(QUEUE);
        let counters = Arc::new(Counters::default());
        tokio::spawn(run(writer, apply, rx, counters.clone()));
        Self { queue, counters }
    }

    /// How the commits so far were grouped.
    pub(crate) fn stats(&self) -> GroupCommitStats {
        GroupCommitStats {
            batches: self.counters.batches.load(Ordering::Relaxed),
            commits: self.counters.commits.load(Ordering::Relaxed),
            largest: self.counters.largest.load(Ordering::Relaxed),
        }
    }

    /// Queues `job` and waits until it is durable or refused.
    pub(crate) async fn commit(&self, job: Arc<CommitJob>) -> Result<(), Failure> {
        let (reply, outcome) = oneshot::channel();
        self.queue
            .send(Pending { job, reply })
            .await
            .map_err(|_| stopped())?;
        outcome.await.map_err(|_| stopped())?
    }
}

fn stopped() -> Failure {
    Failure::from(StoreError::Backend {
        message: "the SQLite commit task has stopped (was the store's tokio runtime shut down?)"
            .into(),
    })
}

async fn run(
    writer: SqlitePool,
    apply: Apply,
    mut rx: mpsc::Receiver<Pending>,
    counters: Arc<Counters>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let size = batch.len() as u64;
        counters.batches.fetch_add(1, Ordering::Relaxed);
        counters.commits.fetch_add(size, Ordering::Relaxed);
        counters.largest.fetch_max(size, Ordering::Relaxed);
        let jobs: Vec<&CommitJob> = batch.iter().map(|p| &*p.job).collect();
        match write_batch(&writer, apply, &jobs).await {
            Ok(outcomes) => {
                for (pending, outcome) in batch.drain(..).zip(outcomes) {
                    // The caller may have given up waiting; the commit stands.
                    let _ = pending.reply.send(outcome);
                }
            }
            Err(e) => {
                let message = backend(&e);
                for pending in batch.drain(..) {
                    let _ = pending.reply.send(Err(Failure::from(message.clone())));
                }
            }
        }
    }
}

/// Applies `jobs` in one transaction, each in its own savepoint; the outcome
/// of each, or the error that lost them all.
async fn write_batch(
    writer: &SqlitePool,
    apply: Apply,
    jobs: &[&CommitJob],
) -> Result<Vec<Result<(), Failure>>, sqlx::Error> {
    let mut tx = writer.begin_with("BEGIN IMMEDIATE").await?;
    if let [job] = jobs {
        // Alone, the commit needs no savepoint: the transaction is its own.
        return match apply(&mut tx, job).await {
            Ok(()) => tx.commit().await.map(|()| vec![Ok(())]),
            Err(failure) => tx.rollback().await.map(|()| vec![Err(failure)]),
        };
    }
    let mut outcomes = Vec::with_capacity(jobs.len());
    for job in jobs {
        let mut savepoint = tx.begin().await?;
        match apply(&mut savepoint, job).await {
            Ok(()) => {
                savepoint.commit().await?;
                outcomes.push(Ok(()));
            }
            Err(failure) => {
                savepoint.rollback().await?;
                outcomes.push(Err(failure));
            }
        }
    }
    tx.commit().await?;
    Ok(outcomes)
}
