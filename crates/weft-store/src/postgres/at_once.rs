//! PostgreSQL's commit in one round trip: the common commit (its events
//! continue the log, the run keeps running, no session transcript to
//! append) as one statement whose data-modifying `WITH` clauses update the
//! run row and insert the events and the snapshot's new parts only when the
//! row's update matched. One statement is its own transaction: it lands
//! whole or not at all. Anything else, or a statement that matched no row,
//! takes the general path ([`crate::sql_commit`]) in a transaction.

use weft_core::store::RunStatus;

use super::PostgresStore;
use crate::commit::{CommitJob, fresh_events};
use crate::error::Failure;

/// The run row's update when the events continue its log and the lease
/// epoch holds, then the rows of the events and the parts, joined to the
/// update so they are inserted only when it matched.
const AT_ONCE: &str = "\
WITH updated AS (
    UPDATE runs SET last_seq = $2, updated_at = $3, snapshot = COALESCE($4, snapshot)
    WHERE run_id = $1 AND status = 'running' AND last_seq = $5
      AND lease_epoch = COALESCE($6, lease_epoch)
    RETURNING run_id
), events AS (
    INSERT INTO run_events (run_id, seq, body)
    SELECT updated.run_id, e.seq, e.body
    FROM updated, unnest($7::bigint[], $8::text[]) AS e(seq, body)
), parts AS (
    INSERT INTO run_snapshot_parts (run_id, kind, idx, body)
    SELECT updated.run_id, p.kind, p.idx, p.body
    FROM updated, unnest($9::text[], $10::bigint[], $11::text[]) AS p(kind, idx, body)
    ON CONFLICT (run_id, kind, idx) DO NOTHING
)
SELECT count(*) FROM updated";

impl PostgresStore {
    /// Applies `job` in one statement when it is a common commit; whether it
    /// did (when not, nothing was written).
    pub(crate) async fn commit_at_once(&self, job: &CommitJob) -> Result<bool, Failure> {
        if job.status != RunStatus::Running || !job.transcript.is_empty() || job.release {
            return Ok(false);
        }
        let Some(&(first, _)) = job.events.first() else {
            return Ok(false);
        };
        let Some(expected) = first.unsigned_abs().checked_sub(1).filter(|_| first >= 1) else {
            return Ok(false);
        };
        let Ok((fresh, new_last)) = fresh_events(&job.run_id, &job.events, expected) else {
            return Ok(false);
        };
        if fresh.len() != job.events.len() {
            return Ok(false);
        }
        let (seqs, bodies): (Vec<i64>, Vec<&str>) =
            job.events.iter().map(|(s, b)| (*s, b.as_str())).unzip();
        let parts = job.snapshot.as_ref().map_or(&[][..], |s| &s.parts[..]);
        let kinds: Vec<&str> = parts.iter().map(|p| p.0).collect();
        let indexes: Vec<i64> = parts.iter().map(|p| p.1).collect();
        let part_bodies: Vec<&str> = parts.iter().map(|p| p.2.as_str()).collect();
        let (matched,): (i64,) = sqlx::query_as(AT_ONCE)
            .bind(job.run_id.as_str())
            .bind(crate::codec::int(new_last, "event seq")?)
            .bind(job.now)
            .bind(job.snapshot.as_ref().map(|s| s.head.as_str()))
            .bind(crate::codec::int(expected, "event seq")?)
            .bind(job.fence)
            .bind(seqs)
            .bind(bodies)
            .bind(kinds)
            .bind(indexes)
            .bind(part_bodies)
            .fetch_one(&self.pool)
            .await?;
        Ok(matched == 1)
    }
}
