//! Reading sessions whose rows may not decode, shared by both backends
//! through [`impl_session_rows!`]: the rows of a session listing (decoded
//! by the caller, row by row, so that one corrupt row spoils only itself),
//! and a session's head read without decoding its row.

/// Implements `session_rows` and `session_head_inner` for `$store`;
/// `$label` is the expression for the value of the label whose key is
/// `{key}`.
macro_rules! impl_session_rows {
    ($store:ty, label = $label:expr) => {
        impl $store {
            /// The `sessions` rows matching `filter`, newest first, undecoded.
            pub(crate) async fn session_rows(
                &self,
                filter: &weft_core::session::SessionFilter,
            ) -> Result<Vec<$crate::rows::SessionRow>, weft_core::session::SessionError> {
                let mut query =
                    $crate::paging::ListQuery::new($crate::rows::SESSION_COLUMNS, "sessions");
                if !filter.include_ended {
                    query = query.and("ended_at IS NULL");
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
                    query = query.and_before("session_id");
                }
                let sql = query.newest_first("session_id");
                let limit = $crate::paging::limit(filter.limit);
                let before = match &filter.before {
                    Some(c) => Some((
                        $crate::codec::int(c.created_at.as_millis(), "cursor")?,
                        c.id.as_str(),
                    )),
                    None => None,
                };
                $crate::retry::retrying(self.retry_label(), || async {
                    let mut q = sqlx::query_as(&sql);
                    for (key, value) in &filter.labels {
                        if key != weft_core::prompt::TENANT_LABEL {
                            q = q.bind(key.as_str());
                        }
                        q = q.bind(value.as_str());
                    }
                    if let Some((at, id)) = before {
                        q = q.bind(at).bind(id);
                    }
                    Ok(q.bind(limit).fetch_all(self.read_pool()).await?)
                })
                .await
                .map_err($crate::error::Failure::into_session)
            }

            /// Session `session_id`'s label `key`, from its raw labels.
            pub(crate) async fn session_head_inner(
                &self,
                session_id: &weft_core::SessionId,
                key: &str,
            ) -> Result<Option<weft_core::session::SessionHead>, weft_core::session::SessionError>
            {
                let row: Option<(String,)> =
                    $crate::retry::retrying(self.retry_label(), || async {
                        Ok(
                            sqlx::query_as("SELECT labels FROM sessions WHERE session_id = $1")
                                .bind(session_id.as_str())
                                .fetch_optional(self.read_pool())
                                .await?,
                        )
                    })
                    .await
                    .map_err($crate::error::Failure::into_session)?;
                Ok(row.map(|(labels,)| $crate::rows::session_head(&labels, key)))
            }
        }
    };
}

pub(crate) use impl_session_rows;
