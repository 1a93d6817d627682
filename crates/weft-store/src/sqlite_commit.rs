//! A commit and a run's creation applied on SQLite's own connection
//! ([`rusqlite`]), for the group committer: the same statements and checks
//! as [`crate::sql_commit`] and [`crate::sql_create`] (the
//! fast path's conditional update, the slow path's read that tells
//! duplicates, gaps, a lost lease and a missing run apart, the session
//! transcript, the snapshot's parts), run on one thread statement after
//! statement with prepared statements kept between commits, so a commit
//! costs SQLite's work and no handoff between threads per statement.

use rusqlite::{Connection, OptionalExtension, params};
use weft_core::store::{RunStatus, StoreError};

use crate::commit::{CommitJob, CreateJob, EncodedEvent, fresh_events};
use crate::error::Failure;
use crate::parts::EncodedPart;

/// The run row's update: `?6` frees the lease (a fenced commit that stops
/// the run); a commit that stops it clears a pending control request. With
/// `?7` set it applies only when the log ends at `?7` and the lease epoch is
/// `?8` (when given): the fast path's check.
const UPDATE_RUN: &str = "UPDATE runs SET last_seq = ?2, status = ?3, updated_at = ?4, \
     snapshot = COALESCE(?5, snapshot), \
     lease_owner = CASE WHEN ?6 THEN NULL ELSE lease_owner END, \
     lease_expires = CASE WHEN ?6 THEN 0 ELSE lease_expires END, \
     control_request = CASE WHEN ?3 = 'running' THEN control_request ELSE NULL END \
     WHERE run_id = ?1 \
     AND (?7 IS NULL OR (last_seq = ?7 AND lease_epoch = COALESCE(?8, lease_epoch)))";

/// A step's update of a run that stays running and keeps its lease: only
/// the columns a step changes. SQLite rewrites an index entry whenever a
/// column of the index is SET, even to its own value, so [`UPDATE_RUN`]
/// dirties a page of `runs_status` and one of `runs_orphans` at every
/// commit: two of the ten WAL pages a step wrote. Applies only to a run
/// that is running already (otherwise [`UPDATE_RUN`] follows), with the
/// same checks as [`UPDATE_RUN`]'s `?7` and `?8` in `?5` and `?6`.
const UPDATE_STEP: &str = "UPDATE runs SET last_seq = ?2, updated_at = ?3, \
     snapshot = COALESCE(?4, snapshot) \
     WHERE run_id = ?1 AND status = 'running' \
     AND (?5 IS NULL OR (last_seq = ?5 AND lease_epoch = COALESCE(?6, lease_epoch)))";

/// Applies `job` on `conn`, inside a transaction or savepoint the caller
/// opens and ends.
pub(crate) fn commit_in(conn: &Connection, job: &CommitJob) -> Result<(), Failure> {
    // Updates the run row to end its log at `new_last`, checked against
    // `expected` when given; whether a row was updated.
    let update = |new_last: u64, expected: Option<u64>| -> Result<bool, Failure> {
        let expected = expected
            .map(|e| crate::codec::int(e, "event seq"))
            .transpose()?;
        let last = crate::codec::int(new_last, "event seq")?;
        let snapshot = job.snapshot.as_ref().map(|s| s.head.as_str());
        if job.status == RunStatus::Running && !job.release {
            let updated = conn.prepare_cached(UPDATE_STEP)?.execute(params![
                job.run_id.as_str(),
                last,
                job.now,
                snapshot,
                expected,
                job.fence,
            ])?;
            if updated == 1 {
                return Ok(true);
            }
        }
        let updated = conn.prepare_cached(UPDATE_RUN)?.execute(params![
            job.run_id.as_str(),
            last,
            job.status.as_str(),
            job.now,
            snapshot,
            job.release,
            expected,
            job.fence,
        ])?;
        Ok(updated == 1)
    };
    // Fast path, the common case: the events continue the log exactly.
    if let Some(&(first, _)) = job.events.first()
        && first >= 1
    {
        let expected = first.unsigned_abs() - 1;
        if let Ok((fresh, new_last)) = fresh_events(&job.run_id, &job.events, expected)
            && fresh.len() == job.events.len()
            && update(new_last, Some(expected))?
        {
            return finish(conn, job, &fresh);
        }
    }
    // Slow path: duplicates, gaps, no events, a lost lease, or no such run.
    let row: Option<(i64, i64)> = conn
        .prepare_cached("SELECT last_seq, lease_epoch FROM runs WHERE run_id = ?1")?
        .query_row([job.run_id.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((last, epoch)) = row else {
        return Err(StoreError::RunNotFound {
            run_id: job.run_id.clone(),
        }
        .into());
    };
    if let Some(fence) = job.fence
        && fence != epoch
    {
        return Err(StoreError::LeaseLost {
            run_id: job.run_id.clone(),
            epoch: fence.unsigned_abs(),
        }
        .into());
    }
    let last = crate::codec::uint(last, "last_seq")?;
    let (fresh, new_last) = fresh_events(&job.run_id, &job.events, last)?;
    if let Some((lo, hi)) = crate::commit::stored_range(&job.events, last) {
        let stored = conn
            .prepare_cached(
                "SELECT seq, body FROM run_events WHERE run_id = ?1 AND seq >= ?2 AND seq <= ?3",
            )?
            .query_map(params![job.run_id.as_str(), lo, hi], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect::<Result<Vec<(i64, String)>, _>>()?;
        crate::commit::check_stored(&job.run_id, &job.events, &stored)?;
    }
    update(new_last, None)?;
    finish(conn, job, &fresh)
}

/// Applies the creation `job` on `conn`, inside a transaction or savepoint
/// the caller opens and ends.
pub(crate) fn create_in(conn: &Connection, job: &CreateJob) -> Result<(), Failure> {
    conn.prepare_cached(
        "INSERT INTO sessions (session_id, labels, created_at, ended_at, transcript_seq) \
         VALUES (?1, '{}', ?2, NULL, 0) ON CONFLICT (session_id) DO NOTHING",
    )?
    .execute(params![job.session_id, job.created])?;
    let ended: Option<Option<i64>> = conn
        .prepare_cached("SELECT ended_at FROM sessions WHERE session_id = ?1")?
        .query_row([job.session_id.as_str()], |r| r.get(0))
        .optional()?;
    if let Some(Some(_)) = ended {
        return Err(job.session_ended().into());
    }
    let inserted = conn
        .prepare_cached(
            "INSERT INTO runs (run_id, agent_id, session_id, status, labels, created_at, updated_at, \
             last_seq, snapshot, lease_owner, lease_epoch, lease_expires) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) \
             ON CONFLICT (run_id) DO NOTHING",
        )?
        .execute(params![
            job.run_id.as_str(),
            job.agent_id,
            job.session_id,
            job.status.as_str(),
            job.labels,
            job.created,
            job.updated,
            job.last,
            job.snapshot.head,
            job.lease.as_ref().map(|l| l.0.as_str()),
            i64::from(job.lease.is_some()),
            job.lease.as_ref().map_or(0, |l| l.1),
        ])?;
    if inserted == 0 {
        return Err(job.run_exists().into());
    }
    insert_events(conn, job.run_id.as_str(), job.events.iter())?;
    insert_parts(conn, job.run_id.as_str(), &job.snapshot.parts)
}

/// Inserts encoded events of one run.
fn insert_events<'a>(
    conn: &Connection,
    run_id: &str,
    events: impl Iterator<Item = &'a EncodedEvent>,
) -> Result<(), Failure> {
    let mut insert =
        conn.prepare_cached("INSERT INTO run_events (run_id, seq, body) VALUES (?1, ?2, ?3)")?;
    for (seq, body) in events {
        insert.execute(params![run_id, seq, body])?;
    }
    Ok(())
}

/// Inserts a snapshot's new parts, ignoring those already stored.
fn insert_parts(conn: &Connection, run_id: &str, parts: &[EncodedPart]) -> Result<(), Failure> {
    let mut insert = conn.prepare_cached(
        "INSERT INTO run_snapshot_parts (run_id, kind, idx, body) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (run_id, kind, idx) DO NOTHING",
    )?;
    for (kind, idx, body) in parts {
        insert.execute(params![run_id, kind, idx, body])?;
    }
    Ok(())
}

/// After the run row's update: the fresh events, the snapshot's new parts,
/// the session transcript (when events were stored), and the answers a
/// stopping run leaves.
fn finish(conn: &Connection, job: &CommitJob, fresh: &[&EncodedEvent]) -> Result<(), Failure> {
    let run_id = job.run_id.as_str();
    insert_events(conn, run_id, fresh.iter().copied())?;
    if let Some(snapshot) = &job.snapshot {
        insert_parts(conn, run_id, &snapshot.parts)?;
    }
    if !fresh.is_empty() {
        append_transcript(conn, job)?;
    }
    if job.status != RunStatus::Running {
        conn.prepare_cached("DELETE FROM run_answers WHERE run_id = ?1")?
            .execute([run_id])?;
    }
    Ok(())
}

/// Appends the commit's transcript messages after the last entry of the
/// run's session, unless the session has ended (its transcript is closed).
fn append_transcript(conn: &Connection, job: &CommitJob) -> Result<(), Failure> {
    if job.transcript.is_empty() {
        return Ok(());
    }
    let session_id: String = conn
        .prepare_cached("SELECT session_id FROM runs WHERE run_id = ?1")?
        .query_row([job.run_id.as_str()], |r| r.get(0))?;
    let row: Option<(i64, Option<i64>)> = conn
        .prepare_cached("SELECT transcript_seq, ended_at FROM sessions WHERE session_id = ?1")?
        .query_row([session_id.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let mut seq = match row {
        Some((_, Some(_))) => return Ok(()),
        Some((last, None)) => last,
        None => {
            return Err(weft_core::session::SessionError::NotFound {
                session_id: weft_core::SessionId::new(session_id),
            }
            .into());
        }
    };
    let mut insert = conn.prepare_cached(
        "INSERT INTO transcript (session_id, seq, run_id, at, message) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for message in &job.transcript {
        seq += 1;
        insert.execute(params![
            session_id,
            seq,
            job.run_id.as_str(),
            job.now,
            message
        ])?;
    }
    conn.prepare_cached("UPDATE sessions SET transcript_seq = ?2 WHERE session_id = ?1")?
        .execute(params![session_id, seq])?;
    Ok(())
}
