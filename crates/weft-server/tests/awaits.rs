//! Await answers over HTTP: each kind of bad answer is rejected with the
//! runtime's message and leaves the run awaiting; good answers complete it.

mod common;

use axum::http::StatusCode;
use common::{Fixture, TOKEN_A, clarification, scenarios};
use serde_json::json;

#[tokio::test]
async fn bad_answers_are_rejected_and_the_run_stays_awaiting() {
    scenarios::bad_answers(&Fixture::new().await).await;
}

#[tokio::test]
async fn pause_resume_and_cancel_an_awaiting_run() {
    let f = Fixture::new().await;
    let run = f.start(TOKEN_A, "ask", None).await;
    f.wait_status(TOKEN_A, &run, "awaiting").await;
    let r = f.control(&run, "pause").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["paused"], true);
    // Pausing twice is a conflict.
    let r = f.control(&run, "pause").await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    // A paused run takes no answers.
    let r = f
        .post(
            &format!("/v1/runs/{run}/answers"),
            TOKEN_A,
            clarification("why", "x"),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    let r = f.control(&run, "continue").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["paused"], false);
    assert_eq!(r.body["status"], "awaiting");
    let r = f
        .post(
            &format!("/v1/runs/{run}/cancel"),
            TOKEN_A,
            json!({"reason": "changed my mind"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["status"], "cancelled");
    assert_eq!(r.body["outcome"]["reason"], "changed my mind");
    let r = f.control(&run, "cancel").await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
}

#[tokio::test]
async fn a_driven_run_is_cancelled_by_ending_its_session() {
    let f = Fixture::new().await;
    let s = f.session(TOKEN_A).await;
    let run = f.start(TOKEN_A, "slow", Some(&s)).await;
    f.wait_phase(TOKEN_A, &run, "executing").await;
    let r = f
        .post(&format!("/v1/sessions/{s}/end"), TOKEN_A, json!({}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["cancelled_runs"], json!([run]));
    let view = f.wait_status(TOKEN_A, &run, "cancelled").await;
    assert_eq!(view["outcome"]["kind"], "cancelled");
}

#[tokio::test]
async fn a_driven_run_pauses_at_its_next_step_and_resumes() {
    let f = Fixture::new().await;
    let run = f.start(TOKEN_A, "nap", None).await;
    f.wait_phase(TOKEN_A, &run, "executing").await;
    let r = f.control(&run, "pause").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // The tool call completes first; then the run pauses.
    let paused = f.wait_status(TOKEN_A, &run, "paused").await;
    assert_eq!(paused["paused"], true);
    assert!(paused.get("outcome").is_none());
    let r = f.control(&run, "continue").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let done = f.wait_status(TOKEN_A, &run, "completed").await;
    assert_eq!(done["outcome"]["message"]["parts"][0]["text"], "rested");
}
