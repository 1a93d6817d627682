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
