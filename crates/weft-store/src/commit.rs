//! A commit as the SQL backends apply it: encoded and owned before any
//! transaction opens ([`CommitJob`]), checked against the log's last
//! sequence number, and inserted in chunks of [`EVENTS_PER_INSERT`] events.
//! A commit that completes a run may carry messages for its session's
//! transcript, appended in the same transaction. Its snapshot is a head and
//! the parts the store does not hold yet ([`crate::parts`]).

use weft_core::RunId;
use weft_core::event::RunEvent;
use weft_core::store::StoreError;

use crate::codec;
use crate::parts::{self, Counts, EncodedSnapshot};
use crate::rows::Gap;

/// An event ready to insert: its sequence number and its JSON body.
pub(crate) type EncodedEvent = (i64, String);

/// A commit, encoded and owned, ready to apply (or to queue for a group commit).
#[derive(Debug)]
pub(crate) struct CommitJob {
    /// The run.
    pub(crate) run_id: RunId,
    /// Its new events.
    pub(crate) events: Vec<EncodedEvent>,
    /// The machine's head (JSON) and its new parts, when it changed.
    pub(crate) snapshot: Option<EncodedSnapshot>,
    /// The run's status after the commit.
    pub(crate) status: weft_core::store::RunStatus,
    /// When the commit happens, in milliseconds.
    pub(crate) now: i64,
    /// The lease epoch the committer holds, when the commit is fenced.
    pub(crate) fence: Option<i64>,
    /// Whether the commit frees the lease (fenced, and the run stops running).
    pub(crate) release: bool,
    /// Messages (JSON) to append to the run's session transcript when the
    /// commit stores new events.
    pub(crate) transcript: Vec<String>,
}

/// `commit` and the `transcript` it carries, encoded; of the machine's
/// parts, those past `known` (what the store holds).
pub(crate) fn encode_commit(
    commit: &weft_core::store::Commit<'_>,
    transcript: &[weft_core::message::Message],
    known: Counts,
) -> Result<CommitJob, StoreError> {
    let fence = commit
        .fence
        .map(|e| codec::int(e, "lease epoch"))
        .transpose()?;
    Ok(CommitJob {
        run_id: commit.run_id.clone(),
        events: encode_events(commit.events)?,
        snapshot: commit
            .snapshot
            .map(|s| parts::encode(s, known))
            .transpose()?,
        status: commit.status,
        now: codec::int(commit.now.as_millis(), "commit time")?,
        fence,
        release: fence.is_some() && commit.status != weft_core::store::RunStatus::Running,
        transcript: transcript
            .iter()
            .map(|m| codec::to_json(m, "message"))
            .collect::<Result<_, _>>()?,
    })
}

/// A run's creation, encoded and owned, ready to apply (or to queue for a
/// group commit): its row, its first events and its snapshot.
#[derive(Debug)]
pub(crate) struct CreateJob {
    /// The run.
    pub(crate) run_id: RunId,
    /// Its agent.
    pub(crate) agent_id: String,
    /// Its session, created when new.
    pub(crate) session_id: String,
    /// Its status.
    pub(crate) status: weft_core::store::RunStatus,
    /// Its labels (JSON).
    pub(crate) labels: String,
    /// When it was created and last updated, in milliseconds.
    pub(crate) created: i64,
    pub(crate) updated: i64,
    /// The sequence number of its last event.
    pub(crate) last: i64,
    /// Its first events.
    pub(crate) events: Vec<EncodedEvent>,
    /// The machine's head and all its parts.
    pub(crate) snapshot: EncodedSnapshot,
    /// The lease the creator takes: owner and expiry in milliseconds.
    pub(crate) lease: Option<(String, i64)>,
}

impl CreateJob {
    /// The error for a session that has ended.
    pub(crate) fn session_ended(&self) -> weft_core::session::SessionError {
        weft_core::session::SessionError::Ended {
            session_id: weft_core::SessionId::new(self.session_id.clone()),
        }
    }

    /// The error for a run id already taken.
    pub(crate) fn run_exists(&self) -> StoreError {
        StoreError::RunExists {
            run_id: self.run_id.clone(),
        }
    }
}

/// The creation of `record` with its first `events` and `snapshot`, and the
/// `lease` (owner, expiry) its creator takes, encoded.
pub(crate) fn encode_create(
    record: &weft_core::store::RunRecord,
    events: &[RunEvent],
    snapshot: &weft_core::run::RunMachine,
    lease: Option<(&str, i64)>,
) -> Result<CreateJob, StoreError> {
    let encoded = encode_events(events)?;
    let (fresh, last) = fresh_events(&record.run_id, &encoded, 0)?;
    let events = fresh.into_iter().cloned().collect();
    Ok(CreateJob {
        run_id: record.run_id.clone(),
        agent_id: record.agent_id.as_str().to_owned(),
        session_id: record.session_id.as_str().to_owned(),
        status: record.status,
        labels: codec::labels_json(&record.labels)?,
        created: codec::int(record.created_at.as_millis(), "created_at")?,
        updated: codec::int(record.updated_at.as_millis(), "updated_at")?,
        last: codec::int(last, "event seq")?,
        events,
        snapshot: parts::encode(snapshot, Counts::default())?,
        lease: lease.map(|(owner, expires)| (owner.to_owned(), expires)),
    })
}

/// Most events one `INSERT` carries.
pub(crate) const EVENTS_PER_INSERT: usize = 100;

/// Events as (sequence number, JSON body) pairs, encoded before any
/// transaction opens so no lock is held while serializing.
pub(crate) fn encode_events(events: &[RunEvent]) -> Result<Vec<EncodedEvent>, StoreError> {
    events
        .iter()
        .map(|e| Ok((codec::int(e.seq, "event seq")?, codec::to_json(e, "event")?)))
        .collect()
}

/// The events to insert after `last`, and the new last sequence number.
pub(crate) fn fresh_events<'a>(
    run_id: &RunId,
    events: &'a [EncodedEvent],
    last: u64,
) -> Result<(Vec<&'a EncodedEvent>, u64), StoreError> {
    // A negative sequence number cannot come out of `encode_events`.
    crate::rows::fresh(events, |e| e.0.unsigned_abs(), last).map_err(|Gap { last, seq }| {
        StoreError::SequenceGap {
            run_id: run_id.clone(),
            last,
            seq,
        }
    })
}

/// The sequence numbers of `events` stored already when the log ends at
/// `last` (first and last, inclusive); `None` when every event is new.
pub(crate) fn stored_range(events: &[EncodedEvent], last: u64) -> Option<(i64, i64)> {
    let mut dups = events
        .iter()
        .map(|e| e.0)
        .filter(|&seq| seq.unsigned_abs() <= last);
    let first = dups.next()?;
    let (lo, hi) = dups.fold((first, first), |(lo, hi), s| (lo.min(s), hi.max(s)));
    Some((lo, hi))
}

/// Checks that each event of `events` that is among `stored` (`(seq,
/// body)` rows read back) has the stored content: a retried commit is a
/// no-op, different content under a stored number is a
/// [`StoreError::SequenceConflict`]. Bodies are compared as JSON values, so
/// key order does not matter.
pub(crate) fn check_stored(
    run_id: &RunId,
    events: &[EncodedEvent],
    stored: &[(i64, String)],
) -> Result<(), StoreError> {
    for (seq, body) in events {
        let Some((_, kept)) = stored.iter().find(|(s, _)| s == seq) else {
            continue;
        };
        if kept == body {
            continue;
        }
        let same = match (
            serde_json::from_str::<serde_json::Value>(kept),
            serde_json::from_str::<serde_json::Value>(body),
        ) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if !same {
            return Err(StoreError::SequenceConflict {
                run_id: run_id.clone(),
                seq: seq.unsigned_abs(),
            });
        }
    }
    Ok(())
}

/// Whether a failure is [`StoreError::RunExists`].
pub(crate) fn is_run_exists(failure: &crate::error::Failure) -> bool {
    matches!(
        failure,
        crate::error::Failure::Session(weft_core::session::SessionError::Store(
            StoreError::RunExists { .. }
        ))
    )
}

/// `INSERT` text for `n` events of one run: `$1` is the run id.
pub(crate) fn insert_events_sql(n: usize) -> String {
    let mut sql = String::from("INSERT INTO run_events (run_id, seq, body) VALUES ");
    for i in 0..n {
        if i > 0 {
            sql.push_str(", ");
        }
        sql.push_str(&format!("($1, ${}, ${})", 2 + 2 * i, 3 + 2 * i));
    }
    sql
}
