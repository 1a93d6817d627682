//! Schema migrations: the migrators embedded in this build, and the check
//! that refuses a database migrated by a newer weft.

use std::ops::Deref;

use sqlx::Acquire;
use sqlx::migrate::{Migrate, MigrateError, Migrator};

use crate::error::{MigrationFailure, OpenError};

/// The SQLite migrations of this build.
pub(crate) static SQLITE: Migrator = sqlx::migrate!("./migrations/sqlite");

/// The PostgreSQL migrations of this build.
pub(crate) static POSTGRES: Migrator = sqlx::migrate!("./migrations/postgres");

/// The newest migration version `migrator` knows.
pub(crate) fn latest(migrator: &Migrator) -> i64 {
    migrator.iter().map(|m| m.version).max().unwrap_or(0)
}

/// Refuses a database that has applied migrations this build does not ship;
/// `applied` are the rows of `SELECT version FROM _sqlx_migrations`.
pub(crate) fn check_applied(migrator: &Migrator, applied: &[(i64,)]) -> Result<(), OpenError> {
    let unknown = applied
        .iter()
        .map(|(v,)| *v)
        .filter(|v| !migrator.iter().any(|m| m.version == *v))
        .max();
    match unknown {
        Some(found) => Err(OpenError::SchemaTooNew {
            found,
            known: latest(migrator),
        }),
        None => Ok(()),
    }
}

/// The query listing the migrations a database has applied.
pub(crate) const APPLIED: &str = "SELECT version FROM _sqlx_migrations";

/// Applies this build's migrations through `conn`.
pub(crate) async fn run<'a, A>(migrator: &Migrator, conn: A) -> Result<(), OpenError>
where
    A: Acquire<'a>,
    <A::Connection as Deref>::Target: Migrate,
{
    migrator.run(conn).await.map_err(|e| match e {
        MigrateError::VersionMissing(found) => OpenError::SchemaTooNew {
            found,
            known: latest(migrator),
        },
        other => MigrationFailure::from(other).into(),
    })
}

/// Migrates the SQLite database behind `pool`, after checking that every
/// migration it has applied is one of this build's.
pub(crate) async fn migrate_sqlite(pool: &sqlx::SqlitePool) -> Result<(), OpenError> {
    let fail = |e: sqlx::Error| OpenError::from(MigrationFailure::from(e));
    let (tables,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
    )
    .fetch_one(pool)
    .await
    .map_err(fail)?;
    if tables > 0 {
        let applied: Vec<(i64,)> = sqlx::query_as(APPLIED)
            .fetch_all(pool)
            .await
            .map_err(fail)?;
        check_applied(&SQLITE, &applied)?;
    }
    run(&SQLITE, pool).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_versions_are_refused() {
        let known = latest(&SQLITE);
        assert!(check_applied(&SQLITE, &[(known,)]).is_ok());
        assert!(check_applied(&SQLITE, &[]).is_ok());
        let err = check_applied(&SQLITE, &[(known,), (known + 1,)]).unwrap_err();
        assert!(
            matches!(err, OpenError::SchemaTooNew { found, known: k } if found == known + 1 && k == known),
            "{err:?}"
        );
        assert!(err.to_string().contains("upgrade weft"));
    }
}
