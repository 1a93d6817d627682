//! Corrupt rows, written with raw SQL into the server's SQLite file: a run
//! whose labels or snapshot do not decode spoils only itself. The list
//! marks it in `skipped` and pages on past it; reading it is a typed
//! `corrupt-run` problem for its tenant and a plain 404 for another; a
//! running one is quarantined (failed, reason `corrupt_state`) at its first
//! recovery and never retried; cancelling one answers 409.

mod common;

use std::collections::HashSet;

use axum::http::StatusCode;
use common::{Fixture, TOKEN_A, TOKEN_B};
use serde_json::json;

/// A fixture over a fresh SQLite file, and a raw pool on that file.
async fn fixture() -> (Fixture, sqlx::SqlitePool) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("weft.db").display());
    let store = weft_store::connect(&url).await.unwrap();
    let raw = sqlx::SqlitePool::connect(&url).await.unwrap();
    (Fixture::over(store, Some(dir)), raw)
}

async fn sql(raw: &sqlx::SqlitePool, statement: &str, run_id: &str) {
    let changed = sqlx::query(statement)
        .bind(run_id)
        .execute(raw)
        .await
        .unwrap()
        .rows_affected();
    assert_eq!(changed, 1, "{statement}");
}

/// The run's stored status and quarantine reason.
async fn stored(raw: &sqlx::SqlitePool, run_id: &str) -> (String, Option<String>) {
    sqlx::query_as("SELECT status, quarantined FROM runs WHERE run_id = $1")
        .bind(run_id)
        .fetch_one(raw)
        .await
        .unwrap()
}

const BAD_LABELS: &str =
    r#"UPDATE runs SET labels = '{"weft.tenant":"tenant-a","n":5}' WHERE run_id = $1"#;
const BAD_SNAPSHOT: &str = r#"UPDATE runs SET snapshot = '{"format":1,"x":0}' WHERE run_id = $1"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_labels_do_not_decode_spoils_only_itself() {
    let (f, raw) = fixture().await;
    let mut runs = Vec::new();
    for _ in 0..5 {
        runs.push(f.start(TOKEN_A, "ask", None).await);
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    f.start(TOKEN_B, "ask", None).await;
    let bad = runs[2].clone();
    sql(&raw, BAD_LABELS, &bad).await;

    // The whole list: four runs and the corrupt one marked.
    let r = f.get("/v1/runs", TOKEN_A).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["runs"].as_array().unwrap().len(), 4, "{}", r.body);
    assert_eq!(r.body["skipped"][0]["run_id"], json!(bad), "{}", r.body);
    assert_eq!(r.body["skipped"][0]["corrupt"], json!(true));
    assert!(
        r.body["skipped"][0]["error"]
            .as_str()
            .unwrap()
            .contains("labels")
    );

    // Pages of two reach every row, the corrupt one included once.
    let mut seen = Vec::new();
    let mut path = "/v1/runs?limit=2".to_owned();
    for _ in 0..10 {
        let r = f.get(&path, TOKEN_A).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        for key in ["runs", "skipped"] {
            for entry in r.body[key].as_array().into_iter().flatten() {
                seen.push(entry["run_id"].as_str().unwrap().to_owned());
            }
        }
        match r.body["next_cursor"].as_str() {
            Some(c) => path = format!("/v1/runs?limit=2&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(seen.len(), 5, "{seen:?}");
    assert_eq!(
        seen.iter().collect::<HashSet<_>>(),
        runs.iter().collect::<HashSet<_>>()
    );

    // Its tenant gets a typed problem naming it; the other tenant a 404
    // exactly like an unknown run's.
    let r = f.get(&format!("/v1/runs/{bad}"), TOKEN_A).await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(r.content_type(), "application/problem+json");
    assert_eq!(r.body["type"], "urn:weft:problem:corrupt-run", "{}", r.body);
    assert!(
        r.body["detail"].as_str().unwrap().contains(&bad),
        "{}",
        r.body
    );
    let theirs = f.get(&format!("/v1/runs/{bad}"), TOKEN_B).await;
    let unknown = f.get("/v1/runs/run_unknown", TOKEN_B).await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND);
    assert_eq!(theirs.body["type"], unknown.body["type"]);
    assert_eq!(
        theirs.body["detail"].as_str().unwrap().replace(&bad, "ID"),
        unknown.body["detail"]
            .as_str()
            .unwrap()
            .replace("run_unknown", "ID")
    );
    let r = f
        .post(&format!("/v1/runs/{bad}/cancel"), TOKEN_B, json!({}))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    // The other runs read as ever.
    let r = f.get(&format!("/v1/runs/{}", runs[1]), TOKEN_A).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_run_whose_state_cannot_be_read_is_quarantined_once() {
    let (f, raw) = fixture().await;
    let run = f.start(TOKEN_A, "ask", None).await;
    f.wait_status(TOKEN_A, &run, "awaiting").await;
    // Left running with nobody holding it, as after a crash, and unreadable.
    sql(&raw, BAD_SNAPSHOT, &run).await;
    sql(
        &raw,
        "UPDATE runs SET status = 'running', lease_owner = NULL, lease_expires = 0 WHERE run_id = $1",
        &run,
    )
    .await;
    let runtime = &f.state.runtime;
    assert_eq!(runtime.recover_unfinished().await.unwrap(), 0);
    assert_eq!(
        stored(&raw, &run).await,
        ("failed".to_owned(), Some("corrupt_state".to_owned()))
    );
    // Out of the unfinished runs, and never claimed again.
    let r = f
        .get("/v1/runs?status=running,awaiting,paused", TOKEN_A)
        .await;
    assert_eq!(r.body["runs"], json!([]), "{}", r.body);
    assert!(r.body.get("skipped").is_none(), "{}", r.body);
    let (epoch,): (i64,) = sqlx::query_as("SELECT lease_epoch FROM runs WHERE run_id = $1")
        .bind(&run)
        .fetch_one(&raw)
        .await
        .unwrap();
    assert_eq!(runtime.recover_unfinished().await.unwrap(), 0);
    let (again,): (i64,) = sqlx::query_as("SELECT lease_epoch FROM runs WHERE run_id = $1")
        .bind(&run)
        .fetch_one(&raw)
        .await
        .unwrap();
    assert_eq!(again, epoch, "the quarantined run was claimed again");

    // Its tenant reads why; a cancel answers that it has ended.
    let r = f.get(&format!("/v1/runs/{run}"), TOKEN_A).await;
    assert_eq!(r.body["type"], "urn:weft:problem:corrupt-run", "{}", r.body);
    assert!(r.body["detail"].as_str().unwrap().contains("corrupt_state"));
    let r = f.control(&run, "cancel").await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert!(r.body["detail"].as_str().unwrap().contains("corrupt_state"));
    assert_eq!(stored(&raw, &run).await.0, "failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_an_awaiting_run_whose_state_cannot_be_read_ends_it() {
    let (f, raw) = fixture().await;
    let run = f.start(TOKEN_A, "ask", None).await;
    f.wait_status(TOKEN_A, &run, "awaiting").await;
    sql(&raw, BAD_SNAPSHOT, &run).await;
    let r = f.get(&format!("/v1/runs/{run}"), TOKEN_A).await;
    assert_eq!(r.body["type"], "urn:weft:problem:corrupt-run", "{}", r.body);
    let r = f.control(&run, "cancel").await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert_eq!(r.content_type(), "application/problem+json");
    assert_eq!(
        stored(&raw, &run).await,
        ("failed".to_owned(), Some("corrupt_state".to_owned()))
    );
    // A second cancel says the same, without touching the run.
    let r = f.control(&run, "cancel").await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
}
