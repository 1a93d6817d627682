//! Scenarios shared by the SQLite tests and the PostgreSQL tests.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{Fixture, TOKEN_A, TOKEN_B, clarification};

/// Tenant B gets 404 for everything of tenant A's, and lists only its own.
pub async fn tenant_isolation(f: &Fixture) {
    let session = f.post("/v1/sessions", TOKEN_A, json!({})).await;
    assert_eq!(session.status, StatusCode::CREATED, "{}", session.body);
    assert_eq!(session.body["labels"]["weft.tenant"], "tenant-a");
    let s_a = session.body["session_id"].as_str().unwrap().to_owned();
    let run = f.start(TOKEN_A, "ask", Some(&s_a)).await;
    f.wait_status(TOKEN_A, &run, "awaiting").await;
    let b_session = f.start(TOKEN_B, "echo", None).await;

    // Every read and action of tenant B on tenant A's resources is a 404.
    for path in [
        format!("/v1/sessions/{s_a}"),
        format!("/v1/runs/{run}"),
        format!("/v1/runs/{run}/events"),
    ] {
        let r = f.get(&path, TOKEN_B).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "GET {path}: {}", r.body);
        assert_eq!(r.content_type(), "application/problem+json");
    }
    let answer = clarification("why", "x");
    for (path, body) in [
        (format!("/v1/runs/{run}/answers"), answer),
        (format!("/v1/runs/{run}/cancel"), json!({})),
        (format!("/v1/runs/{run}/pause"), json!({})),
        (format!("/v1/runs/{run}/continue"), json!({})),
        (format!("/v1/sessions/{s_a}/end"), json!({})),
    ] {
        let r = f.post(&path, TOKEN_B, body).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "POST {path}: {}", r.body);
    }
    // Starting a run on tenant A's session is a 404 too.
    let r = f
        .post(
            "/v1/runs",
            TOKEN_B,
            json!({"agent": "echo", "session_id": s_a, "input": "x"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);

    // Lists show only the caller's own items.
    let runs_b = f.get("/v1/runs", TOKEN_B).await;
    let ids: Vec<&str> = runs_b.body["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![b_session.as_str()]);
    let runs_a = f.get("/v1/runs", TOKEN_A).await;
    assert_eq!(runs_a.body["runs"].as_array().unwrap().len(), 1);
    assert_eq!(runs_a.body["runs"][0]["run_id"], run.as_str());
    let sessions_b = f.get("/v1/sessions", TOKEN_B).await;
    let sessions_b = sessions_b.body["sessions"].as_array().unwrap().clone();
    assert_eq!(sessions_b.len(), 1);
    assert_eq!(sessions_b[0]["labels"]["weft.tenant"], "tenant-b");
    let by_session = f.get("/v1/runs?session_id=s-a", TOKEN_B).await;
    assert_eq!(by_session.body["runs"], json!([]));

    // Tenant A's run is untouched and still awaiting.
    let view = f.get(&format!("/v1/runs/{run}"), TOKEN_A).await;
    assert_eq!(view.body["status"], "awaiting");
    assert_eq!(view.body["await"]["items"].as_array().unwrap().len(), 2);
}

/// Each kind of bad answer is rejected and leaves the run awaiting; good
/// answers complete it; answers after that are conflicts.
pub async fn bad_answers(f: &Fixture) {
    let run = f.start(TOKEN_A, "ask", None).await;
    let view = f.wait_status(TOKEN_A, &run, "awaiting").await;
    assert_eq!(view["phase"], "awaiting");
    assert_eq!(view["await"]["items"][0]["kind"], "questions");
    assert_eq!(view["await"]["answers"], json!([null, null]));
    let answers = format!("/v1/runs/{run}/answers");

    // (body, status, field, code, words in the detail)
    let cases = [
        (
            clarification("nope", "x"),
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
            clarification("pick", "red"),
            StatusCode::BAD_REQUEST,
            "answer",
            Some("wrong_kind"),
            "expects a questions answer",
        ),
        (
            clarification("why", "  "),
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
        .post(&answers, TOKEN_A, clarification("why", "because"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body, json!({"remaining": 0, "satisfied": true}));
    let done = f.wait_status(TOKEN_A, &run, "completed").await;
    assert_eq!(done["outcome"]["kind"], "response");
    assert!(done.get("await").is_none());

    // Answering a finished run is a conflict.
    let r = f
        .post(&answers, TOKEN_A, clarification("why", "again"))
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
}

fn questions(answers: Value) -> Value {
    json!({"item_id": "pick", "answer": {"kind": "questions", "answers": answers}})
}
