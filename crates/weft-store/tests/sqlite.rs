//! The store suite against SQLite (a fresh file per test), plus SQLite's own
//! tests: reopening, a newer schema, a snapshot in an unknown format.

mod suite;

use std::sync::Arc;

use weft_core::RunId;
use weft_core::session::FullStore;
use weft_core::store::{RunStore, StoreError};
use weft_store::{OpenError, SqliteStore};

/// A fresh database file in its own directory, removed on drop.
struct TestDb {
    dir: tempfile::TempDir,
}

impl TestDb {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn url(&self) -> String {
        format!("sqlite://{}", self.dir.path().join("weft.db").display())
    }

    async fn open(&self) -> SqliteStore {
        SqliteStore::open(&self.url()).await.unwrap()
    }

    async fn raw(&self) -> sqlx::SqlitePool {
        sqlx::SqlitePool::connect(&self.url()).await.unwrap()
    }
}

macro_rules! sqlite_tests {
    ($($module:ident :: $name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let db = TestDb::new();
                let store = db.open().await;
                suite::$module::$name(&store).await;
                store.close().await;
            }
        )*
    };
}

for_each_suite_test!(sqlite_tests);

/// The suite again, with each commit in its own transaction (no group commit).
mod direct {
    use super::{TestDb, suite};

    macro_rules! direct_tests {
        ($($module:ident :: $name:ident),* $(,)?) => {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = TestDb::new();
                    let mut options = weft_store::SqliteOptions::from_url(&db.url()).unwrap();
                    options.group_commit = false;
                    let store = weft_store::SqliteStore::open_with(options).await.unwrap();
                    suite::$module::$name(&store).await;
                    store.close().await;
                }
            )*
        };
    }

    crate::for_each_suite_test!(direct_tests);
}

#[tokio::test]
async fn data_survives_reopening() {
    let db = TestDb::new();
    let store = db.open().await;
    store
        .create_run(
            &suite::record("r1", "s1", 1),
            &suite::events(1, 3),
            &suite::driven_machine(),
        )
        .await
        .unwrap();
    store.close().await;
    drop(store);
    let store = db.open().await;
    let loaded = store.load_run(&RunId::new("r1")).await.unwrap().unwrap();
    assert_eq!(loaded.snapshot, suite::driven_machine());
    assert_eq!(
        store.read_events(&RunId::new("r1"), 0, None).await.unwrap(),
        suite::events(1, 3)
    );
}

#[tokio::test]
async fn a_newer_schema_is_refused() {
    let db = TestDb::new();
    db.open().await.close().await;
    let raw = db.raw().await;
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (99991231000000, 'from the future', TRUE, x'00', 0)",
    )
    .execute(&raw)
    .await
    .unwrap();
    raw.close().await;
    let err = SqliteStore::open(&db.url()).await.unwrap_err();
    suite::assert_too_new(&err);
}

#[tokio::test]
async fn a_snapshot_in_an_unknown_format_is_corrupt() {
    let db = TestDb::new();
    let store = db.open().await;
    store
        .create_run(&suite::record("r1", "s1", 1), &[], &suite::machine())
        .await
        .unwrap();
    let raw = db.raw().await;
    sqlx::query("UPDATE runs SET snapshot = replace(snapshot, '\"format\":1', '\"format\":7')")
        .execute(&raw)
        .await
        .unwrap();
    let err = store.load_run(&RunId::new("r1")).await.unwrap_err();
    let StoreError::Corrupt { message } = &err else {
        panic!("expected Corrupt, got {err:?}");
    };
    assert!(message.contains("format version 7"), "{message}");
    assert!(message.contains("r1"), "{message}");
}

#[tokio::test]
async fn a_snapshot_whose_parts_disagree_is_corrupt_not_a_panic() {
    use serde_json::json;
    use weft_core::planner::{PlanResult, ToolCallRequest};
    use weft_core::run::{RunConfig, RunMachine, Step};
    let now = weft_core::Timestamp::from_millis(0);
    let mut m = RunMachine::new(RunConfig::new("agent", "session", Vec::new()), now);
    m.next_step(now);
    let call = ToolCallRequest::new("demo.echo", json!({})).with_id("c1");
    m.plan_result(
        PlanResult::tool_calls(vec![call]),
        now,
        &suite::Catalog::new(),
    )
    .unwrap();
    assert!(matches!(m.next_step(now), Step::ExecuteTools { .. }));
    let db = TestDb::new();
    let store = db.open().await;
    store
        .create_run(&suite::record("r1", "s1", 1), &[], &m)
        .await
        .unwrap();
    assert!(store.load_run(&RunId::new("r1")).await.is_ok());
    // One call but no result slot: driving it would index out of bounds.
    let raw = db.raw().await;
    let changed = sqlx::query(
        "UPDATE runs SET snapshot = replace(snapshot, '\"results\":[null]', '\"results\":[]')",
    )
    .execute(&raw)
    .await
    .unwrap();
    assert_eq!(changed.rows_affected(), 1);
    let err = store.load_run(&RunId::new("r1")).await.unwrap_err();
    let StoreError::Corrupt { message } = &err else {
        panic!("expected Corrupt, got {err:?}");
    };
    assert!(message.contains("0 results for 1 calls"), "{message}");
    assert!(message.contains("r1"), "{message}");
}

/// Takes the database's write lock on a connection of its own, as another
/// process would, and gives it back after `ms` milliseconds (when the
/// returned task ends).
async fn hold_write_lock(db: &TestDb, ms: u64) -> tokio::task::JoinHandle<()> {
    let raw = db.raw().await;
    let mut other = raw.acquire().await.unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut *other)
        .await
        .unwrap();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        sqlx::query("COMMIT").execute(&mut *other).await.unwrap();
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_lock_held_past_the_busy_timeout_is_waited_out() {
    use weft_core::lease::ControlRequest;
    let db = TestDb::new();
    let mut options = weft_store::SqliteOptions::new(db.dir.path().join("weft.db"));
    options.busy_timeout = std::time::Duration::from_millis(20);
    let store = SqliteStore::open_with(options).await.unwrap();
    store
        .create_run(&suite::record("r1", "s1", 1), &[], &suite::machine())
        .await
        .unwrap();
    // Another process holds the write lock for 300 ms, far past the
    // store's 20 ms busy timeout: the store's write is retried, not failed.
    let release = hold_write_lock(&db, 300).await;
    let cancel = ControlRequest::Cancel { reason: "x".into() };
    assert!(
        store
            .request_control(&RunId::new("r1"), &cancel)
            .await
            .unwrap()
    );
    release.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_and_creations_wait_out_a_write_lock_held_past_the_busy_timeout() {
    let db = TestDb::new();
    let mut options = weft_store::SqliteOptions::new(db.dir.path().join("weft.db"));
    options.busy_timeout = std::time::Duration::from_millis(20);
    let store = SqliteStore::open_with(options).await.unwrap();
    suite::stored_run(&store, suite::record("r1", "s1", 1), 1).await;
    // Another process holds the write lock for 300 ms, far past the 20 ms
    // busy timeout: the commit thread's batch is lost to it and each write
    // in it is retried, not failed.
    let release = hold_write_lock(&db, 300).await;
    let run = RunId::new("r1");
    let events = suite::events(2, 3);
    let commit = suite::commit(&run, &events, weft_core::store::RunStatus::Running, 2);
    let (second, machine) = (suite::record("r2", "s1", 2), suite::machine());
    let (committed, created) = tokio::join!(
        store.commit(commit),
        store.create_run(&second, &[], &machine),
    );
    committed.unwrap();
    created.unwrap();
    release.await.unwrap();
    let log = store.read_events(&run, 0, None).await.unwrap();
    assert_eq!(suite::seqs(&log), vec![1, 2, 3]);
}

#[tokio::test]
async fn connect_opens_sqlite_from_a_url_or_a_path() {
    let db = TestDb::new();
    let store: Arc<dyn FullStore> = weft_store::connect(&db.url()).await.unwrap();
    let runs: Arc<dyn RunStore> = store;
    runs.create_run(&suite::record("r1", "s1", 1), &[], &suite::machine())
        .await
        .unwrap();
    let path = db.dir.path().join("plain.db");
    let plain = weft_store::connect(path.to_str().unwrap()).await.unwrap();
    assert!(plain.load_run(&RunId::new("r1")).await.unwrap().is_none());
    assert!(matches!(
        weft_store::connect("mysql://x").await,
        Err(OpenError::UnsupportedUrl { .. })
    ));
    assert!(matches!(
        weft_store::connect("sqlite::memory:").await,
        Err(OpenError::UnsupportedUrl { .. })
    ));
}

#[tokio::test]
async fn a_commit_refused_by_the_database_is_rolled_back() {
    let db = TestDb::new();
    let store = db.open().await;
    let raw = db.raw().await;
    sqlx::query(
        "CREATE TRIGGER refuse_poison BEFORE INSERT ON run_events WHEN NEW.body LIKE '%poison%' \
         BEGIN SELECT RAISE(ABORT, 'refused by test'); END",
    )
    .execute(&raw)
    .await
    .unwrap();
    suite::runs::a_commit_refused_by_the_database_is_rolled_back(&store).await;
}

#[async_trait::async_trait]
impl suite::snapshots::RawSql for sqlx::SqlitePool {
    async fn execute(&self, sql: &str) -> u64 {
        sqlx::query(sql)
            .execute(self)
            .await
            .unwrap()
            .rows_affected()
    }

    async fn int(&self, sql: &str) -> i64 {
        sqlx::query_as::<_, (i64,)>(sql)
            .fetch_one(self)
            .await
            .unwrap()
            .0
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_store_on_the_file_continues_a_run_and_a_reopened_one_too() {
    let db = TestDb::new();
    let (first, second) = (db.open().await, db.open().await);
    let mut run = suite::snapshots::another_store_continues_the_run(&first, &second).await;
    first.close().await;
    second.close().await;
    let reopened = db.open().await;
    run.assert_loads(&reopened).await;
    run.commit_turns(&reopened, 3).await;
    run.assert_loads(&reopened).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stored_head_does_not_grow_with_the_run() {
    let db = TestDb::new();
    let mut options = weft_store::SqliteOptions::new(db.dir.path().join("weft.db"));
    options.synchronous = weft_store::Synchronous::Normal;
    let store = SqliteStore::open_with(options).await.unwrap();
    suite::snapshots::the_stored_head_does_not_grow_with_the_run(&store, &db.raw().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_or_extra_snapshot_part_is_corrupt() {
    let db = TestDb::new();
    let store = db.open().await;
    suite::snapshots::a_lost_or_extra_part_is_corrupt(&store, &db.raw().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_snapshot_from_before_parts_still_loads() {
    let db = TestDb::new();
    let (first, second) = (db.open().await, db.open().await);
    suite::snapshots::a_whole_snapshot_from_before_parts_still_loads(
        &first,
        &second,
        &db.raw().await,
    )
    .await;
}

#[tokio::test]
async fn durability_sets_the_sync_mode_and_commits_survive_reopening_in_both() {
    use weft_store::{Durability, SqliteOptions};
    let db = TestDb::new();
    let store = db.open().await;
    assert_eq!(store.durability().await.unwrap(), Durability::Sync);
    store.close().await;
    // A URL's own `synchronous=` is kept unless a durability is asked for.
    let normal = format!("{}?synchronous=normal", db.url());
    let from_url = SqliteOptions::from_url(&normal).unwrap();
    let store = SqliteStore::open_with(from_url.clone()).await.unwrap();
    assert_eq!(store.durability().await.unwrap(), Durability::Process);
    store.close().await;
    let store = SqliteStore::open_with(from_url.with_durability(Durability::Sync))
        .await
        .unwrap();
    assert_eq!(store.durability().await.unwrap(), Durability::Sync);
    store.close().await;

    let process = SqliteOptions::from_url(&db.url())
        .unwrap()
        .with_durability(Durability::Process);
    let store = SqliteStore::open_with(process).await.unwrap();
    assert_eq!(store.durability().await.unwrap(), Durability::Process);
    stores_a_run_that_survives_reopening(&db, store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn process_durability_checkpoints_off_the_commit_path() {
    use std::time::{Duration, Instant};
    use weft_store::{Durability, SqliteOptions};

    let db = TestDb::new();
    // With a sync per commit, SQLite checkpoints inside commits.
    let sync = db.open().await;
    assert_eq!(sync.checkpoint_stats(), None);
    sync.close().await;

    let process = SqliteOptions::from_url(&db.url())
        .unwrap()
        .with_durability(Durability::Process);
    let store = SqliteStore::open_with(process).await.unwrap();
    assert_eq!(
        store.checkpoint_stats().unwrap(),
        weft_store::CheckpointStats::default()
    );
    // 1,200 commits: past the commits between two checkpoint requests.
    suite::runs::commit_concurrently(&store, 4, 300).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let stats = loop {
        let stats = store.checkpoint_stats().unwrap();
        if stats.checkpoints >= 1 {
            break stats;
        }
        assert!(
            Instant::now() < deadline,
            "no checkpoint ran in the background: {stats:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(stats.largest_wal_frames > 0, "{stats:?}");
    // Commits after a checkpoint (into a WAL that starts over) stay whole.
    stores_a_run_that_survives_reopening(&db, store).await;
}

/// Stores run `r1` through `store`, closes it, and reads the run's events
/// back through a store opened anew on the same file.
async fn stores_a_run_that_survives_reopening(db: &TestDb, store: SqliteStore) {
    suite::stored_run(&store, suite::record("r1", "s1", 1), 3).await;
    store.close().await;
    let reopened = db.open().await;
    assert_eq!(
        reopened
            .read_events(&RunId::new("r1"), 0, None)
            .await
            .unwrap(),
        suite::events(1, 3)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_pages_past_corrupt_rows() {
    let db = TestDb::new();
    let store = db.open().await;
    suite::corrupt::a_listing_pages_past_corrupt_rows(&store, &db.raw().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_state_cannot_be_read_is_quarantined() {
    let db = TestDb::new();
    let store = db.open().await;
    suite::corrupt::a_run_whose_state_cannot_be_read_is_quarantined(&store, &db.raw().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_session_spoils_only_itself() {
    let db = TestDb::new();
    let store = db.open().await;
    suite::corrupt_sessions::a_corrupt_session_spoils_only_itself(&store, &db.raw().await).await;
}
