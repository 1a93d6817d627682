//! Measures one durable step — a commit of three events and the machine
//! snapshot — on SQLite (synchronous FULL and NORMAL, in a temporary
//! directory) and, when a URL is given, on PostgreSQL (in a temporary
//! schema). Each store is measured twice: one run committing step after step
//! (latency), then 50 runs committing at once (throughput). Prints JSON lines.
//!
//! `cargo run --release -p weft-bench --example bench_commit -- [STEPS] [POSTGRES_URL]`

use serde_json::{Value, json};
use sqlx::Connection;
use weft_bench::store_commit::{bench_commit, bench_commit_concurrent};
use weft_store::{PostgresOptions, PostgresStore, SqliteOptions, SqliteStore, Synchronous};

/// Runs committing at once in the concurrent measurement.
const RUNS: usize = 50;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let steps: usize = args.next().map_or(Ok(2000), |s| s.parse())?;
    let postgres = args.next();

    let dir = tempfile::tempdir()?;
    for (name, sync) in [("full", Synchronous::Full), ("normal", Synchronous::Normal)] {
        for group_commit in [true, false] {
            let mut options =
                SqliteOptions::new(dir.path().join(format!("bench-{name}-{group_commit}.db")));
            options.synchronous = sync;
            options.group_commit = group_commit;
            let store = SqliteStore::open_with(options).await?;
            let _warmup = bench_commit(&store, steps / 10).await;
            let head =
                json!({"store": "sqlite", "synchronous": name, "group_commit": group_commit});
            print(&head, bench_commit(&store, steps).await);
            print(
                &head,
                bench_commit_concurrent(&store, RUNS, steps / RUNS).await,
            );
            store.close().await;
        }
    }

    if let Some(url) = postgres {
        let schema = format!("weft_bench_{}", std::process::id());
        let store =
            PostgresStore::open_with(PostgresOptions::new(url.clone()).with_schema(&schema))
                .await?;
        let _warmup = bench_commit(&store, steps / 10).await;
        let head = json!({"store": "postgres"});
        print(&head, bench_commit(&store, steps).await);
        print(
            &head,
            bench_commit_concurrent(&store, RUNS, steps / RUNS).await,
        );
        store.close().await;
        let mut conn = sqlx::PgConnection::connect(&url).await?;
        sqlx::query(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
            .execute(&mut conn)
            .await?;
    }
    Ok(())
}

fn print(head: &Value, report: Value) {
    let mut line = head.clone();
    if let (Some(h), Some(r)) = (line.as_object_mut(), report.as_object()) {
        h.extend(r.clone());
    }
    println!("{line}");
}
