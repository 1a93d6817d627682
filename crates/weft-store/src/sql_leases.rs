//! The SQL side of run leases (see `weft_core::lease`), shared by both
//! backends through [`impl_leases!`]: a lease is three columns of the run's
//! row (`lease_owner`, `lease_epoch`, `lease_expires`), so the commit that
//! checks a driver's epoch reads the row it updates anyway.
//!
//! A free lease has no owner and expires at 0, so "nobody holds it at `now`"
//! is `lease_expires <= now`, which the partial index `runs_orphans` (over
//! running runs) answers. PostgreSQL claimers skip rows another claimer has
//! locked (`FOR UPDATE SKIP LOCKED`); SQLite's write lock serializes them.

/// Implements the lease operations for `$store` over database `$db`; `$lock`
/// locks a selected row for update and `$skip` does so skipping rows locked
/// by others (both `""` on SQLite); `$held` selects `(run_id, epoch)` rows
/// from the JSON array of `[run_id, epoch]` pairs bound as `$2`.
macro_rules! impl_leases {
    ($store:ty, $db:ty, lock = $lock:literal, skip = $skip:literal, held = $held:literal) => {
        impl $store {
            /// Takes the lease of `run_id` when free, expired or the owner's.
            pub(crate) async fn acquire_lease_inner(
                &self,
                run_id: &weft_core::RunId,
                lease: weft_core::lease::LeaseRequest<'_>,
                now: weft_core::Timestamp,
            ) -> Result<weft_core::lease::LeaseClaim, $crate::error::Failure> {
                use weft_core::lease::LeaseClaim;
                let expires = $crate::codec::int(lease.expires_at.as_millis(), "lease expiry")?;
                let now = $crate::codec::int(now.as_millis(), "now")?;
                let mut tx = self.write_tx().await?;
                let row: Option<(Option<String>, i64)> = sqlx::query_as(concat!(
                    "SELECT lease_owner, lease_expires FROM runs WHERE run_id = $1",
                    $lock
                ))
                .bind(run_id.as_str())
                .fetch_optional(&mut *tx)
                .await?;
                let Some((owner, held_until)) = row else {
                    return Err(weft_core::store::StoreError::RunNotFound { run_id: run_id.clone() }.into());
                };
                if let Some(owner) = owner
                    && owner != lease.owner
                    && held_until > now
                {
                    return Ok(LeaseClaim::Held {
                        owner,
                        expires_at: weft_core::Timestamp::from_millis($crate::codec::uint(held_until, "lease expiry")?),
                    });
                }
                let (epoch,): (i64,) = sqlx::query_as(
                    "UPDATE runs SET lease_owner = $2, lease_epoch = lease_epoch + 1, lease_expires = $3 \
                     WHERE run_id = $1 RETURNING lease_epoch",
                )
                .bind(run_id.as_str())
                .bind(lease.owner)
                .bind(expires)
                .fetch_one(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(LeaseClaim::Granted { epoch: $crate::codec::uint(epoch, "lease epoch")? })
            }

            /// Extends the leases `owner` still holds, in one statement;
            /// returns the lost ones.
            pub(crate) async fn renew_leases_inner(
                &self,
                owner: &str,
                leases: &[weft_core::lease::HeldLease],
                expires_at: weft_core::Timestamp,
            ) -> Result<Vec<weft_core::RunId>, $crate::error::Failure> {
                let pairs: Vec<(&str, u64)> = leases.iter().map(|l| (l.run_id.as_str(), l.epoch)).collect();
                let renewed: Vec<(String,)> = sqlx::query_as(concat!(
                    "UPDATE runs SET lease_expires = $1 FROM (",
                    $held,
                    ") AS held WHERE runs.run_id = held.run_id AND runs.lease_epoch = held.epoch \
                     AND runs.lease_owner = $3 RETURNING runs.run_id"
                ))
                .bind($crate::codec::int(expires_at.as_millis(), "lease expiry")?)
                .bind($crate::codec::to_json(&pairs, "held leases")?)
                .bind(owner)
                .fetch_all(self.write_pool())
                .await?;
                let renewed: std::collections::HashSet<String> = renewed.into_iter().map(|(id,)| id).collect();
                Ok(leases
                    .iter()
                    .filter(|l| !renewed.contains(l.run_id.as_str()))
                    .map(|l| l.run_id.clone())
                    .collect())
            }

            /// Records a control request on a running run.
            pub(crate) async fn request_control_inner(
                &self,
                run_id: &weft_core::RunId,
                request: &weft_core::lease::ControlRequest,
            ) -> Result<bool, $crate::error::Failure> {
                let json = $crate::codec::to_json(request, "control request")?;
                let mut tx = self.write_tx().await?;
                let set = sqlx::query(
                    "UPDATE runs SET control_request = $2 WHERE run_id = $1 AND status = 'running' \
                     AND (control_request IS NULL OR $3)",
                )
                .bind(run_id.as_str())
                .bind(json)
                .bind(request.is_cancel())
                .execute(&mut *tx)
                .await?;
                let recorded = if set.rows_affected() == 1 {
                    true
                } else {
                    let status: Option<(String,)> =
                        sqlx::query_as("SELECT status FROM runs WHERE run_id = $1")
                            .bind(run_id.as_str())
                            .fetch_optional(&mut *tx)
                            .await?;
                    match status {
                        None => {
                            return Err(weft_core::store::StoreError::RunNotFound { run_id: run_id.clone() }.into());
                        }
                        // A cancel is pending already.
                        Some((status,)) => status == "running",
                    }
                };
                tx.commit().await?;
                Ok(recorded)
            }

            /// The control requests pending on runs `owner` holds.
            pub(crate) async fn pending_controls_inner(
                &self,
                owner: &str,
            ) -> Result<Vec<(weft_core::lease::HeldLease, weft_core::lease::ControlRequest)>, $crate::error::Failure> {
                let rows: Vec<(String, i64, String)> = sqlx::query_as(
                    "SELECT run_id, lease_epoch, control_request FROM runs \
                     WHERE lease_owner = $1 AND control_request IS NOT NULL",
                )
                .bind(owner)
                .fetch_all(self.read_pool())
                .await?;
                rows.into_iter()
                    .map(|(run_id, epoch, json)| {
                        let request = $crate::codec::from_json(&json, "control request")?;
                        let held = weft_core::lease::HeldLease {
                            run_id: weft_core::RunId::new(run_id),
                            epoch: $crate::codec::uint(epoch, "lease epoch")?,
                        };
                        Ok((held, request))
                    })
                    .collect()
            }

            /// Records an answer for the driver of a running run.
            pub(crate) async fn request_answer_inner(
                &self,
                run_id: &weft_core::RunId,
                item: &weft_core::AwaitItemId,
                answer: &weft_core::awaiting::AwaitAnswer,
            ) -> Result<bool, $crate::error::Failure> {
                let json = $crate::codec::to_json(answer, "answer")?;
                let mut tx = self.write_tx().await?;
                let status: Option<(String,)> =
                    sqlx::query_as("SELECT status FROM runs WHERE run_id = $1")
                        .bind(run_id.as_str())
                        .fetch_optional(&mut *tx)
                        .await?;
                match status {
                    None => {
                        return Err(weft_core::store::StoreError::RunNotFound { run_id: run_id.clone() }.into());
                    }
                    Some((status,)) if status != "running" => return Ok(false),
                    Some(_) => {}
                }
                // The order of arrival: one more than the run's last answer.
                let set = sqlx::query(
                    "INSERT INTO run_answers (run_id, item_id, answer, seq) \
                     SELECT $1, $2, $3, COALESCE(MAX(seq), 0) + 1 FROM run_answers WHERE run_id = $1 \
                     ON CONFLICT (run_id, item_id) DO NOTHING",
                )
                .bind(run_id.as_str())
                .bind(item.as_str())
                .bind(json)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(set.rows_affected() == 1)
            }

            /// The answers waiting on runs `owner` holds, oldest first.
            pub(crate) async fn pending_answers_inner(
                &self,
                owner: &str,
                limit: u32,
            ) -> Result<Vec<weft_core::lease::RemoteAnswer>, $crate::error::Failure> {
                let rows: Vec<(String, i64, String, String)> = sqlx::query_as(
                    "SELECT a.run_id, r.lease_epoch, a.item_id, a.answer \
                     FROM run_answers a JOIN runs r ON r.run_id = a.run_id \
                     WHERE r.lease_owner = $1 ORDER BY a.run_id, a.seq LIMIT $2",
                )
                .bind(owner)
                .bind(i64::from(limit))
                .fetch_all(self.read_pool())
                .await?;
                rows.into_iter()
                    .map(|(run_id, epoch, item, json)| {
                        Ok(weft_core::lease::RemoteAnswer {
                            held: weft_core::lease::HeldLease {
                                run_id: weft_core::RunId::new(run_id),
                                epoch: $crate::codec::uint(epoch, "lease epoch")?,
                            },
                            item: weft_core::AwaitItemId::new(item),
                            answer: $crate::codec::from_json(&json, "answer")?,
                        })
                    })
                    .collect()
            }

            /// Deletes an answer its holder handed on.
            pub(crate) async fn delete_answer_inner(
                &self,
                run_id: &weft_core::RunId,
                item: &weft_core::AwaitItemId,
            ) -> Result<(), $crate::error::Failure> {
                sqlx::query("DELETE FROM run_answers WHERE run_id = $1 AND item_id = $2")
                    .bind(run_id.as_str())
                    .bind(item.as_str())
                    .execute(self.write_pool())
                    .await?;
                Ok(())
            }

            /// Frees the lease of `run_id` if it is still at `epoch`.
            pub(crate) async fn release_lease_inner(
                &self,
                run_id: &weft_core::RunId,
                epoch: u64,
            ) -> Result<(), $crate::error::Failure> {
                sqlx::query(
                    "UPDATE runs SET lease_owner = NULL, lease_expires = 0 \
                     WHERE run_id = $1 AND lease_epoch = $2",
                )
                .bind(run_id.as_str())
                .bind($crate::codec::int(epoch, "lease epoch")?)
                .execute(self.write_pool())
                .await?;
                Ok(())
            }

            /// Takes the leases of up to `limit` running runs nobody holds.
            pub(crate) async fn claim_orphans_inner(
                &self,
                lease: weft_core::lease::LeaseRequest<'_>,
                now: weft_core::Timestamp,
                limit: u32,
            ) -> Result<Vec<weft_core::lease::HeldLease>, $crate::error::Failure> {
                // The pick is materialized first: a subquery inside the
                // UPDATE may be run again per row, taking more than `limit`.
                let rows: Vec<(String, i64)> = sqlx::query_as(concat!(
                    "WITH picked AS MATERIALIZED (SELECT run_id FROM runs \
                     WHERE status = 'running' AND lease_expires <= $3 ORDER BY lease_expires LIMIT $4",
                    $skip,
                    ") UPDATE runs SET lease_owner = $1, lease_epoch = lease_epoch + 1, lease_expires = $2 \
                     WHERE status = 'running' AND lease_expires <= $3 \
                     AND run_id IN (SELECT run_id FROM picked) RETURNING run_id, lease_epoch"
                ))
                .bind(lease.owner)
                .bind($crate::codec::int(lease.expires_at.as_millis(), "lease expiry")?)
                .bind($crate::codec::int(now.as_millis(), "now")?)
                .bind(i64::from(limit))
                .fetch_all(self.write_pool())
                .await?;
                rows.into_iter()
                    .map(|(run_id, epoch)| {
                        Ok(weft_core::lease::HeldLease {
                            run_id: weft_core::RunId::new(run_id),
                            epoch: $crate::codec::uint(epoch, "lease epoch")?,
                        })
                    })
                    .collect()
            }
        }
    };
}

pub(crate) use impl_leases;
