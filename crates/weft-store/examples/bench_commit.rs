//! Measures one durable step — a commit of three events and the machine
//! snapshot — on SQLite (synchronous FULL and NORMAL, in a temporary
//! directory) and, when a URL is given, on PostgreSQL (in a temporary
//! schema). Prints one JSON line per store.
//!
//! `cargo run --release -p weft-store --example bench_commit -- [STEPS] [POSTGRES_URL]`

use serde_json::{Value, json};
use sqlx::Connection;
use weft_store::{
    PostgresOptions, PostgresStore, SqliteOptions, SqliteStore, Synchronous, bench_commit,
};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let steps: usize = args.next().map_or(Ok(2000), |s| s.parse())?;
    let postgres = args.next();

    let dir = tempfile::tempdir()?;
    for (name, sync) in [("full", Synchronous::Full), ("normal", Synchronous::Normal)] {
        let mut options = SqliteOptions::new(dir.path().join(format!("bench-{name}.db")));
        options.synchronous = sync;
        let store = SqliteStore::open_with(options).await?;
        let _warmup = bench_commit(&store, steps / 10).await;
        print(
            json!({"store": "sqlite", "synchronous": name}),
            bench_commit(&store, steps).await,
        );
        store.close().await;
    }

    if let Some(url) = postgres {
        let schema = format!("weft_bench_{}", std::process::id());
        let store =
            PostgresStore::open_with(PostgresOptions::new(url.clone()).with_schema(&schema))
                .await?;
        let _warmup = bench_commit(&store, steps / 10).await;
        print(
            json!({"store": "postgres"}),
            bench_commit(&store, steps).await,
        );
        store.close().await;
        let mut conn = sqlx::PgConnection::connect(&url).await?;
        sqlx::query(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
            .execute(&mut conn)
            .await?;
    }
    Ok(())
}

fn print(mut head: Value, report: Value) {
    if let (Some(h), Some(r)) = (head.as_object_mut(), report.as_object()) {
        h.extend(r.clone());
    }
    println!("{head}");
}
