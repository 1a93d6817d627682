//! What one client's input may cost the server: a run's labels are bounded
//! in count, key size and value size (a typed 400 naming the limit); a page
//! of runs is bounded in bytes as well as in rows; and an error repeats at
//! most a short prefix of the input it refuses.

mod common;

use std::collections::HashSet;

use axum::body::Body;
use axum::http::{Method, StatusCode};
use common::{Fixture, TOKEN_A};
use serde_json::{Value, json};

fn labels(count: usize, key_len: usize, value_len: usize) -> Value {
    let map: serde_json::Map<String, Value> = (0..count)
        .map(|i| {
            let key = format!("{i:04}{}", "k".repeat(key_len.saturating_sub(4)));
            (key, json!("v".repeat(value_len)))
        })
        .collect();
    Value::Object(map)
}

async fn start_with(f: &Fixture, labels: Value) -> common::Reply {
    f.post(
        "/v1/runs",
        TOKEN_A,
        json!({"agent": "ask", "input": "go", "labels": labels}),
    )
    .await
}

fn code(r: &common::Reply) -> String {
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(r.content_type(), "application/problem+json");
    r.body["errors"][0]["code"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn labels_past_a_limit_are_a_typed_400_naming_it() {
    let f = Fixture::new().await;
    // At every limit: accepted.
    let r = start_with(&f, labels(64, 128, 1024)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["labels"].as_object().unwrap().len(), 65);

    let r = start_with(&f, labels(65, 8, 8)).await;
    assert_eq!(code(&r), "too_many_labels");
    assert!(
        r.body["detail"].as_str().unwrap().contains("64"),
        "{}",
        r.body
    );
    let r = start_with(&f, labels(1, 129, 8)).await;
    assert_eq!(code(&r), "bad_label_key");
    assert!(
        r.body["detail"].as_str().unwrap().contains("128"),
        "{}",
        r.body
    );
    let r = start_with(&f, labels(1, 8, 1025)).await;
    assert_eq!(code(&r), "label_value_too_long");
    assert!(
        r.body["detail"].as_str().unwrap().contains("1024"),
        "{}",
        r.body
    );
    let r = start_with(&f, json!({"a\"b": "x"})).await;
    assert_eq!(code(&r), "bad_label_key");
    let r = start_with(&f, json!({"weft.tenant": "tenant-b"})).await;
    assert_eq!(code(&r), "reserved_label");

    // A huge key is refused without being repeated.
    let r = start_with(&f, labels(1, 900_000, 1)).await;
    assert_eq!(code(&r), "bad_label_key");
    assert!(
        r.body.to_string().len() < 2_000,
        "{} bytes",
        r.body.to_string().len()
    );
    // Nothing refused was started.
    let r = f.get("/v1/runs", TOKEN_A).await;
    assert_eq!(r.body["runs"].as_array().unwrap().len(), 1);

    // A session's labels have the same limits.
    let r = f
        .post("/v1/sessions", TOKEN_A, json!({"labels": labels(65, 8, 8)}))
        .await;
    assert_eq!(code(&r), "too_many_labels");
    let r = f
        .post(
            "/v1/sessions",
            TOKEN_A,
            json!({"labels": labels(1, 8, 1025)}),
        )
        .await;
    assert_eq!(code(&r), "label_value_too_long");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_sessions_stops_at_its_byte_budget_and_continues() {
    let f = Fixture::new().await;
    let mut created = HashSet::new();
    for _ in 0..60 {
        let body = json!({"labels": labels(64, 64, 1024)});
        let r = f.post("/v1/sessions", TOKEN_A, body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        created.insert(r.body["session_id"].as_str().unwrap().to_owned());
    }
    let (seen, pages) = page_through(&f, "sessions", "session_id").await;
    assert_eq!(pages, 2, "60 sessions of 72 KB take two pages");
    assert_eq!(seen, created);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_runs_stops_at_its_byte_budget_and_continues() {
    let f = Fixture::new().await;
    // About 72 KB of labels each: 60 of them are past 4 MiB.
    let mut started = HashSet::new();
    for _ in 0..60 {
        let r = start_with(&f, labels(64, 64, 1024)).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        started.insert(r.body["run_id"].as_str().unwrap().to_owned());
    }
    let (seen, pages) = page_through(&f, "runs", "run_id").await;
    assert_eq!(pages, 2, "60 runs of 72 KB take two pages");
    assert_eq!(seen, started);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_repeats_at_most_a_short_prefix_of_an_unknown_field() {
    let f = Fixture::new().await;
    let name = "x".repeat(900_000);
    let body = format!(r#"{{"agent": "ask", "input": "go", "{name}": 1}}"#);
    let bytes = body.len();
    let r = f
        .call(
            Method::POST,
            "/v1/runs",
            Some(TOKEN_A),
            Some(Body::from(body)),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bytes}");
    let size = r.body.to_string().len();
    assert!(size < 2_000, "a {size}-byte error for a {bytes}-byte body");
    let detail = r.body["detail"].as_str().unwrap();
    assert!(detail.contains("unknown field `xxxx"), "{detail}");
    // A huge value of the wrong type, too.
    let body = json!({"agent": "ask", "input": "go", "session_id": [name]}).to_string();
    let r = f
        .call(
            Method::POST,
            "/v1/runs",
            Some(TOKEN_A),
            Some(Body::from(body)),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.body.to_string().len() < 2_000);
    // An unknown await item named by a huge id, and an unknown status.
    let run = f.start(TOKEN_A, "ask", None).await;
    f.wait_status(TOKEN_A, &run, "awaiting").await;
    let answer = common::clarification(&name, "x");
    let r = f
        .post(&format!("/v1/runs/{run}/answers"), TOKEN_A, answer)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert!(
        r.body.to_string().len() < 2_000,
        "{} bytes",
        r.body.to_string().len()
    );
    let r = f
        .get(&format!("/v1/runs?status={}", "y".repeat(20_000)), TOKEN_A)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert!(
        r.body.to_string().len() < 2_000,
        "{} bytes",
        r.body.to_string().len()
    );
}

/// Reads `GET /v1/{list}?limit=500` page by page, each page within the
/// byte budget and no id twice; returns the ids seen and the page count.
async fn page_through(f: &Fixture, list: &str, id: &str) -> (HashSet<String>, usize) {
    let (mut seen, mut pages) = (HashSet::new(), 0);
    let mut path = format!("/v1/{list}?limit=500");
    loop {
        let r = f.get(&path, TOKEN_A).await;
        assert_eq!(r.status, StatusCode::OK);
        pages += 1;
        let bytes = r.body.to_string().len();
        assert!(bytes <= (4 << 20) + 4096, "a page of {bytes} bytes");
        for item in r.body[list].as_array().unwrap() {
            assert!(seen.insert(item[id].as_str().unwrap().to_owned()));
        }
        match r.body["next_cursor"].as_str() {
            Some(c) => path = format!("/v1/{list}?limit=500&cursor={c}"),
            None => break,
        }
        assert!(pages < 10);
    }
    (seen, pages)
}
