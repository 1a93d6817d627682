//! Reading a log (a run's events, a session's transcript) page by page,
//! shared by both backends through [`impl_log_page!`].

/// Implements `log_page` for `$store` over database `$db`.
macro_rules! impl_log_page {
    ($store:ty, $db:ty) => {
        impl $store {
            /// One page of `log` for `owner` after `after`, or `None` when
            /// `owner` does not exist.
            pub(crate) async fn log_page<R>(
                &self,
                log: $crate::paging::Log,
                owner: &str,
                after: u64,
                limit: Option<u32>,
            ) -> Result<Option<Vec<R>>, $crate::error::Failure>
            where
                R: for<'r> sqlx::FromRow<'r, <$db as sqlx::Database>::Row> + Send + Unpin,
            {
                let (after, limit) = ($crate::paging::after(after), $crate::paging::limit(limit));
                $crate::retry::retrying(self.retry_label(), || async {
                    let rows: Vec<R> = sqlx::query_as(log.page)
                        .bind(owner)
                        .bind(after)
                        .bind(limit)
                        .fetch_all(self.read_pool())
                        .await?;
                    let exists = !rows.is_empty()
                        || sqlx::query(log.owner)
                            .bind(owner)
                            .fetch_optional(self.read_pool())
                            .await?
                            .is_some();
                    Ok(exists.then_some(rows))
                })
                .await
            }
        }
    };
}

pub(crate) use impl_log_page;
