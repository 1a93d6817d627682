//! Reading runs whose rows may not decode, shared by both backends through
//! [`impl_run_rows!`]: the rows of a run listing (decoded by the caller,
//! row by row, so that one corrupt row spoils only itself), a run's head
//! read without decoding its labels or snapshot, and the quarantine of a
//! run whose state cannot be read (failed, lease freed, in one statement
//! that reads nothing of the state).

/// Implements `run_rows`, `run_head_inner` and `quarantine_run_inner` for
/// `$store` over database `$db`; `$label` is the expression for the value
/// of the label whose key is `{key}`.
macro_rules! impl_run_rows {
    ($store:ty, $db:ty, label = $label:expr) => {
        impl $store {
            /// The `runs` rows matching `filter`, newest first, undecoded.
            pub(crate) async fn run_rows(
                &self,
                filter: &weft_core::store::RunFilter,
            ) -> Result<Vec<$crate::rows::RunRow>, weft_core::store::StoreError> {
                let mut query = $crate::paging::ListQuery::new($crate::rows::RUN_COLUMNS, "runs");
                if filter.session_id.is_some() {
                    query = query.and_eq("session_id");
                }
                if filter.agent_id.is_some() {
                    query = query.and_eq("agent_id");
                }
                if !filter.statuses.is_empty() {
                    query = query.and_in("status", filter.statuses.len());
                }
                // The tenant's key is written into the SQL, so the query
                // uses the tenant index; other keys are parameters.
                for key in filter.labels.keys() {
                    query = if key == weft_core::prompt::TENANT_LABEL {
                        query.and_label_key($label, weft_core::prompt::TENANT_LABEL)
                    } else {
                        query.and_label($label)
                    };
                }
                if filter.before.is_some() {
                    query = query.and_before("run_id");
                }
                if filter.created_since.is_some() {
                    query = query.and_since();
                }
                let sql = query.newest_first("run_id");
                let limit = $crate::paging::limit(filter.limit);
                let before = match &filter.before {
                    Some(c) => Some((
                        $crate::codec::int(c.created_at.as_millis(), "cursor")?,
                        c.id.as_str(),
                    )),
                    None => None,
                };
                let since = match filter.created_since {
                    Some(t) => Some($crate::codec::int(t.as_millis(), "created_since")?),
                    None => None,
                };
                $crate::retry::retrying(self.retry_label(), || async {
                    let mut q = sqlx::query_as(&sql);
                    if let Some(s) = &filter.session_id {
                        q = q.bind(s.as_str());
                    }
                    if let Some(a) = &filter.agent_id {
                        q = q.bind(a.as_str());
                    }
                    for status in &filter.statuses {
                        q = q.bind(status.as_str());
                    }
                    for (key, value) in &filter.labels {
                        if key != weft_core::prompt::TENANT_LABEL {
                            q = q.bind(key.as_str());
                        }
                        q = q.bind(value.as_str());
                    }
                    if let Some((at, id)) = before {
                        q = q.bind(at).bind(id);
                    }
                    if let Some(since) = since {
                        q = q.bind(since);
                    }
                    Ok(q.bind(limit).fetch_all(self.read_pool()).await?)
                })
                .await
                .map_err($crate::error::Failure::into_store)
            }

            /// Run `run_id`'s label `key`, status and quarantine reason,
            /// from its raw columns.
            pub(crate) async fn run_head_inner(
                &self,
                run_id: &weft_core::RunId,
                key: &str,
            ) -> Result<Option<weft_core::store::RunHead>, weft_core::store::StoreError> {
                let row: Option<(String, String, Option<String>)> =
                    $crate::retry::retrying(self.retry_label(), || async {
                        Ok(sqlx::query_as(
                            "SELECT labels, status, quarantined FROM runs WHERE run_id = $1",
                        )
                        .bind(run_id.as_str())
                        .fetch_optional(self.read_pool())
                        .await?)
                    })
                    .await
                    .map_err($crate::error::Failure::into_store)?;
                Ok(row.map(|(labels, status, quarantined)| {
                    $crate::rows::run_head(&labels, &status, key, quarantined)
                }))
            }

            /// Fails unfinished run `run_id` with `reason`, freeing its
            /// lease, if the lease is at epoch `fence`.
            pub(crate) async fn quarantine_run_inner(
                &self,
                run_id: &weft_core::RunId,
                reason: &str,
                fence: u64,
                now: weft_core::Timestamp,
            ) -> Result<bool, weft_core::store::StoreError> {
                let fence = $crate::codec::int(fence, "lease epoch")?;
                let now = $crate::codec::int(now.as_millis(), "now")?;
                let done = $crate::retry::retrying(self.retry_label(), || async {
                    Ok(sqlx::query(
                        "UPDATE runs SET status = 'failed', quarantined = $2, updated_at = $4, \
                         lease_owner = NULL, lease_expires = 0 \
                         WHERE run_id = $1 AND lease_epoch = $3 \
                         AND status NOT IN ('completed', 'failed', 'cancelled')",
                    )
                    .bind(run_id.as_str())
                    .bind(reason)
                    .bind(fence)
                    .bind(now)
                    .execute(self.write_pool())
                    .await?
                    .rows_affected())
                })
                .await
                .map_err($crate::error::Failure::into_store)?;
                Ok(done > 0)
            }
        }
    };
}

pub(crate) use impl_run_rows;
