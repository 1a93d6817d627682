//! The durable-step benchmark against a real SQLite file: it reports its
//! timing, and what a commit writes does not grow with the run.

use weft_bench::store_commit::bench_commit;
use weft_store::{SqliteOptions, SqliteStore};

#[tokio::test]
async fn bench_commit_reports_timing_and_bytes_that_do_not_grow() {
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteOptions::new(dir.path().join("bench.db"));
    let store = SqliteStore::open_with(options).await.unwrap();
    let report = bench_commit(&store, 5).await;
    assert_eq!(report["steps"], 5, "{report}");
    assert!(report["us_per_commit"].as_f64().is_some(), "{report}");
    // What a commit writes does not grow with the run; the whole machine does.
    let bytes = &report["snapshot_write_bytes"];
    let written = |step: &str| bytes[step]["snapshot_and_parts"].as_i64().unwrap_or(0);
    let (at_10, at_1000) = (written("step_10"), written("step_1000"));
    assert!(at_10 > 0 && (at_1000 - at_10).abs() <= 64, "{report}");
    let whole = bytes["step_1000"]["whole_snapshot"].as_i64().unwrap_or(0);
    assert!(whole > 50 * at_1000, "{report}");
}
