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

/// The handle to the group-commit task; the task ends when every handle is
/// dropped.
#[derive(Debug, Clone)]
pub(crate) struct GroupCommitter {
    queue: mpsc::Sender<Pending>,
}

impl GroupCommitter {
    /// Starts the task on the current tokio runtime, writing through
    /// `writer` with `apply`.
    pub(crate) fn start(writer: SqlitePool, apply: Apply) -> Self {
        let (queue, rx) = mpsc::channel(QUEUE);
        tokio::spawn(run(writer, apply, rx));
        Self { queue }
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

async fn run(writer: SqlitePool, apply: Apply, mut rx: mpsc::Receiver<Pending>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
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
