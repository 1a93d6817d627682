//! PostgreSQL's creation of a run in one round trip: its session (when
//! new, or held for share when open, as on the general path, so ending the
//! session waits for it), its row, its first events and its snapshot's
//! parts, as one statement. A session that has ended, or one another
//! transaction is creating at the same moment, inserts nothing, and a taken
//! run id fails the whole statement (so a new session is not left behind);
//! both take the general path ([`crate::sql_create`]), which tells the
//! cases apart.

use super::PostgresStore;
use crate::commit::CreateJob;
use crate::error::Failure;

/// The session, then the run row only when the session is open, then the
/// events and parts joined to the new row.
const CREATE: &str = "\
WITH new_session AS (
    INSERT INTO sessions (session_id, labels, created_at, ended_at, transcript_seq)
    VALUES ($3, '{}', $6, NULL, 0)
    ON CONFLICT (session_id) DO NOTHING
    RETURNING session_id
), open_session AS (
    SELECT session_id FROM sessions WHERE session_id = $3 AND ended_at IS NULL FOR SHARE
), run AS (
    INSERT INTO runs (run_id, agent_id, session_id, status, labels, created_at, updated_at,
                      last_seq, snapshot, lease_owner, lease_epoch, lease_expires)
    SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12
    WHERE EXISTS (SELECT 1 FROM new_session) OR EXISTS (SELECT 1 FROM open_session)
    RETURNING run_id
), events AS (
    INSERT INTO run_events (run_id, seq, body)
    SELECT run.run_id, e.seq, e.body
    FROM run, unnest($13::bigint[], $14::text[]) AS e(seq, body)
), parts AS (
    INSERT INTO run_snapshot_parts (run_id, kind, idx, body)
    SELECT run.run_id, p.kind, p.idx, p.body
    FROM run, unnest($15::text[], $16::bigint[], $17::text[]) AS p(kind, idx, body)
    ON CONFLICT (run_id, kind, idx) DO NOTHING
)
SELECT count(*) FROM run";

impl PostgresStore {
    /// Creates the run of `job` in one statement; whether it did (when not,
    /// nothing was written).
    pub(crate) async fn create_at_once(&self, job: &CreateJob) -> Result<bool, Failure> {
        let rows = super::at_once::Rows::of(&job.events, &job.snapshot.parts);
        let created = crate::sql_create::bind_run_row!(sqlx::query_as::<_, (i64,)>(CREATE), job)
            .bind(rows.seqs)
            .bind(rows.bodies)
            .bind(rows.kinds)
            .bind(rows.indexes)
            .bind(rows.part_bodies)
            .fetch_one(&self.pool)
            .await;
        match created {
            Ok((n,)) => Ok(n == 1),
            // The run id is taken: the general path says so.
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}
