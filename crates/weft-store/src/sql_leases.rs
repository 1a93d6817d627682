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
/// by others (both `""` on SQLite).
macro_rules! impl_leases {
    ($store:ty, $db:ty, lock = $lock:literal, skip = $skip:literal) => {
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

            /// Extends the leases `owner` still holds; returns the lost ones.
            pub(crate) async fn renew_leases_inner(
                &self,
                owner: &str,
                leases: &[weft_core::lease::HeldLease],
                expires_at: weft_core::Timestamp,
            ) -> Result<Vec<weft_core::RunId>, $crate::error::Failure> {
                let expires = $crate::codec::int(expires_at.as_millis(), "lease expiry")?;
                let mut lost = Vec::new();
                let mut tx = self.write_tx().await?;
                for held in leases {
                    let renewed = sqlx::query(
                        "UPDATE runs SET lease_expires = $3 \
                         WHERE run_id = $1 AND lease_epoch = $2 AND lease_owner = $4",
                    )
                    .bind(held.run_id.as_str())
                    .bind($crate::codec::int(held.epoch, "lease epoch")?)
                    .bind(expires)
                    .bind(owner)
                    .execute(&mut *tx)
                    .await?;
                    if renewed.rows_affected() == 0 {
                        lost.push(held.run_id.clone());
                    }
                }
                tx.commit().await?;
                Ok(lost)
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
