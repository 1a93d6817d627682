//! Group commit for SQLite: commits that arrive while one is being written
//! share the next transaction, so they share its sync to disk.
//!
//! With `synchronous = FULL` a commit's cost is the disk sync; runs
//! committing concurrently would each pay it in turn. Instead one thread owns
//! the writes of commits: it takes every commit waiting, applies each in its
//! own savepoint (so one commit's failure, such as a gap, leaves the others
//! alone), and ends the transaction once. A commit is acknowledged only after
//! that transaction is durable, so the contract is unchanged: a commit either
//! lands whole or not at all. A lone commit is written at once, without
//! waiting for company, and when the thread is idle it is written by its
//! caller, as the leader, on the caller's own thread (see
//! [`GroupCommitter::write`]): no thread is woken for it.
//!
//! The batch is written by a thread of its own through a connection of its
//! own ([`crate::sqlite_commit`]), statement after statement with no handoff
//! between threads per statement. While it writes, the thread holds the
//! store's one pooled writer connection: that is the store's write lock in
//! this process, so the two connections never wait on SQLite's busy handler
//! for each other.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{Connection, TransactionBehavior};
use sqlx::pool::PoolConnection;
use sqlx::{Sqlite, SqlitePool};
use tokio::sync::oneshot;
use weft_core::store::StoreError;

use crate::checkpoint::{CHECKPOINT_EVERY, CheckpointStats, Checkpointer};
use crate::commit::{CommitJob, CreateJob};
use crate::error::Failure;
use crate::group_stats::Counters;
pub(crate) use crate::group_stats::GroupCommitStats;

/// Most commits one transaction carries.
const MAX_BATCH: usize = 256;

/// How many commits may wait for the writer before senders wait too.
const QUEUE: usize = 4096;

/// A write the committer applies: a run's commit or its creation.
#[derive(Debug, Clone)]
pub(crate) enum Job {
    /// A commit of run state.
    Commit(Arc<CommitJob>),
    /// A run's creation.
    Create(Arc<CreateJob>),
}

impl Job {
    fn apply(&self, conn: &Connection) -> Result<(), Failure> {
        match self {
            Job::Commit(job) => crate::sqlite_commit::commit_in(conn, job),
            Job::Create(job) => crate::sqlite_commit::create_in(conn, job),
        }
    }
}

/// A write waiting for the writer, and where to send its outcome.
struct Pending {
    job: Job,
    reply: oneshot::Sender<Result<(), Failure>>,
}

/// The handle to the group-commit thread; the thread ends when every
/// handle is dropped.
#[derive(Debug, Clone)]
pub(crate) struct GroupCommitter {
    queue: flume::Sender<Pending>,
    counters: Arc<Counters>,
    checkpointer: Option<Checkpointer>,
    writer: Arc<Mutex<Writer>>,
    pool: SqlitePool,
    tokio: tokio::runtime::Handle,
}

/// What writes: the commit connection and, while held, the pooled writer
/// (the store's write lock in this process). The commit thread takes it
/// for each batch; a leader takes it for its own commit (see
/// [`GroupCommitter::write`]).
struct Writer {
    conn: Connection,
    gate: Option<PoolConnection<Sqlite>>,
    /// When a batch was last written, for giving the pooled writer back.
    last_write: Instant,
    /// Checkpoints the WAL off the commit path, when asked to.
    checkpointer: Option<Checkpointer>,
    /// Commits written since the last checkpoint request.
    since_checkpoint: u64,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("holds_gate", &self.gate.is_some())
            .finish()
    }
}

impl Writer {
    /// Writes `jobs` while holding the pooled writer (taken from `pool`
    /// through `tokio` when not held); the outcome of each write, or why
    /// none could be written. Blocks.
    fn write(
        &mut self,
        tokio: &tokio::runtime::Handle,
        pool: &SqlitePool,
        jobs: &[&Job],
    ) -> Result<Vec<Result<(), Failure>>, Lost> {
        if self.gate.is_none() {
            let gate = tokio.block_on(pool.acquire());
            self.gate = Some(gate.map_err(|e| Lost::Other(e.to_string()))?);
        }
        self.last_write = Instant::now();
        self.since_checkpoint += jobs.len() as u64;
        if self.since_checkpoint >= CHECKPOINT_EVERY
            && let Some(checkpointer) = &self.checkpointer
        {
            self.since_checkpoint = 0;
            checkpointer.request();
        }
        write_batch(&mut self.conn, jobs).map_err(|e| match e.sqlite_error_code() {
            Some(
                code @ (rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked),
            ) => Lost::Conflict(code, e.to_string()),
            _ => Lost::Other(e.to_string()),
        })
    }
}

impl GroupCommitter {
    /// Starts the thread, writing through `conn` while it holds `writer`'s
    /// connection, which it takes through the current tokio runtime, and
    /// asking `checkpointer` (if any) for checkpoints as commits accumulate.
    pub(crate) fn start(
        writer: SqlitePool,
        conn: Connection,
        checkpointer: Option<Checkpointer>,
    ) -> std::io::Result<Self> {
        let (queue, rx) = flume::bounded(QUEUE);
        let counters = Arc::new(Counters::default());
        let tokio = tokio::runtime::Handle::current();
        let shared = Arc::new(Mutex::new(Writer {
            conn,
            gate: None,
            last_write: Instant::now(),
            checkpointer: checkpointer.clone(),
            since_checkpoint: 0,
        }));
        let thread = Thread {
            tokio: tokio.clone(),
            pool: writer.clone(),
            writer: shared.clone(),
            counters: counters.clone(),
        };
        std::thread::Builder::new()
            .name("weft-sqlite-commit".into())
            .spawn(move || thread.run(rx))?;
        Ok(Self {
            queue,
            counters,
            checkpointer,
            writer: shared,
            pool: writer,
            tokio,
        })
    }

    /// How the commits so far were grouped.
    pub(crate) fn stats(&self) -> GroupCommitStats {
        self.counters.stats()
    }

    /// The background checkpoints so far, if they run in the background.
    pub(crate) fn checkpoint_stats(&self) -> Option<CheckpointStats> {
        self.checkpointer.as_ref().map(Checkpointer::stats)
    }

    /// Writes `job` and waits until it is durable or refused.
    ///
    /// When nothing waits for the writer, nobody writes, and the thread
    /// still holds the pooled writer from its last batch (a lone run
    /// committing step after step), the caller writes its own commit on its
    /// own thread, as the leader, instead of handing it to the commit
    /// thread: that saves two wake-ups of sleeping threads, the larger part
    /// of a lone commit's cost after the sync itself. Commits that arrive
    /// meanwhile queue for the thread, which writes them together once the
    /// leader is done. Only on a multi-threaded runtime, which can lend the
    /// caller's thread to a blocking write.
    pub(crate) async fn write(&self, job: Job) -> Result<(), Failure> {
        // Only while the thread lingers with the pooled writer: then it
        // gives the writer back once leaders stop coming too.
        if self.queue.is_empty()
            && self.tokio.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
            && let Ok(mut writer) = self.writer.try_lock()
            && writer.gate.is_some()
        {
            self.counters.record(1);
            let written =
                tokio::task::block_in_place(|| writer.write(&self.tokio, &self.pool, &[&job]));
            return match written {
                Ok(mut outcomes) => outcomes.pop().unwrap_or_else(|| Err(stopped())),
                Err(lost) => Err(lost.failure()),
            };
        }
        let (reply, outcome) = oneshot::channel();
        self.queue
            .send_async(Pending { job, reply })
            .await
            .map_err(|_| stopped())?;
        outcome.await.map_err(|_| stopped())?
    }
}

fn stopped() -> Failure {
    Failure::from(StoreError::Backend {
        message: "the SQLite commit thread has stopped".into(),
    })
}

/// How long the thread keeps the pooled writer after its last batch, for
/// the next one: giving it back costs a round trip to sqlx's connection
/// thread (a ping), which a run committing step after step would otherwise
/// wait for at every step. Other writers of this process wait at most this.
const LINGER: Duration = Duration::from_millis(2);

/// What the commit thread owns.
struct Thread {
    tokio: tokio::runtime::Handle,
    pool: SqlitePool,
    writer: Arc<Mutex<Writer>>,
    counters: Arc<Counters>,
}

impl Thread {
    /// Writes every write waiting, batch after batch, until every sender
    /// is gone.
    fn run(mut self, rx: flume::Receiver<Pending>) {
        // The pool takes its connection back through the runtime.
        let tokio = self.tokio.clone();
        let _context = tokio.enter();
        let mut batch = Vec::with_capacity(MAX_BATCH);
        while let Some(first) = self.next(&rx) {
            batch.push(first);
            while batch.len() < MAX_BATCH
                && let Ok(next) = rx.try_recv()
            {
                batch.push(next);
            }
            let size = batch.len() as u64;
            self.counters.record(size);
            let jobs: Vec<&Job> = batch.iter().map(|p| &p.job).collect();
            let written = self.lock().write(&self.tokio, &self.pool, &jobs);
            drop(jobs);
            match written {
                Ok(outcomes) => {
                    for (pending, outcome) in batch.drain(..).zip(outcomes) {
                        // The caller may have given up waiting; the write stands.
                        let _ = pending.reply.send(outcome);
                    }
                }
                Err(lost) => {
                    for pending in batch.drain(..) {
                        let _ = pending.reply.send(Err(lost.failure()));
                    }
                }
            }
        }
        self.lock().gate = None;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Writer> {
        // A panic while writing leaves the connection usable: its
        // transaction rolls back when dropped.
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next write: waited for [`LINGER`] after the last write (the
    /// thread's or a leader's) while holding the pooled writer, then
    /// without it; `None` once every sender is gone.
    fn next(&mut self, rx: &flume::Receiver<Pending>) -> Option<Pending> {
        match rx.try_recv() {
            Ok(pending) => return Some(pending),
            Err(flume::TryRecvError::Disconnected) => return None,
            Err(flume::TryRecvError::Empty) => {}
        }
        loop {
            let linger = {
                let mut writer = self.lock();
                if writer.gate.is_none() {
                    break;
                }
                let since = writer.last_write.elapsed();
                if since >= LINGER {
                    writer.gate = None;
                    break;
                }
                LINGER - since
            };
            match rx.recv_timeout(linger) {
                Ok(pending) => return Some(pending),
                Err(flume::RecvTimeoutError::Disconnected) => return None,
                Err(flume::RecvTimeoutError::Timeout) => {}
            }
        }
        rx.recv().ok()
    }
}

/// Why a whole batch was lost.
enum Lost {
    /// Another process held the database past the busy timeout: worth a
    /// retry, which each write's caller makes.
    Conflict(rusqlite::ErrorCode, String),
    /// Anything else.
    Other(String),
}

impl Lost {
    /// The failure each write of the batch reports.
    fn failure(&self) -> Failure {
        match self {
            Lost::Conflict(code, message) => {
                let primary = match code {
                    rusqlite::ErrorCode::DatabaseLocked => rusqlite::ffi::SQLITE_LOCKED,
                    _ => rusqlite::ffi::SQLITE_BUSY,
                };
                Failure::Sqlite(rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(primary),
                    Some(message.clone()),
                ))
            }
            Lost::Other(message) => Failure::from(StoreError::Backend {
                message: message.clone(),
            }),
        }
    }
}

/// Applies `jobs` in one transaction, each in its own savepoint; the outcome
/// of each, or the error that lost them all.
fn write_batch(
    conn: &mut Connection,
    jobs: &[&Job],
) -> Result<Vec<Result<(), Failure>>, rusqlite::Error> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if let [job] = jobs {
        // Alone, the commit needs no savepoint: the transaction is its own.
        return match job.apply(&tx) {
            Ok(()) => tx.commit().map(|()| vec![Ok(())]),
            Err(failure) => tx.rollback().map(|()| vec![Err(failure)]),
        };
    }
    let mut outcomes = Vec::with_capacity(jobs.len());
    // Savepoints by prepared statements: rusqlite's own parse theirs anew.
    let step = |sql: &str| tx.prepare_cached(sql)?.execute([]).map(drop);
    for job in jobs {
        step("SAVEPOINT w")?;
        let outcome = job.apply(&tx);
        if outcome.is_err() {
            step("ROLLBACK TO w")?;
        }
        step("RELEASE w")?;
        outcomes.push(outcome);
    }
    tx.commit()?;
    Ok(outcomes)
}
