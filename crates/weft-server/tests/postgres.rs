//! The shared API scenarios against the local PostgreSQL, each in a fresh
//! schema dropped afterwards. The server is `WEFT_TEST_POSTGRES_URL`, by
//! default `postgres://postgres@127.0.0.1:5432/test`; when it is unreachable
//! the tests fail and say so.

mod common;

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use common::{Fixture, prompted, scenarios};
use sqlx::{Connection, PgConnection};

const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

fn url() -> String {
    std::env::var("WEFT_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned())
}

/// Runs `scenario` on a fixture over a fresh schema, then drops the schema.
async fn in_fresh_schema<F, Fut>(scenario: F)
where
    F: FnOnce(Fixture) -> Fut,
    Fut: Future<Output = ()>,
{
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let schema = format!(
        "weft_server_test_{}_{}_{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let base = url();
    let separator = if base.contains('?') { '&' } else { '?' };
    let store = match weft_store::connect(&format!("{base}{separator}schema={schema}")).await {
        Ok(store) => store,
        Err(e) => panic!(
            "PostgreSQL is not reachable at {base}: {e}\n\
             Start it, or point WEFT_TEST_POSTGRES_URL at another server."
        ),
    };
    scenario(Fixture::over(store, None)).await;
    let mut conn = PgConnection::connect(&base).await.unwrap();
    sqlx::query(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .execute(&mut conn)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenant_isolation_on_postgres() {
    in_fresh_schema(|f| async move { scenarios::tenant_isolation(&f).await }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_answers_on_postgres() {
    in_fresh_schema(|f| async move { scenarios::bad_answers(&f).await }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_overrides_on_postgres() {
    in_fresh_schema(|f| async move { prompted::override_reaches_the_planner(&f).await }).await;
}
