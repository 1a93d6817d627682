//! [`PostgresStore`]: runs, sessions, memory and prompts in PostgreSQL, for
//! many runtime processes on many hosts.
//!
//! Resilience: the pool checks a connection when it comes back (sqlx pings
//! it then, and closes it when the ping fails), closes idle ones before a
//! server or a proxy drops them, and replaces connections that died (server
//! restart, terminated backend). It does not ping again before handing one
//! out: that was a round trip before every operation. An operation that
//! fails on a connection that died meanwhile is retried on a fresh one, with
//! backoff, when that is safe (see [`crate::retry`]).
//!
//! Speed: the common commit is one statement, one round trip
//! ([`at_once`]), and the commits of different runs waiting at the same
//! time share one statement ([`batch`]); so is a run's creation
//! ([`create_at_once`]).
//!
//! Concurrency: a commit locks its run row (`FOR UPDATE`), so two processes
//! committing to one run serialize, and the second one sees the first one's
//! events (a duplicate of a stored event is skipped, one with other content
//! or a gap refused). A new run holds its
//! session row `FOR SHARE`, so ending the session serializes with it.

mod at_once;
mod batch;
mod create_at_once;

use std::str::FromStr;
use std::time::Duration;

use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};

use crate::durability::Durability;
use crate::error::{MigrationFailure, OpenError, redact};
use crate::parts::PartCache;
use crate::schema;
use crate::sql_leases::impl_leases;
use crate::sql_prompts::impl_prompt_store;
use crate::sql_runs::impl_run_store;
use crate::sql_sessions::impl_session_store;

/// How to open a PostgreSQL store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostgresOptions {
    /// `postgres://user:password@host:port/database`.
    pub url: String,
    /// The schema to keep weft's tables in (created when missing); the
    /// connection's default `search_path` when absent.
    pub schema: Option<String>,
    /// Most connections the pool opens.
    pub max_connections: u32,
    /// How long an operation waits for a connection.
    pub acquire_timeout: Duration,
    /// How long a connection may sit idle before the pool closes it; keep it
    /// below the server's (or a proxy's) idle timeout.
    pub idle_timeout: Duration,
    /// How long a connection lives at most.
    pub max_lifetime: Duration,
    /// The `application_name` the connections report (in `pg_stat_activity`).
    pub application_name: String,
    /// What a commit survives: [`Durability::Process`] turns
    /// `synchronous_commit` off for weft's connections.
    pub durability: Durability,
}

impl PostgresOptions {
    /// Options for `url`, with defaults.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            schema: None,
            max_connections: 10,
            acquire_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_lifetime: Duration::from_secs(30 * 60),
            application_name: "weft".to_owned(),
            durability: Durability::Sync,
        }
    }

    /// Options from a URL; a `schema=NAME` query parameter sets [`Self::schema`]
    /// (the other parameters are PostgreSQL's own).
    pub fn from_url(url: &str) -> Self {
        let Some((base, query)) = url.split_once('?') else {
            return Self::new(url);
        };
        let mut schema = None;
        let rest: Vec<&str> = query
            .split('&')
            .filter(|pair| match pair.strip_prefix("schema=") {
                Some(name) => {
                    schema = Some(name.to_owned());
                    false
                }
                None => !pair.is_empty(),
            })
            .collect();
        let url = if rest.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", rest.join("&"))
        };
        Self {
            schema,
            ..Self::new(url)
        }
    }

    /// These options with weft's tables in `schema`.
    pub fn with_schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }
}

/// Runs, sessions, memory and prompts in a PostgreSQL database.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
    batcher: batch::Batcher,
    label: String,
    parts: PartCache,
}

impl PostgresStore {
    /// Opens (migrating when needed) the database at `url`; see
    /// [`PostgresOptions::from_url`].
    pub async fn open(url: &str) -> Result<Self, OpenError> {
        Self::open_with(PostgresOptions::from_url(url)).await
    }

    /// Opens (migrating when needed) the database `options` names.
    pub async fn open_with(options: PostgresOptions) -> Result<Self, OpenError> {
        let target = redact(&options.url);
        let connect = |source: sqlx::Error| OpenError::Connect {
            target: target.clone(),
            source,
        };
        let mut base = PgConnectOptions::from_str(&options.url)
            .map_err(connect)?
            .application_name(&options.application_name);
        if options.durability == Durability::Process {
            base = base.options([("synchronous_commit", "off")]);
        }
        if let Some(name) = &options.schema {
            if !is_identifier(name) {
                return Err(OpenError::InvalidSchema {
                    target: target.clone(),
                    schema: name.clone(),
                });
            }
            let mut conn = PgConnection::connect_with(&base).await.map_err(connect)?;
            sqlx::query(&format!("CREATE SCHEMA IF NOT EXISTS \"{name}\""))
                .execute(&mut conn)
                .await
                .map_err(connect)?;
            conn.close().await.map_err(connect)?;
            base = base.options([("search_path", name.as_str())]);
        }
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .min_connections(0)
            .acquire_timeout(options.acquire_timeout)
            .idle_timeout(options.idle_timeout)
            .max_lifetime(options.max_lifetime)
            .test_before_acquire(false)
            .connect_with(base)
            .await
            .map_err(connect)?;
        migrate(&pool).await?;
        let label = match &options.schema {
            Some(s) => format!("{target} (schema {s})"),
            None => target.clone(),
        };
        Ok(Self {
            batcher: batch::Batcher::start(pool.clone()),
            pool,
            label,
            parts: PartCache::default(),
        })
    }

    /// What the commits survive, read back from a connection
    /// (`synchronous_commit`: only `off` acknowledges before the WAL flush).
    pub async fn durability(&self) -> Result<Durability, sqlx::Error> {
        let (setting,): (String,) = sqlx::query_as("SHOW synchronous_commit")
            .fetch_one(&self.pool)
            .await?;
        Ok(if setting == "off" {
            Durability::Process
        } else {
            Durability::Sync
        })
    }

    /// How the commit batcher has grouped the commits so far.
    pub fn group_commit_stats(&self) -> crate::GroupCommitStats {
        self.batcher.stats()
    }

    /// Closes every connection, waiting for running operations.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    async fn write_tx(&self) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, sqlx::Error> {
        self.pool.begin().await
    }

    /// A read-only transaction whose reads all see one snapshot of the
    /// database (`REPEATABLE READ`).
    async fn read_tx(&self) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, sqlx::Error> {
        self.pool
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .await
    }

    async fn commit_job(
        &self,
        job: std::sync::Arc<crate::commit::CommitJob>,
    ) -> Result<(), crate::error::Failure> {
        if self.commit_at_once(&job).await? {
            return Ok(());
        }
        let mut tx = self.write_tx().await?;
        Self::commit_in(&mut tx, &job).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn create_job(
        &self,
        job: std::sync::Arc<crate::commit::CreateJob>,
    ) -> Result<(), crate::error::Failure> {
        if self.create_at_once(&job).await? {
            return Ok(());
        }
        let mut tx = self.write_tx().await?;
        Self::create_in(&mut tx, &job).await?;
        tx.commit().await?;
        Ok(())
    }

    fn write_pool(&self) -> &PgPool {
        &self.pool
    }

    fn read_pool(&self) -> &PgPool {
        &self.pool
    }

    fn retry_label(&self) -> &str {
        &self.label
    }

    fn part_cache(&self) -> &PartCache {
        &self.parts
    }
}

/// Whether `name` is a plain SQL identifier, safe to quote into DDL.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 63
}

/// Refuses a newer schema, then applies this build's migrations.
async fn migrate(pool: &PgPool) -> Result<(), OpenError> {
    let fail = |e: sqlx::Error| OpenError::from(MigrationFailure::from(e));
    let (exists,): (bool,) = sqlx::query_as("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
        .fetch_one(pool)
        .await
        .map_err(fail)?;
    if exists {
        let applied: Vec<(i64,)> = sqlx::query_as(schema::APPLIED)
            .fetch_all(pool)
            .await
            .map_err(fail)?;
        schema::check_applied(&schema::POSTGRES, &applied)?;
    }
    schema::run(&schema::POSTGRES, pool).await
}

/// The value of the label whose key is `{key}` (the tenant index is built
/// on it with the tenant's key written in). `weft_labels` reads labels that
/// are not JSON as NULL, so such a row matches no label and fails no list.
const LABEL: &str = "(weft_labels(labels) ->> {key})";

impl_run_store!(
    PostgresStore,
    sqlx::Postgres,
    lock = " FOR UPDATE",
    share = " FOR SHARE",
    label = LABEL
);
impl_leases!(
    PostgresStore,
    sqlx::Postgres,
    lock = " FOR UPDATE",
    skip = " FOR UPDATE SKIP LOCKED",
    held = "SELECT e ->> 0 AS run_id, (e ->> 1)::bigint AS epoch FROM jsonb_array_elements($2::jsonb) AS e"
);
impl_session_store!(PostgresStore, lock = " FOR UPDATE", label = LABEL);
impl_prompt_store!(PostgresStore);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_parameter_is_taken_out_of_the_url() {
        let o = PostgresOptions::from_url("postgres://h/db?schema=w&sslmode=disable");
        assert_eq!(o.schema.as_deref(), Some("w"));
        assert_eq!(o.url, "postgres://h/db?sslmode=disable");
        let o = PostgresOptions::from_url("postgres://h/db?schema=w");
        assert_eq!(
            (o.schema.as_deref(), o.url.as_str()),
            (Some("w"), "postgres://h/db")
        );
        assert_eq!(PostgresOptions::from_url("postgres://h/db").schema, None);
    }

    #[test]
    fn schema_names_are_checked() {
        assert!(is_identifier("weft_test_1"));
        assert!(!is_identifier("1abc"));
        assert!(!is_identifier("a\"; DROP"));
        assert!(!is_identifier(""));
    }
}
