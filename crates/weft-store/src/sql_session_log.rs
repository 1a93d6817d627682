//! The session log and its erasure in SQL, shared by both backends through
//! [`impl_session_log!`] (called by `impl_session_store!`): appending
//! transcript entries under the session row's lock, and deleting a session
//! (ended, with its transcript and memory erased, in one transaction).

/// Implements the transcript append and the session deletion for `$store`;
/// `$lock` locks a selected row for update (`""` on SQLite).
macro_rules! impl_session_log {
    ($store:ty, lock = $lock:literal) => {
        impl $store {
            async fn append_transcript_once(
                &self,
                session_id: &weft_core::SessionId,
                entries: &[(i64, Option<&str>, i64, String)],
            ) -> Result<(), $crate::error::Failure> {
                use weft_core::session::SessionError;
                let mut tx = self.write_tx().await?;
                let row: Option<(i64,)> = sqlx::query_as(concat!(
                    "SELECT transcript_seq FROM sessions WHERE session_id = $1",
                    $lock
                ))
                .bind(session_id.as_str())
                .fetch_optional(&mut *tx)
                .await?;
                let Some((last,)) = row else {
                    return Err(SessionError::NotFound { session_id: session_id.clone() }.into());
                };
                let last = $crate::codec::uint(last, "transcript_seq")?;
                let (fresh, new_last) = $crate::rows::fresh(entries, |e| e.0.unsigned_abs(), last).map_err(
                    |$crate::rows::Gap { last, seq }| SessionError::TranscriptGap {
                        session_id: session_id.clone(),
                        last,
                        seq,
                    },
                )?;
                for (seq, run_id, at, message) in fresh {
                    sqlx::query(
                        "INSERT INTO transcript (session_id, seq, run_id, at, message) VALUES ($1, $2, $3, $4, $5)",
                    )
                    .bind(session_id.as_str())
                    .bind(*seq)
                    .bind(*run_id)
                    .bind(*at)
                    .bind(message.as_str())
                    .execute(&mut *tx)
                    .await?;
                }
                sqlx::query("UPDATE sessions SET transcript_seq = $2 WHERE session_id = $1")
                    .bind(session_id.as_str())
                    .bind($crate::codec::int(new_last, "transcript seq")?)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(())
            }

            /// Ends the session and erases its transcript and memory, in one
            /// transaction; the ended session, or `None` when there is none.
            async fn delete_session_once(
                &self,
                session_id: &weft_core::SessionId,
                now: i64,
            ) -> Result<Option<$crate::rows::SessionRow>, $crate::error::Failure> {
                let mut tx = self.write_tx().await?;
                let sql = format!(
                    "UPDATE sessions SET ended_at = COALESCE(ended_at, $2) WHERE session_id = $1 RETURNING {}",
                    $crate::rows::SESSION_COLUMNS
                );
                let row: Option<$crate::rows::SessionRow> = sqlx::query_as(&sql)
                    .bind(session_id.as_str())
                    .bind(now)
                    .fetch_optional(&mut *tx)
                    .await?;
                if row.is_some() {
                    for table in ["transcript", "memory"] {
                        sqlx::query(&format!("DELETE FROM {table} WHERE session_id = $1"))
                            .bind(session_id.as_str())
                            .execute(&mut *tx)
                            .await?;
                    }
                }
                tx.commit().await?;
                Ok(row)
            }

            /// [`delete_session_once`](Self::delete_session_once), retried
            /// (deleting again changes nothing).
            async fn delete_session_inner(
                &self,
                session_id: &weft_core::SessionId,
                now: weft_core::Timestamp,
            ) -> Result<weft_core::session::SessionRecord, weft_core::session::SessionError> {
                let now = $crate::codec::int(now.as_millis(), "ended_at")?;
                let row = $crate::retry::retrying(self.retry_label(), || self.delete_session_once(session_id, now))
                    .await
                    .map_err($crate::error::Failure::into_session)?;
                match row {
                    Some(row) => $crate::rows::session_record(row),
                    None => Err(weft_core::session::SessionError::NotFound {
                        session_id: session_id.clone(),
                    }),
                }
            }
        }
    };
}

pub(crate) use impl_session_log;
