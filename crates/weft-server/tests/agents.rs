//! The served agents: `GET /v1/agents` lists them by id, paged, to a
//! tenant's token only; a start naming an agent the server does not serve
//! is a 400 that lists the served ones (the first 20, and how many more).

mod common;

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use common::{Fixture, TOKEN_A, TOKEN_B};
use serde_json::{Value, json};
use weft_core::planner::PlanResult;
use weft_runtime::{Agent, Runtime, ScriptedPlanner};
use weft_server::{AppState, Tenants};

/// The ids of a page of agents.
fn ids(body: &Value) -> Vec<String> {
    body["agents"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn the_served_agents_are_listed_by_id_and_paged() {
    let f = Fixture::new().await;
    let served = ["ask", "echo", "nap", "prompted", "recall", "slow", "team"];
    let r = f.get("/v1/agents", TOKEN_A).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(ids(&r.body), served);
    assert!(r.body.get("next_cursor").is_none(), "{}", r.body);
    // Every tenant is served the same agents.
    assert_eq!(ids(&f.get("/v1/agents", TOKEN_B).await.body), served);

    let mut seen = Vec::new();
    let mut path = "/v1/agents?limit=3".to_owned();
    let mut pages = 0;
    loop {
        let r = f.get(&path, TOKEN_A).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let page = ids(&r.body);
        assert!(page.len() <= 3, "{page:?}");
        seen.extend(page);
        pages += 1;
        match r.body["next_cursor"].as_str() {
            Some(cursor) => path = format!("/v1/agents?limit=3&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, served);

    let r = f.call(Method::GET, "/v1/agents", None, None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_eq!(r.content_type(), "application/problem+json");
    let r = f.get("/v1/agents?limit=x", TOKEN_A).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
}

#[tokio::test]
async fn an_unknown_agent_is_a_400_listing_the_served_agents() {
    let f = Fixture::new().await;
    let r = f
        .post(
            "/v1/runs",
            TOKEN_A,
            json!({"agent": "nobody", "input": "x"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(r.fields(), vec!["agent"]);
    let message = r.body["errors"][0]["message"].as_str().unwrap_or_default();
    assert_eq!(
        message,
        "unknown agent `nobody`; served agents: `ask`, `echo`, `nap`, `prompted`, `recall`, `slow`, `team`"
    );
    assert!(
        r.body["detail"]
            .as_str()
            .is_some_and(|d| d.contains("`team`"))
    );
}

#[tokio::test]
async fn an_unknown_agent_names_at_most_twenty_served_agents() {
    let mut f = Fixture::new().await;
    let mut builder = Runtime::builder().session_store(f.state.sessions.clone());
    for i in 0..25 {
        let planner = ScriptedPlanner::new(vec![PlanResult::final_text("hi")]);
        builder = builder.agent(Agent::builder(format!("agent-{i:02}"), Arc::new(planner)).build());
    }
    let tenants = Tenants::parse(&format!("tenant-a={TOKEN_A}")).unwrap();
    f.state = AppState::new(builder.build(), f.state.sessions.clone(), tenants);
    let r = f
        .post(
            "/v1/runs",
            TOKEN_A,
            json!({"agent": "nobody", "input": "x"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    let message = r.body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("`agent-19` and 5 more"), "{message}");
    assert!(!message.contains("agent-20"), "{message}");
    assert!(message.contains("GET /v1/agents"), "{message}");
    // The whole list, through the endpoint, in two pages.
    let first = f.get("/v1/agents?limit=20", TOKEN_A).await;
    assert_eq!(ids(&first.body).len(), 20);
    let cursor = first.body["next_cursor"].as_str().unwrap_or_default();
    assert_eq!(cursor, "agent-19");
    let rest = f
        .get(&format!("/v1/agents?limit=20&cursor={cursor}"), TOKEN_A)
        .await;
    assert_eq!(
        ids(&rest.body),
        ["agent-20", "agent-21", "agent-22", "agent-23", "agent-24"]
    );
}
