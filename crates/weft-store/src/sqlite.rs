//! [`SqliteStore`]: the embedded default store, one database file in WAL mode.
//!
//! Writes go through a pool of one connection whose transactions begin with
//! `BEGIN IMMEDIATE`, so writers in this process queue instead of failing
//! with `SQLITE_BUSY`, and a writer never has to upgrade a read lock (which
//! WAL mode refuses when another process wrote in between). Commits go
//! through a group-commit thread ([`crate::group`]), and so do run
//! creations: concurrent writes share one transaction and one sync to disk,
//! written through the thread's own connection while it holds the pooled
//! writer. Reads use a
//! separate pool of read-only connections, which WAL lets run alongside the
//! writer. Other processes on the same file wait up to the busy timeout.
//!
//! Durability: `synchronous = FULL` (the default) syncs the WAL on every
//! commit, so a commit survives power loss. [`Synchronous::Normal`] syncs
//! only at checkpoints: a commit still survives the process being killed
//! (it is in the WAL, in the OS's page cache) and the database never
//! corrupts, but an OS crash or power loss may roll back the last commits.
//! With it (and group commit), checkpoints run off the commit path
//! ([`crate::checkpoint`]).

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use crate::checkpoint::{self, CheckpointStats, Checkpointer};
use crate::commit::{CommitJob, CreateJob};
use crate::durability::Durability;
use crate::error::{Failure, OpenError, redact};
use crate::group::{GroupCommitStats, GroupCommitter, Job};
use crate::parts::PartCache;
use crate::schema;
use crate::sql_leases::impl_leases;
use crate::sql_prompts::impl_prompt_store;
use crate::sql_runs::impl_run_store;
use crate::sql_sessions::impl_session_store;

/// When SQLite syncs the file to disk; see the module docs and
/// [`Durability`], which picks one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Synchronous {
    /// Sync the WAL on every commit: commits survive power loss.
    #[default]
    Full,
    /// Sync at checkpoints: commits survive a killed process, not power loss.
    Normal,
}

impl Synchronous {
    /// The value of `PRAGMA synchronous`.
    fn pragma(self) -> &'static str {
        match self {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        }
    }
}

impl SqliteOptions {
    /// What checkpointing needs to know of these options.
    fn checkpoints(&self) -> checkpoint::Setup<'_> {
        checkpoint::Setup {
            path: &self.path,
            busy_timeout: self.busy_timeout,
            group_commit: self.group_commit,
            no_sync_per_commit: self.synchronous == Synchronous::Normal,
        }
    }
}

/// How to open a SQLite store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteOptions {
    /// The database file; created when missing.
    pub path: PathBuf,
    /// When to sync to disk.
    pub synchronous: Synchronous,
    /// How many read-only connections to keep.
    pub read_connections: u32,
    /// How long to wait for another process's write lock.
    pub busy_timeout: Duration,
    /// Write concurrent commits together, in one transaction and one sync
    /// ([`crate::group`]); otherwise each commit is its own transaction,
    /// written from the caller's task.
    pub group_commit: bool,
}

impl SqliteOptions {
    /// Options for the file at `path`, with defaults.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            synchronous: Synchronous::Full,
            read_connections: 4,
            busy_timeout: Duration::from_secs(5),
            group_commit: true,
        }
    }

    /// These options with the sync mode `durability` asks for.
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.synchronous = match durability {
            Durability::Sync => Synchronous::Full,
            Durability::Process => Synchronous::Normal,
        };
        self
    }

    /// Options from `sqlite://PATH`, `sqlite:PATH` or a plain path, with an
    /// optional `?synchronous=full|normal`.
    pub fn from_url(url: &str) -> Result<Self, OpenError> {
        let rest = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .unwrap_or(url);
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        if path.is_empty() || path.contains(":memory:") {
            return Err(OpenError::UnsupportedUrl {
                url: format!(
                    "{url} (the SQLite store needs a file; use the runtime's in-memory store instead)"
                ),
            });
        }
        let mut options = Self::new(path);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("synchronous", v)) if v.eq_ignore_ascii_case("full") => {
                    options.synchronous = Synchronous::Full
                }
                Some(("synchronous", v)) if v.eq_ignore_ascii_case("normal") => {
                    options.synchronous = Synchronous::Normal;
                }
                _ => {
                    return Err(OpenError::UnsupportedUrl {
                        url: format!(
                            "{url} (unknown option `{pair}`; the SQLite store knows synchronous=full|normal)"
                        ),
                    });
                }
            }
        }
        Ok(options)
    }
}

/// Runs, sessions, memory and prompts in one SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    writer: SqlitePool,
    committer: Option<GroupCommitter>,
    reader: SqlitePool,
    path: PathBuf,
    label: String,
    parts: PartCache,
}

impl SqliteStore {
    /// Opens (creating and migrating when needed) the database at `url`; see
    /// [`SqliteOptions::from_url`].
    pub async fn open(url: &str) -> Result<Self, OpenError> {
        Self::open_with(SqliteOptions::from_url(url)?).await
    }

    /// Opens (creating and migrating when needed) the database `options` names.
    pub async fn open_with(options: SqliteOptions) -> Result<Self, OpenError> {
        let target = options.path.display().to_string();
        let connect = |source: sqlx::Error| OpenError::Connect {
            target: redact(&target),
            source,
        };
        let base = SqliteConnectOptions::new()
            .filename(&options.path)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(match options.synchronous {
                Synchronous::Full => SqliteSynchronous::Full,
                Synchronous::Normal => SqliteSynchronous::Normal,
            })
            .busy_timeout(options.busy_timeout)
            .foreign_keys(true)
            // As the commit connection's (see `commit_connection`).
            .pragma(
                "wal_autocheckpoint",
                options.checkpoints().autocheckpoint_pages().to_string(),
            );
        // No idle timeout and no lifetime: a local file's connections need
        // no reaping, and without them the pool runs no maintenance task
        // (whose reaper can spin forever in sqlx 0.8, launchbadge/sqlx#3645,
        // hanging the runtime's shutdown).
        // No test before each acquire either: a ping costs a round trip to
        // the connection's thread and never finds a local file gone.
        let writer = SqlitePoolOptions::new()
            .idle_timeout(None)
            .max_lifetime(None)
            .test_before_acquire(false)
            .max_connections(1)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(base.clone().create_if_missing(true))
            .await
            .map_err(connect)?;
        schema::migrate_sqlite(&writer).await?;
        let reader = SqlitePoolOptions::new()
            .idle_timeout(None)
            .max_lifetime(None)
            .test_before_acquire(false)
            .max_connections(options.read_connections.max(1))
            .connect_with(base.read_only(true))
            .await
            .map_err(connect)?;
        let committer = if options.group_commit {
            let conn =
                commit_connection(&options).map_err(|source| OpenError::CommitConnection {
                    target: target.clone(),
                    source,
                })?;
            let checkpoints = options.checkpoints();
            let checkpointer = checkpoints
                .in_background()
                .then(|| Checkpointer::open(checkpoints))
                .transpose()
                .map_err(|e| match e {
                    checkpoint::StartError::Connection(source) => OpenError::CommitConnection {
                        target: target.clone(),
                        source,
                    },
                    checkpoint::StartError::Thread(source) => OpenError::CommitThread { source },
                })?;
            let started = GroupCommitter::start(writer.clone(), conn, checkpointer);
            Some(started.map_err(|source| OpenError::CommitThread { source })?)
        } else {
            None
        };
        Ok(Self {
            committer,
            writer,
            reader,
            path: options.path,
            label: format!("sqlite:{target}"),
            parts: PartCache::default(),
        })
    }

    /// The database file's path as opened.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the writer's commits survive, read back from its connection
    /// (`PRAGMA synchronous`: FULL or EXTRA sync each commit).
    pub async fn durability(&self) -> Result<Durability, sqlx::Error> {
        let (level,): (i64,) = sqlx::query_as("PRAGMA synchronous")
            .fetch_one(&self.writer)
            .await?;
        Ok(if level >= 2 {
            Durability::Sync
        } else {
            Durability::Process
        })
    }

    /// How group commit has grouped the commits so far (`None` when it is off).
    pub fn group_commit_stats(&self) -> Option<GroupCommitStats> {
        self.committer.as_ref().map(GroupCommitter::stats)
    }

    /// The checkpoints run off the commit path so far (`None` when SQLite
    /// checkpoints inside commits: with `synchronous = FULL` or without
    /// group commit).
    pub fn checkpoint_stats(&self) -> Option<CheckpointStats> {
        self.committer
            .as_ref()
            .and_then(GroupCommitter::checkpoint_stats)
    }

    /// Closes every connection, waiting for running operations.
    pub async fn close(&self) {
        self.reader.close().await;
        self.writer.close().await;
    }

    async fn write_tx(&self) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, sqlx::Error> {
        self.writer.begin_with("BEGIN IMMEDIATE").await
    }

    /// A read-only transaction: WAL mode keeps its reads on one state of
    /// the database, from its first read on.
    async fn read_tx(&self) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, sqlx::Error> {
        self.reader.begin().await
    }

    async fn commit_job(&self, job: Arc<CommitJob>) -> Result<(), Failure> {
        if let Some(committer) = &self.committer {
            return committer.write(Job::Commit(job)).await;
        }
        let mut tx = self.write_tx().await?;
        match Self::commit_in(&mut tx, &job).await {
            Ok(()) => Ok(tx.commit().await?),
            Err(failure) => {
                tx.rollback().await?;
                Err(failure)
            }
        }
    }

    async fn create_job(&self, job: Arc<CreateJob>) -> Result<(), Failure> {
        if let Some(committer) = &self.committer {
            return committer.write(Job::Create(job)).await;
        }
        let mut tx = self.write_tx().await?;
        match Self::create_in(&mut tx, &job).await {
            Ok(()) => Ok(tx.commit().await?),
            Err(failure) => {
                tx.rollback().await?;
                Err(failure)
            }
        }
    }

    fn write_pool(&self) -> &SqlitePool {
        &self.writer
    }

    fn read_pool(&self) -> &SqlitePool {
        &self.reader
    }

    fn retry_label(&self) -> &str {
        &self.label
    }

    fn part_cache(&self) -> &PartCache {
        &self.parts
    }
}

/// The group committer's connection: the pooled writer's settings (the file
/// is in WAL mode already: the pool opened it first), and
/// room for the commit's prepared statements.
fn commit_connection(options: &SqliteOptions) -> Result<rusqlite::Connection, rusqlite::Error> {
    let conn = rusqlite::Connection::open(&options.path)?;
    conn.busy_timeout(options.busy_timeout)?;
    conn.pragma_update(None, "synchronous", options.synchronous.pragma())?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // A batch's savepoints journal the pages they change: kept in memory,
    // with a page cache large enough that a batch of a hundred runs does
    // not spill (16 MiB; SQLite's default is 2 MiB).
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.pragma_update(None, "cache_size", -16384)?;
    conn.pragma_update(
        None,
        "wal_autocheckpoint",
        options.checkpoints().autocheckpoint_pages(),
    )?;
    conn.set_prepared_statement_cache_capacity(32);
    Ok(conn)
}

impl FromStr for SqliteOptions {
    type Err = OpenError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_url(s)
    }
}

/// The value of the label whose key is `{key}` (the tenant index is built
/// on it with the tenant's key written in).
pub(crate) const LABEL: &str = r#"json_extract(labels, '$."' || {key} || '"')"#;

impl_run_store!(
    SqliteStore,
    sqlx::Sqlite,
    lock = "",
    share = "",
    label = LABEL
);
impl_leases!(
    SqliteStore,
    sqlx::Sqlite,
    lock = "",
    skip = "",
    held = "SELECT json_extract(value, '$[0]') AS run_id, json_extract(value, '$[1]') AS epoch FROM json_each($2)"
);
impl_session_store!(SqliteStore, lock = "", label = LABEL);
impl_prompt_store!(SqliteStore);

#[cfg(test)]
#[path = "sqlite_tests.rs"]
mod tests;
