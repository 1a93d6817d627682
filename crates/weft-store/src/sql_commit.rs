//! A commit applied in SQL, shared by both backends through [`impl_commit!`]:
//! the fast path (one conditional update when the events continue the log
//! and the lease epoch matches) and the slow path (a locking read that tells
//! duplicates, gaps, a lost lease and a missing run apart).

/// Implements `commit_in` for `$store` over database `$db`; `$lock` locks a
/// selected row for update (`""` on SQLite, whose write transactions are
/// exclusive).
macro_rules! impl_commit {
    ($store:ty, $db:ty, lock = $lock:literal) => {
        impl $store {
            /// Applies a commit inside `tx`, which the caller opens and commits.
            pub(crate) async fn commit_in<'t>(
                tx: &mut sqlx::Transaction<'t, $db>,
                job: &$crate::commit::CommitJob,
            ) -> Result<(), $crate::error::Failure> {
                use weft_core::store::StoreError;
                let (run_id, events, snapshot, status, now) = (
                    &job.run_id,
                    &job.events,
                    job.snapshot.as_deref(),
                    job.status,
                    job.now,
                );
                // A fenced commit that stops the run frees its lease.
                macro_rules! set {
                            () => {
                                "UPDATE runs SET last_seq = $2, status = $3, updated_at = $4, \
                         snapshot = COALESCE($5, snapshot), \
                         lease_owner = CASE WHEN $6 THEN NULL ELSE lease_owner END, \
                         lease_expires = CASE WHEN $6 THEN 0 ELSE lease_expires END \
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
                        return Ok(());
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
                Ok(())
            }
        }
    };
}

pub(crate) use impl_commit;
