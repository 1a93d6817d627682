//! The SQL implementation of the session traits (`SessionStore`,
//! `SessionMemoryStore`, `PromptStore` from `weft_core::session`), shared by both
//! backends through [`impl_session_store!`]; see [`crate::sql_runs`] for what
//! a backend type provides.
//!
//! A session row carries `transcript_seq`, the last transcript sequence
//! number, for the same reason a run row carries `last_seq`.

/// Implements the session traits for `$store`; `$lock` is the suffix that
/// locks a selected row for update (`""` on SQLite).
macro_rules! impl_session_store {
    ($store:ty, lock = $lock:literal, label = $label:literal) => {
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
        }

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
                Ok(row.map($crate::rows::session_record).transpose()?)
            }

            async fn list_sessions(
                &self,
                filter: &weft_core::session::SessionFilter,
            ) -> Result<Vec<weft_core::session::SessionRecord>, weft_core::session::SessionError> {
                let mut query = $crate::paging::ListQuery::new($crate::rows::SESSION_COLUMNS, "sessions");
                if !filter.include_ended {
                    query = query.and("ended_at IS NULL");
                }
                for _ in &filter.labels {
                    query = query.and_label($label);
                }
                if filter.before.is_some() {
                    query = query.and_before("session_id");
                }
                let sql = query.newest_first("session_id");
                let limit = $crate::paging::limit(filter.limit);
                let before = match &filter.before {
                    Some(c) => Some(($crate::codec::int(c.created_at.as_millis(), "cursor")?, c.id.as_str())),
                    None => None,
                };
                let rows: Vec<$crate::rows::SessionRow> = $crate::retry::retrying(self.retry_label(), || async {
                    let mut q = sqlx::query_as(&sql);
                    for (key, value) in &filter.labels {
                        q = q.bind(key.as_str()).bind(value.as_str());
                    }
                    if let Some((at, id)) = before {
                        q = q.bind(at).bind(id);
                    }
                    Ok(q.bind(limit).fetch_all(self.read_pool()).await?)
                })
                .await
                .map_err($crate::error::Failure::into_session)?;
                Ok(rows.into_iter().map($crate::rows::session_record).collect::<Result<_, _>>()?)
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
                    Some(row) => Ok($crate::rows::session_record(row)?),
                    None => Err(weft_core::session::SessionError::NotFound {
                        session_id: session_id.clone(),
                    }),
                }
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
                let value = $crate::codec::to_json(value, "memory value")?;
                let now = $crate::codec::int(now.as_millis(), "updated_at")?;
                // Safe to retry: the upsert writes the same value.
                let result = $crate::retry::retrying(self.retry_label(), || async {
                    Ok(sqlx::query(
                        "INSERT INTO memory (session_id, key, value, updated_at) \
                         SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM sessions WHERE session_id = $1) \
                         ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value, \
                         updated_at = excluded.updated_at",
                    )
                    .bind(session_id.as_str())
                    .bind(key)
                    .bind(value.as_str())
                    .bind(now)
                    .execute(self.write_pool())
                    .await?)
                })
                .await
                .map_err($crate::error::Failure::into_session)?;
                if result.rows_affected() == 0 {
                    return Err(weft_core::session::SessionError::NotFound {
                        session_id: session_id.clone(),
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
                    Ok(sqlx::query_as("SELECT key, value FROM memory WHERE session_id = $1 ORDER BY key")
                        .bind(session_id.as_str())
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

        #[async_trait::async_trait]
        impl weft_core::session::PromptStore for $store {
            async fn set_prompt_override(
                &self,
                prompt: &weft_core::session::PromptOverride,
            ) -> Result<(), weft_core::session::SessionError> {
                let (session, labels) = $crate::rows::scope_columns(&prompt.scope)?;
                let now = $crate::codec::int(prompt.updated_at.as_millis(), "updated_at")?;
                // Safe to retry: the upsert writes the same row.
                $crate::retry::retrying(self.retry_label(), || async {
                    sqlx::query(
                        "INSERT INTO prompt_overrides (name, scope_session, scope_labels, template, updated_at) \
                         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name, scope_session, scope_labels) \
                         DO UPDATE SET template = excluded.template, updated_at = excluded.updated_at",
                    )
                    .bind(prompt.name.as_str())
                    .bind(session.as_str())
                    .bind(labels.as_str())
                    .bind(prompt.template.as_str())
                    .bind(now)
                    .execute(self.write_pool())
                    .await?;
                    Ok(())
                })
                .await
                .map_err($crate::error::Failure::into_session)
            }

            async fn delete_prompt_override(
                &self,
                name: &str,
                scope: &weft_core::session::PromptScope,
            ) -> Result<bool, weft_core::session::SessionError> {
                let (session, labels) = $crate::rows::scope_columns(scope)?;
                let result = sqlx::query(
                    "DELETE FROM prompt_overrides WHERE name = $1 AND scope_session = $2 AND scope_labels = $3",
                )
                .bind(name)
                .bind(session)
                .bind(labels)
                .execute(self.write_pool())
                .await
                .map_err(|e| $crate::error::Failure::from(e).into_session())?;
                Ok(result.rows_affected() > 0)
            }

            async fn list_prompt_overrides(
                &self,
                name: Option<&str>,
            ) -> Result<Vec<weft_core::session::PromptOverride>, weft_core::session::SessionError> {
                let rows: Vec<$crate::rows::PromptRow> = $crate::retry::retrying(self.retry_label(), || async {
                    Ok(sqlx::query_as(
                        "SELECT name, scope_session, scope_labels, template, updated_at FROM prompt_overrides \
                         WHERE $1 IS NULL OR name = $1 ORDER BY name, scope_session, scope_labels",
                    )
                    .bind(name)
                    .fetch_all(self.read_pool())
                    .await?)
                })
                .await
                .map_err($crate::error::Failure::into_session)?;
                Ok(rows.into_iter().map($crate::rows::prompt_override).collect::<Result<_, _>>()?)
            }

            async fn resolve_prompt(
                &self,
                name: &str,
                session_id: &weft_core::SessionId,
                labels: &weft_core::tool::Labels,
            ) -> Result<Option<weft_core::session::PromptOverride>, weft_core::session::SessionError> {
                let rows: Vec<$crate::rows::PromptRow> = $crate::retry::retrying(self.retry_label(), || async {
                    Ok(sqlx::query_as(
                        "SELECT name, scope_session, scope_labels, template, updated_at FROM prompt_overrides \
                         WHERE name = $1 AND (scope_session = '' OR scope_session = $2)",
                    )
                    .bind(name)
                    .bind(session_id.as_str())
                    .fetch_all(self.read_pool())
                    .await?)
                })
                .await
                .map_err($crate::error::Failure::into_session)?;
                let candidates = rows
                    .into_iter()
                    .map($crate::rows::prompt_override)
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(weft_core::session::select_override(&candidates, session_id, labels).cloned())
            }
        }
    };
}

pub(crate) use impl_session_store;
