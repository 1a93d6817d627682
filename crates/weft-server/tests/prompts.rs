//! Prompt override API tests: set, list (paged), clear, tenant isolation,
//! checked templates, and an override reaching a run's planner with its
//! `prompt_rendered` event.

mod common;

use axum::http::StatusCode;
use common::{Fixture, TOKEN_A, TOKEN_B, prompted};
use serde_json::json;
use weft_core::prompt::template_version;

#[tokio::test]
async fn overrides_are_set_listed_and_cleared_within_the_tenant() {
    let f = Fixture::new().await;
    let r = f
        .post(
            "/v1/prompts",
            TOKEN_A,
            json!({"name": "system", "template": "A: {{ agent }}"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["version"], template_version("A: {{ agent }}"));
    assert!(r.body.get("tenant").is_none());

    let listed = f.get("/v1/prompts", TOKEN_A).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    assert_eq!(listed.body["prompts"][0]["template"], "A: {{ agent }}");
    // Tenant B sees none of it and cannot clear it.
    let other = f.get("/v1/prompts", TOKEN_B).await;
    assert_eq!(other.body["prompts"], json!([]));
    let r = f
        .post("/v1/prompts/clear", TOKEN_B, json!({"name": "system"}))
        .await;
    assert_eq!(r.body["cleared"], false);
    assert_eq!(
        f.get("/v1/prompts", TOKEN_A).await.body["prompts"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );

    // A session in the scope must be the caller's own.
    let b_session = f.session(TOKEN_B).await;
    let r = f
        .post(
            "/v1/prompts",
            TOKEN_A,
            json!({"name": "system", "template": "x", "session_id": b_session}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);

    let r = f
        .post("/v1/prompts/clear", TOKEN_A, json!({"name": "system"}))
        .await;
    assert_eq!(r.body["cleared"], true);
    assert_eq!(
        f.get("/v1/prompts", TOKEN_A).await.body["prompts"],
        json!([])
    );
}

#[tokio::test]
async fn bad_names_templates_labels_and_cursors_are_400s() {
    let f = Fixture::new().await;
    for (body, field) in [
        (
            json!({"name": "system", "template": "{% if %}"}),
            "template",
        ),
        (json!({"name": "a/b", "template": "x"}), "name"),
        (
            json!({"name": "s", "template": "x", "labels": {"weft.tenant": "b"}}),
            "labels.weft.tenant",
        ),
    ] {
        let r = f.post("/v1/prompts", TOKEN_A, body).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
        assert_eq!(r.fields(), [field], "{}", r.body);
    }
    let r = f.get("/v1/prompts?cursor=zz", TOKEN_A).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.fields(), ["cursor"]);
}

#[tokio::test]
async fn listings_are_paged_with_a_cursor() {
    let f = Fixture::new().await;
    for i in 0..5 {
        let r = f
            .post(
                "/v1/prompts",
                TOKEN_A,
                json!({"name": format!("p{i}"), "template": "t"}),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    }
    let mut names = Vec::new();
    let mut path = "/v1/prompts?limit=2".to_owned();
    loop {
        let r = f.get(&path, TOKEN_A).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let page = r.body["prompts"].as_array().cloned().unwrap_or_default();
        assert!(page.len() <= 2);
        names.extend(
            page.iter()
                .filter_map(|p| p["name"].as_str().map(str::to_owned)),
        );
        match r.body["next_cursor"].as_str() {
            Some(c) => path = format!("/v1/prompts?limit=2&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(names, ["p0", "p1", "p2", "p3", "p4"]);
}

#[tokio::test]
async fn an_override_reaches_the_planner_and_is_named_in_the_run_log() {
    prompted::override_reaches_the_planner(&Fixture::new().await).await;
}
