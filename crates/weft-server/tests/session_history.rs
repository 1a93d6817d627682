//! Sessions through the API: a run started in a session starts from the
//! session's earlier runs (a run in another session does not), and a
//! deleted session refuses new runs.

mod common;

use axum::http::{Method, StatusCode};
use common::{Fixture, TOKEN_A, TOKEN_B};
use serde_json::json;

#[tokio::test]
async fn a_run_in_a_session_answers_from_the_session_history() {
    let f = Fixture::new().await;
    let session = f.session(TOKEN_A).await;
    let ask = |input: &'static str, session: String| {
        let f = &f;
        async move {
            let body = json!({"agent": "recall", "session_id": session, "input": input});
            let r = f.post("/v1/runs", TOKEN_A, body).await;
            assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
            let run = r.body["run_id"].as_str().unwrap().to_owned();
            let view = f.wait_status(TOKEN_A, &run, "completed").await;
            view["outcome"]["message"]["parts"][0]["text"]
                .as_str()
                .unwrap_or_else(|| panic!("no text answer: {view}"))
                .to_owned()
        }
    };
    let first = ask("the door code is 1234", session.clone()).await;
    assert_eq!(first, "noted: the door code is 1234");
    let second = ask("what did you note?", session.clone()).await;
    assert_eq!(second, "earlier I said \"noted: the door code is 1234\"");
    // A new session starts from nothing.
    let other = f.session(TOKEN_A).await;
    assert_eq!(ask("hello", other).await, "noted: hello");
}

#[tokio::test]
async fn deleting_a_session_ends_it_and_refuses_new_runs() {
    let f = Fixture::new().await;
    let session = f.session(TOKEN_A).await;
    let run = f.start(TOKEN_A, "ask", Some(&session)).await;
    f.wait_status(TOKEN_A, &run, "awaiting").await;
    let path = format!("/v1/sessions/{session}");
    let r = f.call(Method::DELETE, &path, Some(TOKEN_B), None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "another tenant's session");
    let r = f.call(Method::DELETE, &path, Some(TOKEN_A), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["cancelled_runs"], json!([run]));
    assert!(r.body["session"]["ended_at"].is_u64());
    f.wait_status(TOKEN_A, &run, "cancelled").await;
    let body = json!({"agent": "recall", "session_id": session, "input": "x"});
    let r = f.post("/v1/runs", TOKEN_A, body).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
}
