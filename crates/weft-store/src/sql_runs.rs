//! The SQL implementation of [`RunStore`](weft_core::store::RunStore), shared
//! by both backends through the [`impl_run_store!`] macro: the statements are
//! the same text for SQLite and PostgreSQL (both read `$N` parameters), and
//! only the row-locking suffix differs.
//!
//! A backend type provides `write_tx()` (a transaction that may write; SQLite
//! takes the write lock up front), `read_tx()` (a read-only transaction
//! whose reads see one state of the database), `write_pool()`, `read_pool()`,
//! `retry_label()`, `part_cache()` (see [`crate::parts`]), `commit_job()`,
//! which applies a [`CommitJob`](crate::commit::CommitJob) with the macro's
//! `commit_in` in a transaction of its choosing, and `create_job()`, which
//! does the same for a [`CreateJob`](crate::commit::CreateJob) with
//! `create_in` ([`crate::sql_create`]).
//!
//! Each run row carries `last_seq`, the sequence number of its last stored
//! event, so a commit checks for gaps and duplicates with one indexed read of
//! the (locked) run row instead of scanning the log.

/// Implements `RunStore` for `$store` over database `$db`; `$lock` and
/// `$share` are the suffixes that lock a selected row for update or for share
/// (both `""` on SQLite, whose write transactions are exclusive); `$label`
/// is the expression for the value of the label whose key is `{key}`. A new run
/// holds its session row for share, so ending the session waits for it.
macro_rules! impl_run_store {
    ($store:ty, $db:ty, lock = $lock:literal, share = $share:literal, label = $label:expr) => {
        impl $store {
            /// Creates a run (and its session, when new) unless the session has ended.
            pub(crate) async fn start_run_inner(
                &self,
                record: &weft_core::store::RunRecord,
                events: &[weft_core::event::RunEvent],
                snapshot: &weft_core::run::RunMachine,
                lease: Option<weft_core::lease::LeaseRequest<'_>>,
            ) -> Result<(), $crate::error::Failure> {
                let lease = match lease {
                    Some(l) => Some((
                        l.owner,
                        $crate::codec::int(l.expires_at.as_millis(), "lease expiry")?,
                    )),
                    None => None,
                };
                let job = std::sync::Arc::new($crate::commit::encode_create(
                    record, events, snapshot, lease,
                )?);
                let mut attempts = 0u32;
                $crate::retry::retrying(self.retry_label(), || {
                    attempts += 1;
                    let retry = attempts > 1;
                    let job = job.clone();
                    async move {
                        match self.create_job(job).await {
                            // The attempt whose connection died may have
                            // landed: then the run is the caller's own.
                            Err(e) if retry && $crate::commit::is_run_exists(&e) => {
                                if self.is_same_run(record).await? {
                                    Ok(())
                                } else {
                                    Err(e)
                                }
                            }
                            other => other,
                        }
                    }
                })
                .await?;
                self.part_cache()
                    .stored(&record.run_id, job.snapshot.counts, record.status);
                Ok(())
            }

            /// Whether the stored run `record.run_id` is the one `record` describes.
            async fn is_same_run(
                &self,
                record: &weft_core::store::RunRecord,
            ) -> Result<bool, $crate::error::Failure> {
                let row: Option<(String, String, i64)> = sqlx::query_as(
                    "SELECT agent_id, session_id, created_at FROM runs WHERE run_id = $1",
                )
                .bind(record.run_id.as_str())
                .fetch_optional(self.write_pool())
                .await?;
                let created = $crate::codec::int(record.created_at.as_millis(), "created_at")?;
                Ok(row.is_some_and(|(agent, session, at)| {
                    agent == record.agent_id.as_str()
                        && session == record.session_id.as_str()
                        && at == created
                }))
            }
        }

        $crate::sql_commit::impl_commit!($store, $db, lock = $lock);
        $crate::sql_create::impl_create!($store, $db, share = $share);
        $crate::sql_snapshots::impl_load_run!($store, $db);
        $crate::sql_pages::impl_log_page!($store, $db);
        $crate::sql_list::impl_run_rows!($store, $db, label = $label);

        #[async_trait::async_trait]
        impl weft_core::store::RunStore for $store {
            async fn create_run(
                &self,
                record: &weft_core::store::RunRecord,
                events: &[weft_core::event::RunEvent],
                snapshot: &weft_core::run::RunMachine,
            ) -> Result<(), weft_core::store::StoreError> {
                self.start_run_inner(record, events, snapshot, None)
                    .await
                    .map_err($crate::error::Failure::into_store)
            }

            async fn create_leased_run(
                &self,
                record: &weft_core::store::RunRecord,
                events: &[weft_core::event::RunEvent],
                snapshot: &weft_core::run::RunMachine,
                lease: weft_core::lease::LeaseRequest<'_>,
            ) -> Result<u64, weft_core::store::StoreError> {
                self.start_run_inner(record, events, snapshot, Some(lease))
                    .await
                    .map_err($crate::error::Failure::into_store)?;
                Ok(1)
            }

            async fn acquire_lease(
                &self,
                run_id: &weft_core::RunId,
                lease: weft_core::lease::LeaseRequest<'_>,
                now: weft_core::Timestamp,
            ) -> Result<weft_core::lease::LeaseClaim, weft_core::store::StoreError> {
                $crate::retry::retrying(self.retry_label(), || {
                    self.acquire_lease_inner(run_id, lease, now)
                })
                .await
                .map_err($crate::error::Failure::into_store)
            }

            async fn renew_leases(
                &self,
                owner: &str,
                leases: &[weft_core::lease::HeldLease],
                expires_at: weft_core::Timestamp,
            ) -> Result<Vec<weft_core::RunId>, weft_core::store::StoreError> {
                $crate::retry::retrying(self.retry_label(), || {
                    self.renew_leases_inner(owner, leases, expires_at)
                })
                .await
                .map_err($crate::error::Failure::into_store)
            }

            async fn release_lease(
                &self,
                run_id: &weft_core::RunId,
                epoch: u64,
            ) -> Result<(), weft_core::store::StoreError> {
                $crate::retry::retrying(self.retry_label(), || {
                    self.release_lease_inner(run_id, epoch)
                })
                .await
                .map_err($crate::error::Failure::into_store)
            }

            async fn request_control(
                &self,
                run_id: &weft_core::RunId,
                request: &weft_core::lease::ControlRequest,
            ) -> Result<bool, weft_core::store::StoreError> {
                $crate::retry::retrying(self.retry_label(), || {
                    self.request_control_inner(run_id, request)
                })
                .await
                .map_err($crate::error::Failure::into_store)
            }

            async fn request_answer(
                &self,
                run_id: &weft_core::RunId,
                item: &weft_core::AwaitItemId,
                answer: &weft_core::awaiting::AwaitAnswer,
            ) -> Result<bool, weft_core::store::StoreError> {
                $crate::retry::retrying(self.retry_label(), || {
                    self.request_answer_inner(run_id, item, answer)
                })
                .await
                .map_err($crate::error::Failure::into_store)
            }

            async fn pending_answers(
                &self,
                owner: &str,
                limit: u32,
            ) -> Result<Vec<weft_core::lease::RemoteAnswer>, weft_core::store::StoreError> {
                $crate::retry::retrying(self.retry_label(), || {
                    self.pending_answers_inner(owner, limit)
                })
                .await
                .map_err($crate::error::Failure::into_store)
            }

            async fn delete_answer(
                &self,
                run_id: &weft_core::RunId,
                item: &weft_core::AwaitItemId,
            ) -> Result<(), weft_core::store::StoreError> {
                $crate::retry::retrying(self.retry_label(), || {
                    self.delete_answer_inner(run_id, item)
                })
                .await
                .map_err($crate::error::Failure::into_store)
            }

            async fn pending_controls(
                &self,
                owner: &str,
            ) -> Result<
                Vec<(
                    weft_core::lease::HeldLease,
                    weft_core::lease::ControlRequest,
                )>,
                weft_core::store::StoreError,
            > {
                $crate::retry::retrying(self.retry_label(), || self.pending_controls_inner(owner))
                    .await
                    .map_err($crate::error::Failure::into_store)
            }

            async fn claim_orphans(
                &self,
                lease: weft_core::lease::LeaseRequest<'_>,
                now: weft_core::Timestamp,
                limit: u32,
            ) -> Result<Vec<weft_core::lease::HeldLease>, weft_core::store::StoreError> {
                // Not retried: a claim whose reply was lost took leases that
                // simply expire unused.
                self.claim_orphans_inner(lease, now, limit)
                    .await
                    .map_err($crate::error::Failure::into_store)
            }

            async fn commit(
                &self,
                commit: weft_core::store::Commit<'_>,
            ) -> Result<(), weft_core::store::StoreError> {
                self.commit_with_transcript(commit, &[]).await
            }

            async fn commit_with_transcript(
                &self,
                commit: weft_core::store::Commit<'_>,
                transcript: &[weft_core::message::Message],
            ) -> Result<(), weft_core::store::StoreError> {
                let known = match commit.snapshot {
                    Some(_) => self.part_cache().known(commit.run_id),
                    None => $crate::parts::Counts::default(),
                };
                let job =
                    std::sync::Arc::new($crate::commit::encode_commit(&commit, transcript, known)?);
                // Safe to retry after a lost connection: events already
                // stored are skipped and the snapshot write is the same (a
                // transcript is appended only with new events).
                $crate::retry::retrying(self.retry_label(), || self.commit_job(job.clone()))
                    .await
                    .map_err($crate::error::Failure::into_store)?;
                if let Some(snapshot) = &job.snapshot {
                    self.part_cache()
                        .stored(&job.run_id, snapshot.counts, job.status);
                }
                Ok(())
            }

            async fn load_run(
                &self,
                run_id: &weft_core::RunId,
            ) -> Result<Option<weft_core::store::StoredRun>, weft_core::store::StoreError> {
                self.load_run_inner(run_id).await
            }

            async fn read_events(
                &self,
                run_id: &weft_core::RunId,
                after: u64,
                limit: Option<u32>,
            ) -> Result<Vec<weft_core::event::RunEvent>, weft_core::store::StoreError> {
                let rows: Vec<(String,)> = self
                    .log_page($crate::paging::RUN_EVENTS, run_id.as_str(), after, limit)
                    .await
                    .map_err($crate::error::Failure::into_store)?
                    .ok_or_else(|| weft_core::store::StoreError::RunNotFound {
                        run_id: run_id.clone(),
                    })?;
                rows.iter()
                    .map(|(body,)| $crate::codec::from_json(body, "event"))
                    .collect()
            }

            async fn list_runs(
                &self,
                filter: &weft_core::store::RunFilter,
            ) -> Result<Vec<weft_core::store::RunRecord>, weft_core::store::StoreError> {
                let rows = self.run_rows(filter).await?;
                rows.into_iter().map($crate::rows::run_record).collect()
            }

            async fn list_run_rows(
                &self,
                filter: &weft_core::store::RunFilter,
            ) -> Result<Vec<weft_core::store::ListedRun>, weft_core::store::StoreError> {
                let rows = self.run_rows(filter).await?;
                Ok(rows.into_iter().map($crate::rows::listed_run).collect())
            }

            async fn run_head(
                &self,
                run_id: &weft_core::RunId,
                key: &str,
            ) -> Result<Option<weft_core::store::RunHead>, weft_core::store::StoreError> {
                self.run_head_inner(run_id, key).await
            }

            async fn quarantine_run(
                &self,
                run_id: &weft_core::RunId,
                reason: &str,
                fence: u64,
                now: weft_core::Timestamp,
            ) -> Result<bool, weft_core::store::StoreError> {
                self.quarantine_run_inner(run_id, reason, fence, now).await
            }
        }
    };
}

pub(crate) use impl_run_store;
