//! weft-store: durable run, session and memory stores (SQLite, PostgreSQL).
//!
//! Both backends implement the contracts of `weft-core` with the same
//! semantics: [`RunStore`](weft_core::store::RunStore) (the per-run event log,
//! run records and machine snapshots, committed atomically) and the session
//! traits of [`weft_core::session`] (sessions, their transcript and memory,
//! prompt overrides). [`connect`] opens either one from a URL.
//!
//! Organization:
//! - [`sqlite`]: [`SqliteStore`], the embedded default (one file, WAL mode).
//! - [`postgres`]: [`PostgresStore`], for many processes on many hosts.
//! - `sql_runs`, `sql_sessions`, `sql_leases`: the SQL both backends share, as macros.
//! - `sql_list`, `sql_session_rows`: listing runs and sessions row by row
//!   (a corrupt row spoils only itself), and quarantining a run whose state
//!   cannot be read.
//! - `paging`: the paged reads (log pages, newest-first lists) written once.
//! - `schema`: the embedded migrations and the "newer schema" check.
//! - `codec`, `rows`: how values map to columns; the log's no-gap rule.
//! - `commit`, `sql_commit`: a commit encoded for the SQL backends, and applied.
//! - `parts`, `sql_snapshots`: snapshots stored as a head and append-only
//!   parts (transcript messages, tool outputs), written and loaded.
//! - [`durability`]: what an acknowledged commit survives, per store.
//! - `group`: SQLite's group commit.
//! - `retry`: retrying safe operations after a lost connection.
//!
//! Sessions: a run on a session that does not exist yet creates it. A run on
//! an ended session is refused: by `SessionStore::start_run` as the typed
//! `SessionError::Ended`, and by `RunStore::create_run` as a
//! `StoreError::Backend` whose message says the session has ended
//! (`StoreError` has no variant for it).
//!
//! Connections: operations that are safe to repeat (reads, commits, creating
//! a run, idempotent writes) are retried with backoff after a lost
//! connection; see `retry`.
//!
//! Stored data: events, snapshots and messages are serde JSON stored as text;
//! a snapshot is stored as its head and its parts (see `parts`), so what a
//! commit writes does not grow with the run's length. A snapshot in a format version this build does not read is reported as
//! [`StoreError::Corrupt`](weft_core::store::StoreError::Corrupt) naming both
//! versions. Opening a database migrates it; a database migrated by a newer
//! weft is refused with [`OpenError::SchemaTooNew`].

mod checkpoint;
mod codec;
mod commit;
pub mod durability;
mod error;
mod group;
mod group_stats;
mod paging;
mod parts;
pub mod postgres;
mod retry;
mod rows;
mod schema;
mod sql_commit;
mod sql_create;
mod sql_leases;
mod sql_list;
mod sql_pages;
mod sql_prompts;
mod sql_runs;
mod sql_session_log;
mod sql_session_rows;
mod sql_sessions;
mod sql_snapshots;
pub mod sqlite;
mod sqlite_commit;

use std::sync::Arc;

use weft_core::session::FullStore;

pub use checkpoint::CheckpointStats;
pub use durability::{Durability, UnknownDurability};
pub use error::{MigrationFailure, OpenError};
pub use group_stats::GroupCommitStats;
pub use parts::commit_bytes;
pub use postgres::{PostgresOptions, PostgresStore};
pub use sqlite::{SqliteOptions, SqliteStore, Synchronous};

/// Opens the store `url` names: `postgres://...` (or `postgresql://...`) for
/// PostgreSQL (a `schema=NAME` parameter keeps the tables in that schema);
/// `sqlite:PATH`, `sqlite://PATH` or a plain file path for SQLite (a
/// `synchronous=full|normal` parameter sets the sync mode).
///
/// The result coerces to `Arc<dyn RunStore>` or any other store trait.
pub async fn connect(url: &str) -> Result<Arc<dyn FullStore>, OpenError> {
    connect_with(url, None).await
}

/// [`connect`] with the [`Durability`] its commits need; `None` keeps what
/// the URL says (SQLite's `synchronous=`), or `sync`.
pub async fn connect_with(
    url: &str,
    durability: Option<Durability>,
) -> Result<Arc<dyn FullStore>, OpenError> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let mut options = PostgresOptions::from_url(url);
        options.durability = durability.unwrap_or_default();
        return Ok(Arc::new(PostgresStore::open_with(options).await?));
    }
    if url.starts_with("sqlite:") || !url.contains("://") {
        let mut options = SqliteOptions::from_url(url)?;
        if let Some(durability) = durability {
            options = options.with_durability(durability);
        }
        return Ok(Arc::new(SqliteStore::open_with(options).await?));
    }
    Err(OpenError::UnsupportedUrl {
        url: error::redact(url),
    })
}
