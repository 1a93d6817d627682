//! Errors: opening a store ([`OpenError`]), and the internal [`Failure`] that
//! keeps a driver error's kind long enough to decide whether to retry.

use weft_core::session::SessionError;
use weft_core::store::StoreError;

/// Why a store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The URL names no backend this build knows.
    #[error(
        "unsupported database URL `{url}`: expected `sqlite:PATH`, a file path, or `postgres://...`"
    )]
    UnsupportedUrl {
        /// The URL, without its password.
        url: String,
    },
    /// The database could not be reached or configured.
    #[error("cannot open database `{target}`: {source}")]
    Connect {
        /// What was being opened, without its password.
        target: String,
        /// What failed.
        #[source]
        source: sqlx::Error,
    },
    /// The group committer's own connection to a SQLite file could not be
    /// opened or configured.
    #[error("cannot open database `{target}` for commits: {source}")]
    CommitConnection {
        /// The file being opened.
        target: String,
        /// What failed.
        #[source]
        source: rusqlite::Error,
    },
    /// The group committer's thread could not be started.
    #[error("cannot start the SQLite commit thread: {source}")]
    CommitThread {
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// The schema to keep the tables in is not a plain SQL identifier.
    #[error(
        "cannot open database `{target}`: schema name `{schema}` must be letters, digits and `_`, not starting with a digit"
    )]
    InvalidSchema {
        /// What was being opened, without its password.
        target: String,
        /// The schema name given.
        schema: String,
    },
    /// The database was migrated by a newer weft than this one.
    #[error(
        "database schema version {found} is newer than this build of weft understands \
         (it knows up to {known}); upgrade weft to open this database"
    )]
    SchemaTooNew {
        /// The newest migration version found in the database.
        found: i64,
        /// The newest migration version this build ships.
        known: i64,
    },
    /// Running the schema migrations failed.
    #[error("database migration failed: {source}")]
    Migrate {
        /// What failed: reading the applied migrations, or applying one.
        #[source]
        source: MigrationFailure,
    },
}

/// Why the schema migrations failed.
#[derive(Debug, thiserror::Error)]
pub enum MigrationFailure {
    /// Reading which migrations the database has applied failed.
    #[error(transparent)]
    Read(#[from] sqlx::Error),
    /// Applying a migration failed.
    #[error(transparent)]
    Apply(#[from] sqlx::migrate::MigrateError),
}

impl From<MigrationFailure> for OpenError {
    fn from(source: MigrationFailure) -> Self {
        OpenError::Migrate { source }
    }
}

/// An operation's failure inside a backend: a driver error (which may be a
/// dropped connection, worth one retry) or a typed store/session error.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The database driver failed.
    Db(sqlx::Error),
    /// SQLite failed on the group committer's own connection.
    Sqlite(rusqlite::Error),
    /// The operation was refused for a reason the caller can act on.
    Session(SessionError),
}

impl From<sqlx::Error> for Failure {
    fn from(e: sqlx::Error) -> Self {
        Failure::Db(e)
    }
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Self {
        Failure::Sqlite(e)
    }
}

impl From<SessionError> for Failure {
    fn from(e: SessionError) -> Self {
        Failure::Session(e)
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        Failure::Session(SessionError::Store(e))
    }
}

impl Failure {
    /// Whether the operation may simply be run again: its connection was
    /// lost or refused, or its transaction lost a race and was rolled back.
    pub(crate) fn is_retryable(&self) -> bool {
        match self {
            Failure::Db(e) => is_connection_error(e) || is_transient_conflict(e),
            // Busy or locked past the busy timeout: the transaction was
            // rolled back whole.
            Failure::Sqlite(e) => matches!(
                e.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            ),
            Failure::Session(_) => false,
        }
    }

    /// The failure as a run store error.
    pub(crate) fn into_store(self) -> StoreError {
        match self {
            Failure::Db(e) => backend(&e),
            Failure::Sqlite(e) => StoreError::Backend {
                message: e.to_string(),
            },
            Failure::Session(SessionError::Store(e)) => e,
            Failure::Session(SessionError::Ended { session_id }) => {
                StoreError::SessionEnded { session_id }
            }
            Failure::Session(other) => StoreError::Backend {
                message: other.to_string(),
            },
        }
    }

    /// The failure as a session store error.
    pub(crate) fn into_session(self) -> SessionError {
        match self {
            Failure::Session(e) => e,
            other => SessionError::Store(other.into_store()),
        }
    }
}

/// A driver error as a [`StoreError::Backend`].
pub(crate) fn backend(e: &sqlx::Error) -> StoreError {
    StoreError::Backend {
        message: e.to_string(),
    }
}

/// A corrupt-data error.
pub(crate) fn corrupt(message: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        message: message.into(),
    }
}

/// Whether a driver error means the connection was lost or refused.
pub(crate) fn is_connection_error(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            // Class 08 is "connection exception"; 57P01..57P03 are an
            // administrator's termination, a crash shutdown and "cannot
            // connect now" (the server is starting or stopping).
            code.starts_with("08") || matches!(&*code, "57P01" | "57P02" | "57P03")
        }),
        _ => false,
    }
}

/// Whether the database rolled the transaction back because it lost a race:
/// SQLite busy or locked (codes 5 and 6 and their extended forms), or a
/// PostgreSQL serialization failure (40001) or deadlock (40P01).
pub(crate) fn is_transient_conflict(e: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = e else {
        return false;
    };
    let Some(code) = db.code() else {
        return false;
    };
    if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
        // SQLite's extended codes keep the primary code in the low byte.
        return code.parse::<u32>().is_ok_and(|n| matches!(n & 0xff, 5 | 6));
    }
    matches!(&*code, "40001" | "40P01")
}

/// `url` with any password replaced by `***`, for error messages.
pub(crate) fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = rest.split_once('/').map_or((rest, ""), |(a, t)| (a, t));
    let Some((userinfo, host)) = authority.rsplit_once('@') else {
        return url.to_owned();
    };
    let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
    let slash = if rest.contains('/') { "/" } else { "" };
    let masked = if userinfo.contains(':') {
        format!("{user}:***")
    } else {
        user.to_owned()
    };
    format!("{scheme}://{masked}@{host}{slash}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_hides_passwords_only() {
        assert_eq!(
            redact("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("/tmp/weft.db"), "/tmp/weft.db");
    }
}
