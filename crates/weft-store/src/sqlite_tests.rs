//! The SQLite store's own tests: the query plans of its lists.

use super::*;

/// What SQLite plans for a tenant's newest-first page of `table`.
async fn plan(store: &SqliteStore, table: &str, id: &str) -> String {
    let sql = crate::paging::ListQuery::new(id, table)
        .and_label_key(LABEL, weft_core::prompt::TENANT_LABEL)
        .newest_first(id);
    let rows: Vec<(i64, i64, i64, String)> = sqlx::query_as(&format!("EXPLAIN QUERY PLAN {sql}"))
        .bind("acme")
        .bind(10i64)
        .fetch_all(store.read_pool())
        .await
        .unwrap();
    rows.into_iter().map(|r| r.3).collect::<Vec<_>>().join("; ")
}

#[tokio::test]
async fn a_tenant_s_lists_read_the_tenant_index_not_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("w.db").display());
    let store = SqliteStore::open(&url).await.unwrap();
    let runs = plan(&store, "runs", "run_id").await;
    assert!(runs.contains("USING INDEX runs_tenant"), "{runs}");
    assert!(!runs.contains("TEMP B-TREE"), "sorted by the index: {runs}");
    let sessions = plan(&store, "sessions", "session_id").await;
    assert!(
        sessions.contains("USING INDEX sessions_tenant"),
        "{sessions}"
    );
}
