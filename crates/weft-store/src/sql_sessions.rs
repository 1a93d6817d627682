//! The SQL implementation of the session traits (`SessionStore`,
//! `SessionMemoryStore` from `weft_core::session`; prompts are in
//! [`crate::sql_prompts`]), shared by both
//! backends through [`impl_session_store!`]; see [`crate::sql_runs`] for what
//! a backend type provides.
//!
//! A session row carries `transcript_seq`, the last transcript sequence
//! number, for the same reason a run row carries `last_seq`.

/// Implements the session traits for `$store`; `$lock` is the suffix that
/// locks a selected row for update (`""` on SQLite).
macro_rules! impl_session_store {
    ($store:ty, lock = $lock:literal, label = $label:expr) => {
        $crate::sql_session_log::impl_session_log!($store, lock = $lock);
        $crate::sql_session_rows::impl_session_rows!($store, label = $label);

        #[async_trait::async_trait]
        impl weft_core::session::SessionStore for $store {
            async fn create_session(
                &self,
                session: &weft_core::session::SessionRecord,
            ) -> Result<(), weft_core::session::SessionError> {
                use $crate::error::Failure;
                let labels = $crate::codec::labels_json(&session.labels)?;
                let created = $crate::codec::int(session.created_at.as_millis(), "created_at")?;
                let ended = session
                    .ended_at
                    .map(|t| $crate::codec::int(t.as_millis(), "ended_at"))
                    .transpose()?;
                let result = sqlx::query(
                    "INSERT INTO sessions (session_id, labels, created_at, ended_at, transcript_seq) \
                     VALUES ($1, $2, $3, $4, 0) ON CONFLICT (session_id) DO NOTHING",
                )
                .bind(session.session_id.as_str())
                .bind(labels)
                .bind(created)
                .bind(ended)
                .execute(self.write_pool())
                .await
                .map_err(|e| Failure::from(e).into_session())?;
                if result.rows_affected() == 0 {
                    return Err(weft_core::session::SessionError::Exists {
                        session_id: session.session_id.clone(),
                    });
                }
                Ok(())
            }

            async fn get_session(
                &self,
                session_id: &weft_core::SessionId,
            ) -> Result<Option<weft_core::session::SessionRecord>, weft_core::session::SessionError> {
                let sql = format!("SELECT {} FROM sessions WHERE session_id = $1", $crate::rows::SESSION_COLUMNS);
                let row: Option<$crate::rows::SessionRow> = $crate::retry::retrying(self.retry_label(), || async {
                    Ok(sqlx::query_as(&sql).bind(session_id.as_str()).fetch_optional(self.read_pool()).await?)
                })
                .await
                .map_err($crate::error::Failure::into_session)?;
                row.map($crate::rows::session_record).transpose()
            }

            async fn list_sessions(
                &self,
                filter: &weft_core::session::SessionFilter,
            ) -> Result<Vec<weft_core::session::SessionRecord>, weft_core::session::SessionError> {
                let rows = self.session_rows(filter).await?;
                rows.into_iter().map($crate::rows::session_record).collect()
            }

            async fn list_session_rows(
                &self,
                filter: &weft_core::session::SessionFilter,
            ) -> Result<Vec<weft_core::session::ListedSession>, weft_core::session::SessionError> {
                let rows = self.session_rows(filter).await?;
                Ok(rows.into_iter().map($crate::rows::listed_session).collect())
            }

            async fn session_head(
                &self,
                session_id: &weft_core::SessionId,
                key: &str,
            ) -> Result<Option<weft_core::session::SessionHead>, weft_core::session::SessionError> {
                self.session_head_inner(session_id, key).await
            }

            async fn end_session(
                &self,
                session_id: &weft_core::SessionId,
                now: weft_core::Timestamp,
            ) -> Result<weft_core::session::SessionRecord, weft_core::session::SessionError> {
                let now = $crate::codec::int(now.as_millis(), "ended_at")?;
                let sql = format!(
                    "UPDATE sessions SET ended_at = COALESCE(ended_at, $2) WHERE session_id = $1 RETURNING {}",
                    $crate::rows::SESSION_COLUMNS
                );
                // Safe to retry: ending is idempotent.
                let row: Option<$crate::rows::SessionRow> = $crate::retry::retrying(self.retry_label(), || async {
                    Ok(sqlx::query_as(&sql)
                        .bind(session_id.as_str())
                        .bind(now)
                        .fetch_optional(self.write_pool())
                        .await?)
                })
                .await
                .map_err($crate::error::Failure::into_session)?;
                match row {
                    Some(row) => $crate::rows::session_record(row),
                    None => Err(weft_core::session::SessionError::NotFound {
                        session_id: session_id.clone(),
                    }),
                }
            }

            async fn delete_session(
                &self,
                session_id: &weft_core::SessionId,
                now: weft_core::Timestamp,
            ) -> Result<weft_core::session::SessionRecord, weft_core::session::SessionError> {
                self.delete_session_inner(session_id, now).await
            }

            async fn start_run(
                &self,
                record: &weft_core::store::RunRecord,
                events: &[weft_core::event::RunEvent],
                snapshot: &weft_core::run::RunMachine,
            ) -> Result<(), weft_core::session::SessionError> {
                self.start_run_inner(record, events, snapshot, None)
                    .await
                    .map_err($crate::error::Failure::into_session)
            }
        }

        #[async_trait::async_trait]
        impl weft_core::session::SessionMemoryStore for $store {
            async fn append_transcript(
                &self,
                session_id: &weft_core::SessionId,
                entries: &[weft_core::session::TranscriptEntry],
            ) -> Result<(), weft_core::session::SessionError> {
                let encoded = entries
                    .iter()
                    .map(|e| {
                        Ok((
                            $crate::codec::int(e.seq, "transcript seq")?,
                            e.run_id.as_ref().map(weft_core::RunId::as_str),
                            $crate::codec::int(e.at.as_millis(), "transcript at")?,
                            $crate::codec::to_json(&e.message, "message")?,
                        ))
                    })
                    .collect::<Result<Vec<_>, weft_core::store::StoreError>>()?;
                // Safe to retry: stored entries are skipped.
                $crate::retry::retrying(self.retry_label(), || self.append_transcript_once(session_id, &encoded))
                    .await
                    .map_err($crate::error::Failure::into_session)
            }

            async fn read_transcript(
                &self,
                session_id: &weft_core::SessionId,
                after: u64,
                limit: Option<u32>,
            ) -> Result<Vec<weft_core::session::TranscriptEntry>, weft_core::session::SessionError> {
                let rows: Vec<$crate::rows::TranscriptRow> = self
                    .log_page($crate::paging::TRANSCRIPT, session_id.as_str(), after, limit)
                    .await
                    .map_err($crate::error::Failure::into_session)?
                    .ok_or_else(|| weft_core::session::SessionError::NotFound {
                        session_id: session_id.clone(),
                    })?;
                Ok(rows.into_iter().map($crate::rows::transcript_entry).collect::<Result<_, _>>()?)
            }

            async fn memory_set(
                &self,
                session_id: &weft_core::SessionId,
                key: &str,
                value: &serde_json::Value,
                now: weft_core::Timestamp,
            ) -> Result<(), weft_core::session::SessionError> {
                use weft_core::session::{MAX_MEMORY_KEYS, MAX_MEMORY_VALUE, SessionError};
                let value = $crate::codec::to_json(value, "memory value")?;
                if value.len() > MAX_MEMORY_VALUE {
                    return Err(SessionError::MemoryValueTooLarge {
                        session_id: session_id.clone(),
                        key: key.to_owned(),
                        bytes: value.len(),
                        limit: MAX_MEMORY_VALUE,
                    });
                }
                let now = $crate::codec::int(now.as_millis(), "updated_at")?;
                let limit = i64::try_from(MAX_MEMORY_KEYS).unwrap_or(i64::MAX);
                // Safe to retry: the upsert writes the same value. A new key
                // is refused once the session holds the maximum.
                let result = $crate::retry::retrying(self.retry_label(), || async {
                    Ok(sqlx::query(
                        "INSERT INTO memory (session_id, key, value, updated_at) \
                         SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM sessions WHERE session_id = $1) \
                         AND (EXISTS (SELECT 1 FROM memory WHERE session_id = $1 AND key = $2) \
                              OR (SELECT COUNT(*) FROM memory WHERE session_id = $1) < $5) \
                         ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value, \
                         updated_at = excluded.updated_at",
                    )
                    .bind(session_id.as_str())
                    .bind(key)
                    .bind(value.as_str())
                    .bind(now)
                    .bind(limit)
                    .execute(self.write_pool())
                    .await?)
                })
                .await
                .map_err($crate::error::Failure::into_session)?;
                if result.rows_affected() == 0 {
                    let exists: Option<(String,)> =
                        sqlx::query_as("SELECT session_id FROM sessions WHERE session_id = $1")
                            .bind(session_id.as_str())
                            .fetch_optional(self.read_pool())
                            .await
                            .map_err(|e| $crate::error::Failure::from(e).into_session())?;
                    return Err(match exists {
                        Some(_) => SessionError::MemoryFull {
                            session_id: session_id.clone(),
                            limit: MAX_MEMORY_KEYS,
                        },
                        None => SessionError::NotFound {
                            session_id: session_id.clone(),
                        },
                    });
                }
                Ok(())
            }

            async fn memory_get(
                &self,
                session_id: &weft_core::SessionId,
                key: &str,
            ) -> Result<Option<serde_json::Value>, weft_core::session::SessionError> {
                let row: Option<(String,)> = $crate::retry::retrying(self.retry_label(), || async {
                    Ok(sqlx::query_as("SELECT value FROM memory WHERE session_id = $1 AND key = $2")
                        .bind(session_id.as_str())
                        .bind(key)
                        .fetch_optional(self.read_pool())
                        .await?)
                })
                .await
                .map_err($crate::error::Failure::into_session)?;
                Ok(row.map(|(v,)| $crate::codec::from_json(&v, "memory value")).transpose()?)
            }

            async fn memory_all(
                &self,
                session_id: &weft_core::SessionId,
            ) -> Result<Vec<(String, serde_json::Value)>, weft_core::session::SessionError> {
                let rows: Vec<(String, String)> = $crate::retry::retrying(self.retry_label(), || async {
                    Ok(sqlx::query_as("SELECT key, value FROM memory WHERE session_id = $1 ORDER BY key LIMIT $2")
                        .bind(session_id.as_str())
                        .bind(i64::try_from(weft_core::session::MAX_MEMORY_KEYS).unwrap_or(i64::MAX))
                        .fetch_all(self.read_pool())
                        .await?)
                })
                .await
                .map_err($crate::error::Failure::into_session)?;
                Ok(rows
                    .into_iter()
                    .map(|(k, v)| Ok((k, $crate::codec::from_json(&v, "memory value")?)))
                    .collect::<Result<_, weft_core::store::StoreError>>()?)
            }

            async fn memory_delete(
                &self,
                session_id: &weft_core::SessionId,
                key: &str,
            ) -> Result<bool, weft_core::session::SessionError> {
                let result = sqlx::query("DELETE FROM memory WHERE session_id = $1 AND key = $2")
                    .bind(session_id.as_str())
                    .bind(key)
                    .execute(self.write_pool())
                    .await
                    .map_err(|e| $crate::error::Failure::from(e).into_session())?;
                Ok(result.rows_affected() > 0)
            }
        }
    };
}

pub(crate) use impl_session_store;
