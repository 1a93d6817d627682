//! Loading a run in SQL, shared by both backends through
//! [`impl_load_run!`]: its row and its snapshot's parts, read in one
//! read-only transaction so that both come from the same commit, then put
//! back together ([`crate::parts`]).

/// Implements `load_run_inner` for `$store` over database `$db`.
macro_rules! impl_load_run {
    ($store:ty, $db:ty) => {
        impl $store {
            /// The stored run `run_id` with its machine, or `None`.
            async fn load_run_inner(
                &self,
                run_id: &weft_core::RunId,
            ) -> Result<Option<weft_core::store::StoredRun>, weft_core::store::StoreError> {
                let sql = format!(
                    "SELECT {}, snapshot, last_seq, lease_owner FROM runs WHERE run_id = $1",
                    $crate::rows::RUN_COLUMNS
                );
                type Row = (
                    String,
                    String,
                    String,
                    String,
                    String,
                    i64,
                    i64,
                    String,
                    i64,
                    Option<String>,
                );
                let read: Option<(Row, Vec<$crate::parts::PartRow>)> =
                    $crate::retry::retrying(self.retry_label(), || async {
                        let mut tx = self.read_tx().await?;
                        let row: Option<Row> = sqlx::query_as(&sql)
                            .bind(run_id.as_str())
                            .fetch_optional(&mut *tx)
                            .await?;
                        let Some(row) = row else {
                            return Ok(None);
                        };
                        let parts: Vec<$crate::parts::PartRow> = sqlx::query_as(
                            "SELECT kind, idx, body FROM run_snapshot_parts \
                             WHERE run_id = $1 ORDER BY kind, idx",
                        )
                        .bind(run_id.as_str())
                        .fetch_all(&mut *tx)
                        .await?;
                        tx.commit().await?;
                        Ok(Some((row, parts)))
                    })
                    .await
                    .map_err($crate::error::Failure::into_store)?;
                let Some(((a, b, c, d, e, f, g, snapshot, last_seq, lease_owner), parts)) = read
                else {
                    return Ok(None);
                };
                let snapshot = match $crate::parts::stored_snapshot(run_id, &snapshot)? {
                    $crate::parts::Stored::Head(head) => {
                        $crate::parts::rebuild(run_id, head, &parts)?
                    }
                    $crate::parts::Stored::Whole(machine) => machine,
                };
                Ok(Some(weft_core::store::StoredRun {
                    record: $crate::rows::run_record((a, b, c, d, e, f, g))?,
                    snapshot,
                    last_seq: $crate::codec::uint(last_seq, "last_seq")?,
                    lease_owner,
                }))
            }
        }
    };
}

pub(crate) use impl_load_run;
