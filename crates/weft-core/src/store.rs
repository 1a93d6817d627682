//! The run store contract: where runs, their event logs and their machine
//! snapshots live. The runtime ships an in-memory store; durable stores
//! (SQLite, PostgreSQL) implement the same trait in `weft-store`.
//!
//! A commit is atomic: the events and the snapshot of one step are stored
//! together or not at all, so a crash never leaves a run half-written.
//! Appending an event whose sequence number is already stored is a no-op,
//! which makes retried commits safe.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::awaiting::AwaitAnswer;
use crate::event::RunEvent;
use crate::ids::AwaitItemId;
use crate::ids::{AgentId, RunId, SessionId};
use crate::lease::{ControlRequest, HeldLease, LeaseClaim, LeaseRequest, RemoteAnswer};
use crate::message::Message;
use crate::run::RunMachine;
use crate::time::Timestamp;
use crate::tool::Labels;

mod listed;

pub use listed::{CORRUPT_STATE, ListCursor, ListedRun, RunHead};

/// Where a run stands, as stores index it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Being driven (or waiting to be recovered after a crash).
    Running,
    /// Waiting for await answers.
    Awaiting,
    /// Paused by a human.
    Paused,
    /// Finished with a response or tool result.
    Completed,
    /// Finished with a failure.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl RunStatus {
    /// Whether the run has ended.
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled
        )
    }

    /// The status as a lowercase word.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Awaiting => "awaiting",
            RunStatus::Paused => "paused",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }
}

impl std::str::FromStr for RunStatus {
    type Err = StoreError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "running" => RunStatus::Running,
            "awaiting" => RunStatus::Awaiting,
            "paused" => RunStatus::Paused,
            "completed" => RunStatus::Completed,
            "failed" => RunStatus::Failed,
            "cancelled" => RunStatus::Cancelled,
            other => {
                return Err(StoreError::Corrupt {
                    message: format!("unknown run status `{other}`"),
                });
            }
        })
    }
}

/// A run's index entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The run.
    pub run_id: RunId,
    /// Its agent.
    pub agent_id: AgentId,
    /// Its session.
    pub session_id: SessionId,
    /// Where it stands.
    pub status: RunStatus,
    /// Its labels.
    #[serde(default)]
    pub labels: Labels,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

/// One atomic write: a step's events and, optionally, the machine after it.
#[derive(Debug, Clone, Copy)]
pub struct Commit<'a> {
    /// The run.
    pub run_id: &'a RunId,
    /// New events, in sequence order.
    pub events: &'a [RunEvent],
    /// The machine after the step, when it changed.
    pub snapshot: Option<&'a RunMachine>,
    /// The run's status after the step.
    pub status: RunStatus,
    /// When the commit happens.
    pub now: Timestamp,
    /// The lease epoch the committer holds: the commit lands only while it
    /// is the run's (else [`StoreError::LeaseLost`]). A fenced commit that
    /// leaves the run not running frees the lease. `None` writes unfenced,
    /// for single-writer tools.
    pub fence: Option<u64>,
}

/// A stored run: its index entry and its last snapshot.
#[derive(Debug, Clone)]
pub struct StoredRun {
    /// The index entry.
    pub record: RunRecord,
    /// The machine as of the last commit.
    pub snapshot: RunMachine,
    /// The sequence number of the last stored event. It may be past the
    /// snapshot's own (events committed without a snapshot, such as streamed
    /// text): a driver continues the log after this one.
    pub last_seq: u64,
    /// Who holds the run's lease, if anyone (it may have lapsed).
    pub lease_owner: Option<String>,
}

/// Which runs to list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunFilter {
    /// Only runs of this session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// Only runs of this agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// Only runs with one of these statuses (all when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statuses: Vec<RunStatus>,
    /// At most this many, newest first (all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Only runs carrying every one of these labels with these values.
    #[serde(default, skip_serializing_if = "Labels::is_empty")]
    pub labels: Labels,
    /// Only runs older than this one (the next page of a listing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<ListCursor>,
    /// Only runs created at this instant or later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_since: Option<Timestamp>,
}

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The run does not exist.
    #[error("run `{run_id}` not found")]
    RunNotFound {
        /// The run.
        run_id: RunId,
    },
    /// The run already exists.
    #[error("run `{run_id}` already exists")]
    RunExists {
        /// The run.
        run_id: RunId,
    },
    /// An event's sequence number leaves a gap in the log.
    #[error("event {seq} of run `{run_id}` would leave a gap after {last}")]
    SequenceGap {
        /// The run.
        run_id: RunId,
        /// The last stored sequence number.
        last: u64,
        /// The sequence number given.
        seq: u64,
    },
    /// An event's sequence number is stored already with other content. A
    /// retried commit carries the same events; different ones under a
    /// stored number would make the log disagree with what was delivered.
    /// The commit was not applied.
    #[error("event {seq} of run `{run_id}` is stored already with different content")]
    SequenceConflict {
        /// The run.
        run_id: RunId,
        /// The sequence number given twice.
        seq: u64,
    },
    /// The committer's lease epoch is no longer the run's: another driver
    /// took the run over. The commit was not applied.
    #[error("run `{run_id}` is driven elsewhere now: lease epoch {epoch} was superseded")]
    LeaseLost {
        /// The run.
        run_id: RunId,
        /// The epoch the committer held.
        epoch: u64,
    },
    /// Stored data could not be read back.
    #[error("stored data is corrupt: {message}")]
    Corrupt {
        /// What was wrong.
        message: String,
    },
    /// The run's session has ended and accepts no new runs; nothing was
    /// stored.
    #[error("session `{session_id}` has ended and accepts no new runs")]
    SessionEnded {
        /// The session.
        session_id: SessionId,
    },
    /// The backend failed (connection, IO, constraint).
    #[error("store backend failed: {message}")]
    Backend {
        /// What failed.
        message: String,
    },
}

/// Stores runs, their event logs and their snapshots.
#[async_trait]
pub trait RunStore: Send + Sync {
    /// Creates a run with its first events and snapshot.
    async fn create_run(
        &self,
        record: &RunRecord,
        events: &[RunEvent],
        snapshot: &RunMachine,
    ) -> Result<(), StoreError>;

    /// Atomically appends a step's events and stores its snapshot and status.
    /// Events already stored (a retried commit) are skipped when their
    /// content is the stored one; other content under a stored sequence
    /// number is a [`StoreError::SequenceConflict`], and a gap a
    /// [`StoreError::SequenceGap`], and nothing is applied.
    async fn commit(&self, commit: Commit<'_>) -> Result<(), StoreError>;

    /// Like [`commit`](Self::commit), and appends `transcript` to the run's
    /// session transcript (after its last entry) in the same write, unless
    /// every event of the commit was already stored (a retried commit) or
    /// the session has ended (its transcript is closed). For the commit that
    /// completes a run. A store that keeps no session transcripts only commits.
    async fn commit_with_transcript(
        &self,
        commit: Commit<'_>,
        transcript: &[Message],
    ) -> Result<(), StoreError> {
        let _ = transcript;
        self.commit(commit).await
    }

    /// A run's record and last snapshot.
    async fn load_run(&self, run_id: &RunId) -> Result<Option<StoredRun>, StoreError>;

    /// A run's events with a sequence number above `after`, in order, at most `limit`.
    async fn read_events(
        &self,
        run_id: &RunId,
        after: u64,
        limit: Option<u32>,
    ) -> Result<Vec<RunEvent>, StoreError>;

    /// Runs matching `filter`, newest first.
    async fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, StoreError>;

    /// Like [`list_runs`](Self::list_runs), but a row that does not decode
    /// is a [`ListedRun::Corrupt`] in its place, not the list's failure.
    async fn list_run_rows(&self, filter: &RunFilter) -> Result<Vec<ListedRun>, StoreError> {
        let runs = self.list_runs(filter).await?;
        Ok(runs.into_iter().map(ListedRun::Run).collect())
    }

    /// Run `run_id`'s label `key`, status and quarantine reason, read
    /// without decoding its labels or snapshot (for a run that does not
    /// load); `None` when there is no such run.
    async fn run_head(&self, run_id: &RunId, key: &str) -> Result<Option<RunHead>, StoreError> {
        Ok(self.load_run(run_id).await?.map(|s| RunHead {
            label: s.record.labels.get(key).cloned(),
            status: Some(s.record.status),
            quarantined: None,
        }))
    }

    /// Fails unfinished run `run_id`, whose stored state cannot be read,
    /// with `reason` without reading it, and frees its lease, if the lease
    /// is still at epoch `fence`; false otherwise. A store whose runs
    /// always decode has nothing to quarantine.
    async fn quarantine_run(
        &self,
        run_id: &RunId,
        reason: &str,
        fence: u64,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let _ = (run_id, reason, fence, now);
        Ok(false)
    }

    /// Creates a run like [`create_run`](Self::create_run), leased to
    /// `lease.owner` in the same transaction; returns the lease's epoch.
    /// (A run created by `create_run` is running and unleased: the next
    /// [`claim_orphans`](Self::claim_orphans) takes it.)
    async fn create_leased_run(
        &self,
        record: &RunRecord,
        events: &[RunEvent],
        snapshot: &RunMachine,
        lease: LeaseRequest<'_>,
    ) -> Result<u64, StoreError>;

    /// Takes the run's lease when it is free, expired at `now`, or already
    /// `lease.owner`'s; the epoch rises either way, fencing any earlier
    /// holder. Whatever the run's status.
    async fn acquire_lease(
        &self,
        run_id: &RunId,
        lease: LeaseRequest<'_>,
        now: Timestamp,
    ) -> Result<LeaseClaim, StoreError>;

    /// Extends `leases`, held by `owner`, to `expires_at`; returns the runs
    /// whose lease was not `owner`'s at that epoch any more (lost).
    async fn renew_leases(
        &self,
        owner: &str,
        leases: &[HeldLease],
        expires_at: Timestamp,
    ) -> Result<Vec<RunId>, StoreError>;

    /// Frees the run's lease if it is still at `epoch`.
    async fn release_lease(&self, run_id: &RunId, epoch: u64) -> Result<(), StoreError>;

    /// Records `request` on a running run for the process that drives it
    /// (see [`ControlRequest`]); a cancel replaces a pending pause, a pause
    /// leaves a pending cancel. False when the run is not running.
    async fn request_control(
        &self,
        run_id: &RunId,
        request: &ControlRequest,
    ) -> Result<bool, StoreError>;

    /// The control requests pending on runs whose lease `owner` holds, with
    /// the lease (its epoch tells which driver the request is for).
    async fn pending_controls(
        &self,
        owner: &str,
    ) -> Result<Vec<(HeldLease, ControlRequest)>, StoreError>;

    /// Records `answer` to question `item` of a running run for the process
    /// that drives it (see [`RemoteAnswer`]). False when the run is not
    /// running or the question already has an answer waiting.
    async fn request_answer(
        &self,
        run_id: &RunId,
        item: &AwaitItemId,
        answer: &AwaitAnswer,
    ) -> Result<bool, StoreError>;

    /// The answers waiting on runs whose lease `owner` holds, oldest first,
    /// at most `limit`.
    async fn pending_answers(
        &self,
        owner: &str,
        limit: u32,
    ) -> Result<Vec<RemoteAnswer>, StoreError>;

    /// Deletes a waiting answer once its holder has handed it on.
    async fn delete_answer(&self, run_id: &RunId, item: &AwaitItemId) -> Result<(), StoreError>;

    /// Takes the leases of at most `limit` running runs that nobody holds
    /// (unleased, or expired at `now`), oldest expiry first; concurrent
    /// claimers never take the same run.
    async fn claim_orphans(
        &self,
        lease: LeaseRequest<'_>,
        now: Timestamp,
        limit: u32,
    ) -> Result<Vec<HeldLease>, StoreError>;
}
