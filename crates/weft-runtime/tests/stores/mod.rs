//! The durable stores an integration test runs on: SQLite in a temporary
//! directory, and PostgreSQL at `WEFT_TEST_POSTGRES_URL` (by default the
//! local server's `test` database), each test in a fresh schema that is
//! dropped afterwards. [`on_both_stores!`] runs each named test on both.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use weft_core::session::FullStore;
use weft_store::{PostgresOptions, PostgresStore, SqliteStore};

/// Where a test's store lives; every `open` is a new connection to it, as
/// a restarted process would make.
pub enum Db {
    Sqlite(tempfile::TempDir),
    Postgres { url: String, schema: String },
}

impl Db {
    pub fn sqlite() -> Self {
        Self::Sqlite(tempfile::tempdir().unwrap())
    }

    pub fn postgres() -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let url = std::env::var("WEFT_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let schema = format!(
            "weft_rt_{}_{}_{n}_{nanos}",
            env!("CARGO_CRATE_NAME"),
            std::process::id()
        );
        Self::Postgres { url, schema }
    }

    pub async fn open(&self) -> Arc<dyn FullStore> {
        match self {
            Self::Sqlite(dir) => {
                let url = format!("sqlite://{}", dir.path().join("weft.db").display());
                Arc::new(SqliteStore::open(&url).await.unwrap())
            }
            Self::Postgres { url, schema } => Arc::new(
                PostgresStore::open_with(PostgresOptions::new(url.clone()).with_schema(schema))
                    .await
                    .unwrap_or_else(|e| panic!("PostgreSQL at {url} cannot be opened: {e}")),
            ),
        }
    }

    pub async fn remove(self) {
        if let Self::Postgres { url, schema } = self {
            use sqlx::Connection as _;
            let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
            sqlx::query(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                .execute(&mut conn)
                .await
                .unwrap();
        }
    }
}

/// Runs each test (an `async fn(&Db)` of the invoking module) on SQLite and
/// on PostgreSQL; a PostgreSQL schema is dropped even when its test fails.
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = $crate::stores::Db::sqlite();
                    super::$name(&db).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = std::sync::Arc::new($crate::stores::Db::postgres());
                    let run = std::sync::Arc::clone(&db);
                    let outcome = tokio::spawn(async move { super::$name(&run).await }).await;
                    if let Ok(db) = std::sync::Arc::try_unwrap(db) {
                        db.remove().await;
                    }
                    if let Err(e) = outcome {
                        std::panic::resume_unwind(e.into_panic());
                    }
                }
            )*
        }
    };
}
