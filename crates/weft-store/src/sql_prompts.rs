//! The SQL implementation of `PromptStore` (`weft_core::session`), shared
//! by both backends through [`impl_prompt_store!`].
//!
//! An override's key is its name and scope columns (tenant, session,
//! labels as canonical JSON; '' stands for "every"). Listings are ordered
//! by that key and paged by it; resolving reads the rows that can match a
//! run's session and tenant and picks with `select_override`.

/// The most candidate rows one resolution reads.
pub(crate) const MAX_RESOLVE_CANDIDATES: i64 = 1000;

/// Implements `PromptStore` for `$store`.
macro_rules! impl_prompt_store {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl weft_core::session::PromptStore for $store {
            async fn set_prompt_override(
                &self,
                prompt: &weft_core::session::PromptOverride,
            ) -> Result<(), weft_core::session::SessionError> {
                let (tenant, session, labels) = $crate::rows::scope_columns(&prompt.scope)?;
                let now = $crate::codec::int(prompt.updated_at.as_millis(), "updated_at")?;
                // Safe to retry: the upsert writes the same row.
                $crate::retry::retrying(self.retry_label(), || async {
                    sqlx::query(
                        "INSERT INTO prompt_overrides \
                         (name, scope_tenant, scope_session, scope_labels, template, updated_at) \
                         VALUES ($1, $2, $3, $4, $5, $6) \
                         ON CONFLICT (name, scope_tenant, scope_session, scope_labels) \
                         DO UPDATE SET template = excluded.template, updated_at = excluded.updated_at",
                    )
                    .bind(prompt.name.as_str())
                    .bind(tenant.as_str())
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
                let (tenant, session, labels) = $crate::rows::scope_columns(scope)?;
                let result = sqlx::query(
                    "DELETE FROM prompt_overrides WHERE name = $1 AND scope_tenant = $2 \
                     AND scope_session = $3 AND scope_labels = $4",
                )
                .bind(name)
                .bind(tenant)
                .bind(session)
                .bind(labels)
                .execute(self.write_pool())
                .await
                .map_err(|e| $crate::error::Failure::from(e).into_session())?;
                Ok(result.rows_affected() > 0)
            }

            async fn list_prompt_overrides(
                &self,
                filter: &weft_core::session::PromptFilter,
            ) -> Result<Vec<weft_core::session::PromptOverride>, weft_core::session::SessionError> {
                let after = filter
                    .after
                    .as_ref()
                    .map(|c| {
                        $crate::rows::scope_columns(&c.scope).map(|cols| (c.name.clone(), cols))
                    })
                    .transpose()?;
                let (a_name, a_tenant, a_session, a_labels) = match &after {
                    Some((n, (t, s, l))) => (Some(n.as_str()), Some(t.as_str()), Some(s.as_str()), Some(l.as_str())),
                    None => (None, None, None, None),
                };
                let limit = i64::from(filter.page_size());
                let sql = format!(
                    "SELECT {} FROM prompt_overrides \
                     WHERE ($1 IS NULL OR name = $1) AND ($2 IS NULL OR scope_tenant = $2) \
                     AND ($3 IS NULL OR (name, scope_tenant, scope_session, scope_labels) > ($3, $4, $5, $6)) \
                     ORDER BY name, scope_tenant, scope_session, scope_labels LIMIT $7",
                    $crate::rows::PROMPT_COLUMNS
                );
                let rows: Vec<$crate::rows::PromptRow> = $crate::retry::retrying(self.retry_label(), || async {
                    Ok(sqlx::query_as(&sql)
                        .bind(filter.name.as_deref())
                        .bind(filter.tenant.as_deref())
                        .bind(a_name)
                        .bind(a_tenant)
                        .bind(a_session)
                        .bind(a_labels)
                        .bind(limit)
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
                let candidates = self.prompt_candidates(Some(name), session_id, labels).await?;
                Ok(weft_core::session::select_override(&candidates, session_id, labels).cloned())
            }

            async fn resolve_prompts(
                &self,
                session_id: &weft_core::SessionId,
                labels: &weft_core::tool::Labels,
            ) -> Result<Vec<weft_core::session::PromptOverride>, weft_core::session::SessionError> {
                let candidates = self.prompt_candidates(None, session_id, labels).await?;
                Ok(weft_core::session::select_overrides(&candidates, session_id, labels))
            }
        }

        impl $store {
            /// The overrides (of `name`, or of every name) whose session and
            /// tenant allow a run of `session_id` with `labels`.
            async fn prompt_candidates(
                &self,
                name: Option<&str>,
                session_id: &weft_core::SessionId,
                labels: &weft_core::tool::Labels,
            ) -> Result<Vec<weft_core::session::PromptOverride>, weft_core::session::SessionError> {
                let tenant = labels
                    .get(weft_core::session::TENANT_LABEL)
                    .map_or("", String::as_str);
                let sql = format!(
                    "SELECT {} FROM prompt_overrides \
                     WHERE ($1 IS NULL OR name = $1) AND scope_session IN ('', $2) \
                     AND scope_tenant IN ('', $3) \
                     ORDER BY name, scope_tenant, scope_session, scope_labels LIMIT $4",
                    $crate::rows::PROMPT_COLUMNS
                );
                let rows: Vec<$crate::rows::PromptRow> = $crate::retry::retrying(self.retry_label(), || async {
                    Ok(sqlx::query_as(&sql)
                        .bind(name)
                        .bind(session_id.as_str())
                        .bind(tenant)
                        .bind($crate::sql_prompts::MAX_RESOLVE_CANDIDATES)
                        .fetch_all(self.read_pool())
                        .await?)
                })
                .await
                .map_err($crate::error::Failure::into_session)?;
                Ok(rows.into_iter().map($crate::rows::prompt_override).collect::<Result<_, _>>()?)
            }
        }
    };
}

pub(crate) use impl_prompt_store;
