//! The store suite against the local PostgreSQL, each test in a fresh schema
//! that is dropped afterwards, plus PostgreSQL's own tests: connections
//! terminated under load, a newer schema, a snapshot in an unknown format.
//!
//! The server is `WEFT_TEST_POSTGRES_URL`, by default
//! `postgres://postgres@127.0.0.1:5432/test`. When it is unreachable the
//! tests fail and say how to start it.

mod suite;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::{Connection, PgConnection};
use weft_core::RunId;
use weft_core::store::{Commit, RunStatus, RunStore, StoreError};
use weft_core::{SessionId, Timestamp};
use weft_store::{PostgresOptions, PostgresStore};

const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

fn url() -> String {
    std::env::var("WEFT_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned())
}

/// A connection to the test server, or a failure that says how to start it.
async fn raw() -> PgConnection {
    let url = url();
    match PgConnection::connect(&url).await {
        Ok(conn) => conn,
        Err(e) => panic!(
            "PostgreSQL is not reachable at {url}: {e}\n\
             Start the local server with:\n    \
             pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start\n\
             or point WEFT_TEST_POSTGRES_URL at another server."
        ),
    }
}

/// A uniquely named schema holding one test's tables.
struct TestDb {
    schema: String,
}

impl TestDb {
    async fn new() -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        raw().await.close().await.unwrap();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let schema = format!(
            "weft_test_{}_{}_{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        Self { schema }
    }

    fn options(&self) -> PostgresOptions {
        let mut options = PostgresOptions::new(url()).with_schema(&self.schema);
        options.application_name = self.schema.clone();
        options
    }

    async fn open(&self) -> PostgresStore {
        PostgresStore::open_with(self.options()).await.unwrap()
    }

    /// A raw connection working in this schema.
    async fn raw(&self) -> PgConnection {
        let mut conn = raw().await;
        sqlx::query(&format!("SET search_path TO \"{}\"", self.schema))
            .execute(&mut conn)
            .await
            .unwrap();
        conn
    }

    async fn drop_schema(self) {
        let mut conn = raw().await;
        sqlx::query(&format!(
            "DROP SCHEMA IF EXISTS \"{}\" CASCADE",
            self.schema
        ))
        .execute(&mut conn)
        .await
        .unwrap();
    }
}

/// Runs `test` with a store in a fresh schema, and drops the schema even
/// when the test fails.
async fn with_store<F, Fut>(test: F)
where
    F: FnOnce(Arc<PostgresStore>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let db = TestDb::new().await;
    let store = Arc::new(db.open().await);
    let outcome = tokio::spawn(test(store.clone())).await;
    store.close().await;
    db.drop_schema().await;
    if let Err(e) = outcome {
        std::panic::resume_unwind(e.into_panic());
    }
}

/// Runs `test` with a fresh schema, and drops the schema even when the
/// test fails.
async fn with_db<F, Fut>(test: F)
where
    F: FnOnce(TestDb) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let db = TestDb::new().await;
    let schema = db.schema.clone();
    let outcome = tokio::spawn(test(db)).await;
    TestDb { schema }.drop_schema().await;
    if let Err(e) = outcome {
        std::panic::resume_unwind(e.into_panic());
    }
}

/// A raw connection for the snapshot tests.
struct Raw(tokio::sync::Mutex<PgConnection>);

#[async_trait::async_trait]
impl suite::snapshots::RawSql for Raw {
    async fn execute(&self, sql: &str) -> u64 {
        let mut conn = self.0.lock().await;
        sqlx::query(sql)
            .execute(&mut *conn)
            .await
            .unwrap()
            .rows_affected()
    }

    async fn int(&self, sql: &str) -> i64 {
        let mut conn = self.0.lock().await;
        sqlx::query_as::<_, (i64,)>(sql)
            .fetch_one(&mut *conn)
            .await
            .unwrap()
            .0
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_store_on_the_database_continues_a_run_and_a_reopened_one_too() {
    with_db(|db| async move {
        let (first, second) = (db.open().await, db.open().await);
        let mut run = suite::snapshots::another_store_continues_the_run(&first, &second).await;
        first.close().await;
        second.close().await;
        let reopened = db.open().await;
        run.assert_loads(&reopened).await;
        run.commit_turns(&reopened, 3).await;
        run.assert_loads(&reopened).await;
        reopened.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stored_head_does_not_grow_with_the_run() {
    with_db(|db| async move {
        let store = db.open().await;
        let raw = Raw(tokio::sync::Mutex::new(db.raw().await));
        suite::snapshots::the_stored_head_does_not_grow_with_the_run(&store, &raw).await;
        store.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_or_extra_snapshot_part_is_corrupt() {
    with_db(|db| async move {
        let store = db.open().await;
        let raw = Raw(tokio::sync::Mutex::new(db.raw().await));
        suite::snapshots::a_lost_or_extra_part_is_corrupt(&store, &raw).await;
        store.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_snapshot_from_before_parts_still_loads() {
    with_db(|db| async move {
        let (first, second) = (db.open().await, db.open().await);
        let raw = Raw(tokio::sync::Mutex::new(db.raw().await));
        suite::snapshots::a_whole_snapshot_from_before_parts_still_loads(&first, &second, &raw)
            .await;
        first.close().await;
        second.close().await;
    })
    .await;
}

macro_rules! postgres_tests {
    ($($module:ident :: $name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                with_store(|store| async move { suite::$module::$name(&*store).await }).await;
            }
        )*
    };
}

for_each_suite_test!(postgres_tests);

/// Every backend connection of the store is terminated, several times, while
/// commits are in flight; every commit still lands, and every log is complete
/// and gap-free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_land_when_connections_are_terminated_under_load() {
    const RUNS: u64 = 6;
    const STEPS: u64 = 60;
    let db = TestDb::new().await;
    let mut options = db.options();
    options.max_connections = 4;
    let store = Arc::new(PostgresStore::open_with(options).await.unwrap());
    let snapshot = suite::driven_machine();
    for r in 0..RUNS {
        let rec = suite::record(&format!("run-{r}"), "s1", r);
        store
            .create_run(&rec, &suite::events(1, 1), &snapshot)
            .await
            .unwrap();
    }

    let writers: Vec<_> = (0..RUNS)
        .map(|r| {
            let store = store.clone();
            let snapshot = snapshot.clone();
            tokio::spawn(async move {
                let run_id = RunId::new(format!("run-{r}"));
                for step in 0..STEPS {
                    let events = suite::events(2 + step, 2 + step);
                    store
                        .commit(Commit {
                            run_id: &run_id,
                            events: &events,
                            snapshot: Some(&snapshot),
                            status: RunStatus::Running,
                            now: Timestamp::from_millis(step),
                            fence: None,
                        })
                        .await
                        .unwrap_or_else(|e| panic!("commit {step} of {run_id} failed: {e}"));
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            })
        })
        .collect();

    let killer = {
        let app = db.schema.clone();
        tokio::spawn(async move {
            let mut conn = raw().await;
            let mut terminated = 0i64;
            for _ in 0..5 {
                tokio::time::sleep(Duration::from_millis(120)).await;
                let (n,): (i64,) = sqlx::query_as(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE datname = current_database() AND pid <> pg_backend_pid() \
                     AND application_name = $1",
                )
                .bind(&app)
                .fetch_one(&mut conn)
                .await
                .unwrap();
                terminated += n;
            }
            terminated
        })
    };

    let mut failure = None;
    for w in writers {
        if let Err(e) = w.await {
            failure.get_or_insert(e);
        }
    }
    let terminated = killer.await.unwrap();
    let check = store.clone();
    let result = async move {
        let store = check;
        if let Some(e) = failure {
            std::panic::resume_unwind(e.into_panic());
        }
        assert!(
            terminated > 0,
            "no backend was terminated: the test proved nothing"
        );
        for r in 0..RUNS {
            let run_id = RunId::new(format!("run-{r}"));
            let got = store.read_events(&run_id, 0, None).await.unwrap();
            assert_eq!(
                suite::seqs(&got),
                (1..=1 + STEPS).collect::<Vec<_>>(),
                "log of {run_id}"
            );
            let loaded = store.load_run(&run_id).await.unwrap().unwrap();
            assert_eq!(loaded.record.updated_at, Timestamp::from_millis(STEPS - 1));
        }
    };
    let outcome = tokio::spawn(async move {
        result.await;
    })
    .await;
    store.close().await;
    db.drop_schema().await;
    if let Err(e) = outcome {
        std::panic::resume_unwind(e.into_panic());
    }
}

#[tokio::test]
async fn a_newer_schema_is_refused() {
    let db = TestDb::new().await;
    db.open().await.close().await;
    let mut raw = db.raw().await;
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (99991231000000, 'from the future', TRUE, '\\x00', 0)",
    )
    .execute(&mut raw)
    .await
    .unwrap();
    let err = PostgresStore::open_with(db.options()).await.unwrap_err();
    db.drop_schema().await;
    suite::assert_too_new(&err);
}

#[tokio::test]
async fn a_snapshot_in_an_unknown_format_is_corrupt() {
    let db = TestDb::new().await;
    let store = db.open().await;
    store
        .create_run(&suite::record("r1", "s1", 1), &[], &suite::machine())
        .await
        .unwrap();
    let mut raw = db.raw().await;
    sqlx::query("UPDATE runs SET snapshot = replace(snapshot, '\"format\":1', '\"format\":7')")
        .execute(&mut raw)
        .await
        .unwrap();
    let err = store.load_run(&RunId::new("r1")).await.unwrap_err();
    store.close().await;
    db.drop_schema().await;
    let StoreError::Corrupt { message } = &err else {
        panic!("expected Corrupt, got {err:?}");
    };
    assert!(message.contains("format version 7"), "{message}");
}

#[tokio::test]
async fn connect_opens_postgres_from_a_url() {
    let db = TestDb::new().await;
    let sep = if url().contains('?') { '&' } else { '?' };
    let store = weft_store::connect(&format!("{}{sep}schema={}", url(), db.schema)).await;
    let outcome = match store {
        Ok(store) => store
            .get_session(&SessionId::new("nope"))
            .await
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    db.drop_schema().await;
    assert_eq!(outcome, Ok(None));
}

#[tokio::test]
async fn a_commit_refused_by_the_database_is_rolled_back() {
    let db = TestDb::new().await;
    let store = Arc::new(db.open().await);
    let mut raw = db.raw().await;
    for sql in [
        "CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
         IF NEW.body LIKE '%poison%' THEN RAISE EXCEPTION 'refused by test'; END IF; RETURN NEW; END $$",
        "CREATE TRIGGER refuse_poison BEFORE INSERT ON run_events FOR EACH ROW EXECUTE FUNCTION refuse_poison()",
    ] {
        sqlx::query(sql).execute(&mut raw).await.unwrap();
    }
    let s = store.clone();
    let outcome = tokio::spawn(async move {
        suite::runs::a_commit_refused_by_the_database_is_rolled_back(&*s).await
    })
    .await;
    store.close().await;
    db.drop_schema().await;
    if let Err(e) = outcome {
        std::panic::resume_unwind(e.into_panic());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn process_durability_turns_synchronous_commit_off_for_weft_alone() {
    use weft_store::Durability;
    with_db(|db| async move {
        let store = db.open().await;
        assert_eq!(store.durability().await.unwrap(), Durability::Sync);
        store.close().await;
        let mut options = db.options();
        options.durability = Durability::Process;
        let store = PostgresStore::open_with(options).await.unwrap();
        assert_eq!(store.durability().await.unwrap(), Durability::Process);
        // A session of its own, not the server's setting.
        let mut raw = db.raw().await;
        let (other,): (String,) = sqlx::query_as("SHOW synchronous_commit")
            .fetch_one(&mut raw)
            .await
            .unwrap();
        assert_ne!(other, "off");
        store.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_pages_past_corrupt_rows() {
    with_db(|db| async move {
        let store = db.open().await;
        let raw = Raw(tokio::sync::Mutex::new(db.raw().await));
        suite::corrupt::a_listing_pages_past_corrupt_rows(&store, &raw).await;
        store.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_state_cannot_be_read_is_quarantined() {
    with_db(|db| async move {
        let store = db.open().await;
        let raw = Raw(tokio::sync::Mutex::new(db.raw().await));
        suite::corrupt::a_run_whose_state_cannot_be_read_is_quarantined(&store, &raw).await;
        store.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_session_spoils_only_itself() {
    with_db(|db| async move {
        let store = db.open().await;
        let raw = Raw(tokio::sync::Mutex::new(db.raw().await));
        suite::corrupt_sessions::a_corrupt_session_spoils_only_itself(&store, &raw).await;
        store.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn labels_that_are_not_json_fail_no_list() {
    with_db(|db| async move {
        let store = db.open().await;
        let raw = Raw(tokio::sync::Mutex::new(db.raw().await));
        suite::corrupt_sessions::labels_that_are_not_json_fail_no_list(&store, &raw).await;
        store.close().await;
    })
    .await;
}
