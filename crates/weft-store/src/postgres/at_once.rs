//! PostgreSQL's commit in one round trip: a commit whose events continue
//! the log (the common case, a run's last commit included) as one statement
//! whose data-modifying `WITH` clauses update the run row and, only when
//! that update matched, insert the events and the snapshot's new parts,
//! append the commit's messages to the session transcript (under the
//! session row's lock, unless the session has ended) and, when the run
//! stops, delete the answers still waiting for it. One statement is its own
//! transaction: it lands whole or not at all. Anything else (duplicates, a
//! gap, a lost lease, a run that is not running), or a statement that
//! matched no row, takes the general path ([`crate::sql_commit`]) in a
//! transaction.
//!
//! The run row is locked before the session row, as on the general path,
//! so the two paths cannot deadlock each other.

use std::sync::Arc;

use super::PostgresStore;
use crate::commit::{CommitJob, EncodedEvent, fresh_events};
use crate::error::Failure;
use crate::parts::EncodedPart;

/// The run row's update when the events continue its log and the lease
/// epoch holds (its status, lease and control request set as on the general
/// path), then the writes joined to that update, so they happen only when it
/// matched.
const AT_ONCE: &str = "\
WITH updated AS (
    UPDATE runs SET last_seq = $2, status = $12, updated_at = $3,
        snapshot = COALESCE($4, snapshot),
        lease_owner = CASE WHEN $13 THEN NULL ELSE lease_owner END,
        lease_expires = CASE WHEN $13 THEN 0 ELSE lease_expires END,
        control_request = CASE WHEN $12 = 'running' THEN control_request ELSE NULL END
    WHERE run_id = $1 AND status = 'running' AND last_seq = $5
      AND lease_epoch = COALESCE($6, lease_epoch)
    RETURNING run_id, session_id
), events AS (
    INSERT INTO run_events (run_id, seq, body)
    SELECT updated.run_id, e.seq, e.body
    FROM updated, unnest($7::bigint[], $8::text[]) AS e(seq, body)
), parts AS (
    INSERT INTO run_snapshot_parts (run_id, kind, idx, body)
    SELECT updated.run_id, p.kind, p.idx, p.body
    FROM updated, unnest($9::text[], $10::bigint[], $11::text[]) AS p(kind, idx, body)
    ON CONFLICT (run_id, kind, idx) DO NOTHING
), session AS (
    UPDATE sessions SET transcript_seq = sessions.transcript_seq + cardinality($14::text[])
    FROM updated
    WHERE sessions.session_id = updated.session_id AND sessions.ended_at IS NULL
      AND cardinality($14::text[]) > 0
    RETURNING sessions.session_id, sessions.transcript_seq - cardinality($14::text[]) AS before
), appended AS (
    INSERT INTO transcript (session_id, seq, run_id, at, message)
    SELECT session.session_id, session.before + m.ord, $1, $3, m.message
    FROM session, unnest($14::text[]) WITH ORDINALITY AS m(message, ord)
), answers AS (
    DELETE FROM run_answers USING updated
    WHERE run_answers.run_id = updated.run_id AND $12 <> 'running'
)
SELECT count(*) FROM updated";

impl PostgresStore {
    /// Applies `job` in one statement when its events continue the log
    /// (with other runs' commits when others are under way and it appends
    /// no transcript, see [`super::batch`]); whether it did (when not,
    /// nothing was written).
    pub(crate) async fn commit_at_once(&self, job: &Arc<CommitJob>) -> Result<bool, Failure> {
        let Some((expected, new_last)) = continues_log(job) else {
            return Ok(false);
        };
        let busy = self.batcher.enter();
        if !busy.alone && job.transcript.is_empty() {
            return Ok(self.batcher.commit(job, expected, new_last).await);
        }
        let parts = job.snapshot.as_ref().map_or(&[][..], |s| &s.parts[..]);
        let rows = Rows::of(&job.events, parts);
        let transcript: Vec<&str> = job.transcript.iter().map(String::as_str).collect();
        let (matched,): (i64,) = sqlx::query_as(AT_ONCE)
            .bind(job.run_id.as_str())
            .bind(crate::codec::int(new_last, "event seq")?)
            .bind(job.now)
            .bind(job.snapshot.as_ref().map(|s| s.head.as_str()))
            .bind(crate::codec::int(expected, "event seq")?)
            .bind(job.fence)
            .bind(rows.seqs)
            .bind(rows.bodies)
            .bind(rows.kinds)
            .bind(rows.indexes)
            .bind(rows.part_bodies)
            .bind(job.status.as_str())
            .bind(job.release)
            .bind(transcript)
            .fetch_one(&self.pool)
            .await?;
        drop(busy);
        self.batcher.record_single();
        Ok(matched == 1)
    }
}

/// Where `job`'s log continues from and up to which sequence number, when
/// all its events are new and follow each other (`None` otherwise: a commit
/// for the general path).
fn continues_log(job: &CommitJob) -> Option<(u64, u64)> {
    let &(first, _) = job.events.first()?;
    let expected = first.unsigned_abs().checked_sub(1).filter(|_| first >= 1)?;
    let (fresh, new_last) = fresh_events(&job.run_id, &job.events, expected).ok()?;
    (fresh.len() == job.events.len()).then_some((expected, new_last))
}

/// A write's events and snapshot parts as the column arrays a one-statement
/// write binds (its `unnest` arguments).
pub(super) struct Rows<'a> {
    pub(super) seqs: Vec<i64>,
    pub(super) bodies: Vec<&'a str>,
    pub(super) kinds: Vec<&'a str>,
    pub(super) indexes: Vec<i64>,
    pub(super) part_bodies: Vec<&'a str>,
}

impl<'a> Rows<'a> {
    /// The columns of `events` and `parts`.
    pub(super) fn of(events: &'a [EncodedEvent], parts: &'a [EncodedPart]) -> Self {
        let (seqs, bodies) = events.iter().map(|(s, b)| (*s, b.as_str())).unzip();
        Self {
            seqs,
            bodies,
            kinds: parts.iter().map(|p| p.0).collect(),
            indexes: parts.iter().map(|p| p.1).collect(),
            part_bodies: parts.iter().map(|p| p.2.as_str()).collect(),
        }
    }
}
