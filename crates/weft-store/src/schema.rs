//! Schema migrations: the migrators embedded in this build, and the check
//! that refuses a database migrated by a newer weft.

use sqlx::migrate::{MigrateError, Migrator};

use crate::error::OpenError;

/// The SQLite migrations of this build.
pub(crate) static SQLITE: Migrator = sqlx::migrate!("./migrations/sqlite");

/// The PostgreSQL migrations of this build.
pub(crate) static POSTGRES: Migrator = sqlx::migrate!("./migrations/postgres");

/// The newest migration version `migrator` knows.
pub(crate) fn latest(migrator: &Migrator) -> i64 {
    migrator.iter().map(|m| m.version).max().unwrap_or(0)
}

/// Refuses a database that has applied migrations this build does not ship.
pub(crate) fn check_applied(migrator: &Migrator, applied: &[i64]) -> Result<(), OpenError> {
    let unknown = applied
        .iter()
        .copied()
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

/// A migrator failure as an open error.
pub(crate) fn migrate_error(migrator: &Migrator, e: MigrateError) -> OpenError {
    match e {
        MigrateError::VersionMissing(found) => OpenError::SchemaTooNew {
            found,
            known: latest(migrator),
        },
        other => OpenError::Migrate {
            message: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_versions_are_refused() {
        let known = latest(&SQLITE);
        assert!(check_applied(&SQLITE, &[known]).is_ok());
        assert!(check_applied(&SQLITE, &[]).is_ok());
        let err = check_applied(&SQLITE, &[known, known + 1]).unwrap_err();
        assert_eq!(
            err,
            OpenError::SchemaTooNew {
                found: known + 1,
                known
            }
        );
        assert!(err.to_string().contains("upgrade weft"));
    }
}
