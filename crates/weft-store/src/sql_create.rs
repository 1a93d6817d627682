//! A run's creation applied in SQL, shared by both backends through
//! [`impl_create!`]: its session when new (refused when ended), its row
//! (refused when the id is taken), its first events and its snapshot's
//! parts, in a transaction the caller opens and commits.

/// Implements `create_in` for `$store` over database `$db`; `$share` locks a
/// selected row for share (`""` on SQLite, whose write transactions are
/// exclusive), so ending the session waits for the new run.
macro_rules! impl_create {
    ($store:ty, $db:ty, share = $share:literal) => {
        impl $store {
            /// Applies the creation `job` inside `tx`.
            pub(crate) async fn create_in<'t>(
                tx: &mut sqlx::Transaction<'t, $db>,
                job: &$crate::commit::CreateJob,
            ) -> Result<(), $crate::error::Failure> {
                sqlx::query(
                    "INSERT INTO sessions (session_id, labels, created_at, ended_at, transcript_seq) \
                     VALUES ($1, '{}', $2, NULL, 0) ON CONFLICT (session_id) DO NOTHING",
                )
                .bind(job.session_id.as_str())
                .bind(job.created)
                .execute(&mut **tx)
                .await?;
                let ended: Option<(Option<i64>,)> = sqlx::query_as(concat!(
                    "SELECT ended_at FROM sessions WHERE session_id = $1",
                    $share
                ))
                .bind(job.session_id.as_str())
                .fetch_optional(&mut **tx)
                .await?;
                if let Some((Some(_),)) = ended {
                    return Err(job.session_ended().into());
                }
                let inserted = $crate::sql_create::bind_run_row!(sqlx::query(
                    "INSERT INTO runs (run_id, agent_id, session_id, status, labels, created_at, updated_at, \
                     last_seq, snapshot, lease_owner, lease_epoch, lease_expires) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
                     ON CONFLICT (run_id) DO NOTHING",
                ), job)
                .execute(&mut **tx)
                .await?;
                if inserted.rows_affected() == 0 {
                    return Err(job.run_exists().into());
                }
                let events: Vec<&$crate::commit::EncodedEvent> = job.events.iter().collect();
                Self::insert_events(tx, &job.run_id, &events).await?;
                Self::insert_parts(tx, &job.run_id, Some(&job.snapshot)).await?;
                Ok(())
            }
        }
    };
}

pub(crate) use impl_create;

/// Binds the run row of creation `$job` (`runs`' twelve columns, from
/// `run_id` to `lease_expires`, in table order) to `$query`'s first
/// parameters.
macro_rules! bind_run_row {
    ($query:expr, $job:expr) => {
        $query
            .bind($job.run_id.as_str())
            .bind($job.agent_id.as_str())
            .bind($job.session_id.as_str())
            .bind($job.status.as_str())
            .bind($job.labels.as_str())
            .bind($job.created)
            .bind($job.updated)
            .bind($job.last)
            .bind($job.snapshot.head.as_str())
            .bind($job.lease.as_ref().map(|l| l.0.as_str()))
            .bind(i64::from($job.lease.is_some()))
            .bind($job.lease.as_ref().map_or(0, |l| l.1))
    };
}

pub(crate) use bind_run_row;
