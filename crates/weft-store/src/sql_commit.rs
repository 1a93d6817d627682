//! A commit applied in SQL, shared by both backends through [`impl_commit!`]:
//! the fast path (one conditional update when the events continue the log
//! and the lease epoch matches) and the slow path (a locking read that tells
//! duplicates, gaps, a lost lease and a missing run apart; a duplicate must
//! match the stored event, see [`crate::commit::check_stored`]). A commit that
//! stores new events appends the messages it carries to the run's session
//! transcript in the same transaction, so a retried commit appends nothing.
//! A commit's snapshot is a head in the run's row and the parts it adds
//! (see [`crate::parts`]), written together after the row's update.

/// Implements `commit_in` for `$store` over database `$db`; `$lock` locks a
/// selected row for update (`""` on SQLite, whose write transactions are
/// exclusive).
macro_rules! impl_commit {
    ($store:ty, $db:ty, lock = $lock:literal) => {
        impl $store {
            /// Inserts encoded events (`(seq, body)`) in multi-row statements.
            async fn insert_events<'t>(
                tx: &mut sqlx::Transaction<'t, $db>,
                run_id: &weft_core::RunId,
                events: &[&(i64, String)],
            ) -> Result<(), sqlx::Error> {
                for chunk in events.chunks($crate::commit::EVENTS_PER_INSERT) {
                    let sql = $crate::commit::insert_events_sql(chunk.len());
                    let mut q = sqlx::query(&sql).bind(run_id.as_str());
                    for (seq, body) in chunk {
                        q = q.bind(*seq).bind(body.as_str());
                    }
                    q.execute(&mut **tx).await?;
                }
                Ok(())
            }

            /// Inserts a snapshot's new parts in multi-row statements,
            /// ignoring those already stored.
            async fn insert_parts<'t>(
                tx: &mut sqlx::Transaction<'t, $db>,
                run_id: &weft_core::RunId,
                snapshot: Option<&$crate::parts::EncodedSnapshot>,
            ) -> Result<(), sqlx::Error> {
                let Some(snapshot) = snapshot else {
                    return Ok(());
                };
                for chunk in snapshot.parts.chunks($crate::parts::PARTS_PER_INSERT) {
                    let sql = $crate::parts::insert_parts_sql(chunk.len());
                    let mut q = sqlx::query(&sql).bind(run_id.as_str());
                    for (kind, idx, body) in chunk {
                        q = q.bind(*kind).bind(*idx).bind(body.as_str());
                    }
                    q.execute(&mut **tx).await?;
                }
                Ok(())
            }

            /// Applies a commit inside `tx`, which the caller opens and commits.
            pub(crate) async fn commit_in<'t>(
                tx: &mut sqlx::Transaction<'t, $db>,
                job: &$crate::commit::CommitJob,
            ) -> Result<(), $crate::error::Failure> {
                use weft_core::store::StoreError;
                let (run_id, events, snapshot, status, now) = (
                    &job.run_id,
                    &job.events,
                    job.snapshot.as_ref().map(|s| s.head.as_str()),
                    job.status,
                    job.now,
                );
                // A fenced commit that stops the run frees its lease; any commit
                // that stops it clears a pending control request and answers.
                macro_rules! set {
                            () => {
                                "UPDATE runs SET last_seq = $2, status = $3, updated_at = $4, \
                         snapshot = COALESCE($5, snapshot), \
                         lease_owner = CASE WHEN $6 THEN NULL ELSE lease_owner END, \
                         lease_expires = CASE WHEN $6 THEN 0 ELSE lease_expires END, \
                         control_request = CASE WHEN $3 = 'running' THEN control_request ELSE NULL END \
                         WHERE run_id = $1"
                            };
                        }
                // Fast path, the common case: the events continue the log
                // exactly. One conditional update checks that (and locks the
                // row) instead of a locking read followed by an update.
                let fast = match events.first() {
                    Some(&(first, _)) if first >= 1 => {
                        let expected = first.unsigned_abs() - 1;
                        match $crate::commit::fresh_events(run_id, events, expected) {
                            Ok((fresh, new_last)) if fresh.len() == events.len() => {
                                Some((expected, fresh, new_last))
                            }
                            _ => None,
                        }
                    }
                    _ => None,
                };
                if let Some((expected, fresh, new_last)) = fast {
                    let updated = sqlx::query(concat!(
                        set!(),
                        " AND last_seq = $7 AND lease_epoch = COALESCE($8, lease_epoch)"
                    ))
                    .bind(run_id.as_str())
                    .bind($crate::codec::int(new_last, "event seq")?)
                    .bind(status.as_str())
                    .bind(now)
                    .bind(snapshot)
                    .bind(job.release)
                    .bind($crate::codec::int(expected, "event seq")?)
                    .bind(job.fence)
                    .execute(&mut **tx)
                    .await?;
                    if updated.rows_affected() == 1 {
                        Self::insert_events(tx, run_id, &fresh).await?;
                        Self::insert_parts(tx, run_id, job.snapshot.as_ref()).await?;
                        Self::append_run_transcript(tx, job).await?;
                        return Self::clear_answers(tx, run_id, status).await;
                    }
                }
                // Slow path: duplicates, gaps, no events, a lost lease, or no such run.
                let row: Option<(i64, i64)> = sqlx::query_as(concat!(
                    "SELECT last_seq, lease_epoch FROM runs WHERE run_id = $1",
                    $lock
                ))
                .bind(run_id.as_str())
                .fetch_optional(&mut **tx)
                .await?;
                let Some((last, epoch)) = row else {
                    return Err(StoreError::RunNotFound {
                        run_id: run_id.clone(),
                    }
                    .into());
                };
                if let Some(fence) = job.fence
                    && fence != epoch
                {
                    return Err(StoreError::LeaseLost {
                        run_id: run_id.clone(),
                        epoch: fence.unsigned_abs(),
                    }
                    .into());
                }
                let last = $crate::codec::uint(last, "last_seq")?;
                let (fresh, new_last) = $crate::commit::fresh_events(run_id, events, last)?;
                if let Some((lo, hi)) = $crate::commit::stored_range(events, last) {
                    let stored: Vec<(i64, String)> = sqlx::query_as(
                        "SELECT seq, body FROM run_events WHERE run_id = $1 AND seq >= $2 AND seq <= $3",
                    )
                    .bind(run_id.as_str())
                    .bind(lo)
                    .bind(hi)
                    .fetch_all(&mut **tx)
                    .await?;
                    $crate::commit::check_stored(run_id, events, &stored)?;
                }
                Self::insert_events(tx, run_id, &fresh).await?;
                sqlx::query(set!())
                    .bind(run_id.as_str())
                    .bind($crate::codec::int(new_last, "event seq")?)
                    .bind(status.as_str())
                    .bind(now)
                    .bind(snapshot)
                    .bind(job.release)
                    .execute(&mut **tx)
                    .await?;
                Self::insert_parts(tx, run_id, job.snapshot.as_ref()).await?;
                if !fresh.is_empty() {
                    Self::append_run_transcript(tx, job).await?;
                }
                Self::clear_answers(tx, run_id, status).await
            }

            /// A commit that stops the run deletes the answers still waiting
            /// for its driver (their questions ended with the batch).
            async fn clear_answers<'t>(
                tx: &mut sqlx::Transaction<'t, $db>,
                run_id: &weft_core::RunId,
                status: weft_core::store::RunStatus,
            ) -> Result<(), $crate::error::Failure> {
                if status != weft_core::store::RunStatus::Running {
                    sqlx::query("DELETE FROM run_answers WHERE run_id = $1")
                        .bind(run_id.as_str())
                        .execute(&mut **tx)
                        .await?;
                }
                Ok(())
            }

            /// Appends the commit's transcript messages after the last entry
            /// of the run's session, under the session row's lock, unless the
            /// session has ended (its transcript is closed).
            async fn append_run_transcript<'t>(
                tx: &mut sqlx::Transaction<'t, $db>,
                job: &$crate::commit::CommitJob,
            ) -> Result<(), $crate::error::Failure> {
                if job.transcript.is_empty() {
                    return Ok(());
                }
                let (session_id,): (String,) =
                    sqlx::query_as("SELECT session_id FROM runs WHERE run_id = $1")
                        .bind(job.run_id.as_str())
                        .fetch_one(&mut **tx)
                        .await?;
                let row: Option<(i64, Option<i64>)> = sqlx::query_as(concat!(
                    "SELECT transcript_seq, ended_at FROM sessions WHERE session_id = $1",
                    $lock
                ))
                .bind(session_id.as_str())
                .fetch_optional(&mut **tx)
                .await?;
                let last = match row {
                    Some((_, Some(_))) => return Ok(()),
                    Some((last, None)) => last,
                    None => {
                        return Err(weft_core::session::SessionError::NotFound {
                            session_id: weft_core::SessionId::new(session_id),
                        }
                        .into());
                    }
                };
                let mut seq = last;
                for message in &job.transcript {
                    seq += 1;
                    sqlx::query(
                        "INSERT INTO transcript (session_id, seq, run_id, at, message) VALUES ($1, $2, $3, $4, $5)",
                    )
                    .bind(session_id.as_str())
                    .bind(seq)
                    .bind(job.run_id.as_str())
                    .bind(job.now)
                    .bind(message.as_str())
                    .execute(&mut **tx)
                    .await?;
                }
                sqlx::query("UPDATE sessions SET transcript_seq = $2 WHERE session_id = $1")
                    .bind(session_id.as_str())
                    .bind(seq)
                    .execute(&mut **tx)
                    .await?;
                Ok(())
            }
        }
    };
}

pub(crate) use impl_commit;
