//! Await answers over HTTP: each kind of bad answer is rejected with the
//! runtime's message and leaves the run awaiting; good answers complete it.

mod common;

use axum::http::StatusCode;
use common::{Fixture, TOKEN_A};
use serde_json::{Value, json};

fn questions(answers: Value) -> Value {
    json!({"item_id": "pick", "answer": {"kind": "questions", "answers": answers}})
}

#[tokio::test]
async fn bad_answers_are_rejected_and_the_run_stays_awaiting() {
    let f = Fixture::new().await;
    let run = f.start(TOKEN_A, "ask", None).await;
    let view = f.wait_status(TOKEN_A, &run, "awaiting").await;
    assert_eq!(view["phase"], "awaiting");
    assert_eq!(view["await"]["items"][0]["kind"], "questions");
    assert_eq!(view["await"]["answers"], json!([null, null]));
    let answers = format!("/v1/runs/{run}/answers");

    // (body, status, field, code, words in the detail)
    let cases = [
        (
            json!({"item_id": "nope", "answer": {"kind": "clarification", "text": "x"}}),
            StatusCode::BAD_REQUEST,
            "item_id",
            Some("unknown_item"),
            "unknown",
        ),
        (
            questions(json!({})),
            StatusCode::BAD_REQUEST,
            "answer",
            Some("missing_question"),
            "no answer",
        ),
        (
            questions(json!({"color": ["red"], "size": ["xl"]})),
            StatusCode::BAD_REQUEST,
            "answer",
            Some("unknown_question"),
            "unknown question",
        ),
        (
            questions(json!({"color": ["green"]})),
            StatusCode::BAD_REQUEST,
            "answer",
            Some("option_not_offered"),
            "not offered",
        ),
        (
            questions(json!({"color": ["red", "blue"]})),
            StatusCode::BAD_REQUEST,
            "answer",
            Some("single_choice_only"),
            "single option",
        ),
        (
            json!({"item_id": "pick", "answer": {"kind": "clarification", "text": "red"}}),
            StatusCode::BAD_REQUEST,
            "answer",
            Some("wrong_kind"),
            "expects a questions answer",
        ),
        (
            json!({"item_id": "why", "answer": {"kind": "clarification", "text": "  "}}),
            StatusCode::BAD_REQUEST,
            "answer",
            Some("empty_clarification"),
            "empty",
        ),
        (
            json!({"item_id": "pick", "answer": {"kind": "telepathy"}}),
            StatusCode::BAD_REQUEST,
            "answer.kind",
            None,
            "unknown variant",
        ),
    ];
    for (body, status, field, code, words) in cases {
        let r = f.post(&answers, TOKEN_A, body.clone()).await;
        assert_eq!(r.status, status, "{body}: {}", r.body);
        assert_eq!(r.content_type(), "application/problem+json");
        assert_eq!(r.fields(), vec![field], "{body}: {}", r.body);
        if let Some(code) = code {
            assert_eq!(r.body["errors"][0]["code"], code, "{}", r.body);
        }
        let detail = r.body["detail"].as_str().unwrap();
        assert!(detail.contains(words), "{detail:?} lacks {words:?}");
        let view = f.get(&format!("/v1/runs/{run}"), TOKEN_A).await;
        assert_eq!(view.body["status"], "awaiting", "after {body}");
        assert_eq!(view.body["await"]["answers"], json!([null, null]));
    }

    // A good answer to one item leaves the other pending.
    let r = f
        .post(&answers, TOKEN_A, questions(json!({"color": ["blue"]})))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body, json!({"remaining": 1, "satisfied": false}));
    // A second answer to the satisfied item is a conflict; the run still awaits.
    let r = f
        .post(&answers, TOKEN_A, questions(json!({"color": ["red"]})))
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert!(
        r.body["detail"]
            .as_str()
            .unwrap()
            .contains("already answered")
    );
    let view = f.get(&format!("/v1/runs/{run}"), TOKEN_A).await;
    assert_eq!(view.body["status"], "awaiting");
    assert_eq!(
        view.body["await"]["answers"][0]["answers"]["color"],
        json!(["blue"])
    );
    assert_eq!(view.body["await"]["answers"][1], Value::Null);

    // The last answer completes the run.
    let r = f
        .post(
            &answers,
            TOKEN_A,
            json!({"item_id": "why", "answer": {"kind": "clarification", "text": "because"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body, json!({"remaining": 0, "satisfied": true}));
    let done = f.wait_status(TOKEN_A, &run, "completed").await;
    assert_eq!(done["outcome"]["kind"], "response");
    assert!(done.get("await").is_none());

    // Answering a finished run is a conflict.
    let r = f
        .post(
            &answers,
            TOKEN_A,
            json!({"item_id": "why", "answer": {"kind": "clarification", "text": "again"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
}

#[tokio::test]
async fn pause_resume_and_cancel_an_awaiting_run() {
    let f = Fixture::new().await;
    let run = f.start(TOKEN_A, "ask", None).await;
    f.wait_status(TOKEN_A, &run, "awaiting").await;
    let r = f
        .post(&format!("/v1/runs/{run}/pause"), TOKEN_A, json!({}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["paused"], true);
    // Pausing twice is a conflict.
    let r = f
        .post(&format!("/v1/runs/{run}/pause"), TOKEN_A, json!({}))
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    // A paused run takes no answers.
    let r = f
        .post(
            &format!("/v1/runs/{run}/answers"),
            TOKEN_A,
            json!({"item_id": "why", "answer": {"kind": "clarification", "text": "x"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    let r = f
        .post(&format!("/v1/runs/{run}/resume"), TOKEN_A, json!({}))
        .await;
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
    let r = f
        .post(&format!("/v1/runs/{run}/cancel"), TOKEN_A, json!({}))
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
}
