//! Corrupt rows, written with raw SQL into the server's SQLite file: a run
//! whose labels or snapshot do not decode spoils only itself. The list
//! marks it in `skipped` and pages on past it; reading it is a typed
//! `corrupt-run` problem for its tenant and a plain 404 for another; a
//! running one is quarantined (failed, reason `corrupt_state`) at its first
//! recovery and never retried; cancelling one answers 409; an awaiting or
//! paused one gives its place in the unfinished-runs quota back when the
//! quota is full. A session whose labels do not decode is marked the same
//! way in the session list and is a typed `corrupt-session` problem for
//! its own tenant only.

mod common;

use std::collections::HashSet;

use axum::http::StatusCode;
use common::{Fixture, TOKEN_A, TOKEN_B};
use serde_json::json;
use weft_server::TenantQuotas;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_runs_nobody_controls_give_their_quota_places_back() {
    let (mut f, raw) = fixture().await;
    f.state = f.state.clone().with_tenant_quotas(TenantQuotas {
        max_unfinished_runs: std::num::NonZeroU32::new(3),
        ..TenantQuotas::default()
    });
    // Three unfinished runs that cannot be read and that no sweep claims:
    // awaiting with an unreadable state, paused with one, awaiting with
    // labels that do not decode.
    let mut bad = Vec::new();
    for _ in 0..3 {
        let run = f.start(TOKEN_A, "ask", None).await;
        f.wait_status(TOKEN_A, &run, "awaiting").await;
        bad.push(run);
    }
    sql(&raw, BAD_SNAPSHOT, &bad[0]).await;
    sql(&raw, BAD_SNAPSHOT, &bad[1]).await;
    sql(
        &raw,
        "UPDATE runs SET status = 'paused' WHERE run_id = $1",
        &bad[1],
    )
    .await;
    sql(&raw, BAD_LABELS, &bad[2]).await;
    for run in &bad {
        let r = f.get(&format!("/v1/runs/{run}"), TOKEN_A).await;
        assert_eq!(r.body["type"], "urn:weft:problem:corrupt-run", "{}", r.body);
    }

    // The tenant still starts as many runs as its quota allows.
    let mut good = Vec::new();
    for n in 0..3 {
        let r = f
            .post("/v1/runs", TOKEN_A, json!({"agent": "ask", "input": "go"}))
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "start {n}: {}", r.body);
        good.push(r.body["run_id"].as_str().unwrap().to_owned());
    }
    for run in &bad {
        assert_eq!(
            stored(&raw, run).await,
            ("failed".to_owned(), Some("corrupt_state".to_owned())),
            "{run}"
        );
    }
    // The quota holds for the readable ones: a fourth start is refused,
    // and none of them was quarantined for it.
    for run in &good {
        f.wait_status(TOKEN_A, run, "awaiting").await;
    }
    let r = f
        .post("/v1/runs", TOKEN_A, json!({"agent": "ask", "input": "go"}))
        .await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.body);
    for run in &good {
        assert_eq!(stored(&raw, run).await, ("awaiting".to_owned(), None));
    }
}

const BAD_SESSION_LABELS: &str =
    r#"UPDATE sessions SET labels = '{"weft.tenant":"tenant-a","n":5}' WHERE session_id = $1"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_labels_do_not_decode_spoils_only_itself() {
    let (f, raw) = fixture().await;
    let mut sessions = Vec::new();
    for _ in 0..4 {
        sessions.push(f.session(TOKEN_A).await);
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    f.session(TOKEN_B).await;
    let bad = sessions[1].clone();
    sql(&raw, BAD_SESSION_LABELS, &bad).await;

    // The list: three sessions and the corrupt one marked.
    let r = f.get("/v1/sessions", TOKEN_A).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        r.body["sessions"].as_array().unwrap().len(),
        3,
        "{}",
        r.body
    );
    assert_eq!(r.body["skipped"][0]["session_id"], json!(bad), "{}", r.body);
    assert_eq!(r.body["skipped"][0]["corrupt"], json!(true));
    assert!(
        r.body["skipped"][0]["error"]
            .as_str()
            .unwrap()
            .contains("labels")
    );
    // Pages of one reach every row, the corrupt one included once.
    let mut seen = Vec::new();
    let mut path = "/v1/sessions?limit=1".to_owned();
    for _ in 0..10 {
        let r = f.get(&path, TOKEN_A).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        for key in ["sessions", "skipped"] {
            for entry in r.body[key].as_array().into_iter().flatten() {
                seen.push(entry["session_id"].as_str().unwrap().to_owned());
            }
        }
        match r.body["next_cursor"].as_str() {
            Some(c) => path = format!("/v1/sessions?limit=1&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(
        seen.iter().collect::<HashSet<_>>(),
        sessions.iter().collect::<HashSet<_>>()
    );
    assert_eq!(seen.len(), 4, "{seen:?}");
    // The other tenant's list is untouched.
    let r = f.get("/v1/sessions", TOKEN_B).await;
    assert_eq!(
        r.body["sessions"].as_array().unwrap().len(),
        1,
        "{}",
        r.body
    );
    assert!(r.body.get("skipped").is_none(), "{}", r.body);

    // Its tenant gets a typed problem naming it, reading it or starting a
    // run on it; the other tenant a 404 exactly like an unknown session's.
    for r in [
        f.get(&format!("/v1/sessions/{bad}"), TOKEN_A).await,
        f.post(
            "/v1/runs",
            TOKEN_A,
            json!({"agent": "ask", "input": "go", "session_id": bad}),
        )
        .await,
    ] {
        assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR, "{}", r.body);
        assert_eq!(r.content_type(), "application/problem+json");
        assert_eq!(
            r.body["type"], "urn:weft:problem:corrupt-session",
            "{}",
            r.body
        );
        assert!(
            r.body["detail"].as_str().unwrap().contains(&bad),
            "{}",
            r.body
        );
    }
    let theirs = f.get(&format!("/v1/sessions/{bad}"), TOKEN_B).await;
    let unknown = f.get("/v1/sessions/ses_unknown", TOKEN_B).await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND);
    assert_eq!(theirs.body["type"], unknown.body["type"]);
    assert_eq!(
        theirs.body["detail"].as_str().unwrap().replace(&bad, "ID"),
        unknown.body["detail"]
            .as_str()
            .unwrap()
            .replace("ses_unknown", "ID")
    );
    let r = f
        .post(&format!("/v1/sessions/{bad}/end"), TOKEN_B, json!({}))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    // The other sessions read, and take runs, as ever.
    let r = f
        .get(&format!("/v1/sessions/{}", sessions[0]), TOKEN_A)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    f.start(TOKEN_A, "ask", Some(&sessions[0])).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ending_a_session_cancels_its_run_that_cannot_be_read() {
    let (f, raw) = fixture().await;
    let session = f.session(TOKEN_A).await;
    let bad = f.start(TOKEN_A, "ask", Some(&session)).await;
    let fine = f.start(TOKEN_A, "ask", Some(&session)).await;
    f.wait_status(TOKEN_A, &bad, "awaiting").await;
    f.wait_status(TOKEN_A, &fine, "awaiting").await;
    sql(&raw, BAD_LABELS, &bad).await;
    let r = f
        .post(&format!("/v1/sessions/{session}/end"), TOKEN_A, json!({}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["cancelled_runs"], json!([fine]), "{}", r.body);
    assert_eq!(r.body["uncancelled_runs"], json!([]), "{}", r.body);
    assert_eq!(
        stored(&raw, &bad).await,
        ("failed".to_owned(), Some("corrupt_state".to_owned()))
    );
}
