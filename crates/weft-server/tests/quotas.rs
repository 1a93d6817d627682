//! Per-tenant quotas over a real socket: unfinished runs and starts per
//! minute are capped per tenant with a 429 and `Retry-After`; both are
//! counted in the store, so they hold across two servers on one store, and
//! concurrent starts cannot overshoot the unfinished-runs cap.

mod common;

use std::num::NonZeroU32;

use common::served::{Served, too_many};
use common::{Fixture, TOKEN_A, TOKEN_B};
use serde_json::{Value, json};
use weft_server::TenantQuotas;

fn quotas(unfinished: u32, per_minute: u32) -> TenantQuotas {
    TenantQuotas {
        max_unfinished_runs: NonZeroU32::new(unfinished),
        runs_per_minute: NonZeroU32::new(per_minute),
        ..TenantQuotas::default()
    }
}

async fn serve(f: &mut Fixture, quotas: TenantQuotas) -> Served {
    f.state = f.state.clone().with_tenant_quotas(quotas);
    Served::start(f.state.clone()).await
}

async fn sessions(server: &Served, token: &str) -> usize {
    let body: Value = server
        .get("/v1/sessions", token)
        .await
        .json()
        .await
        .unwrap();
    body["sessions"].as_array().unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_runs_past_the_cap_get_429() {
    let mut f = Fixture::new().await;
    let server = serve(&mut f, quotas(2, 0)).await;
    let first = server.started(TOKEN_A, "ask").await;
    server.started(TOKEN_A, "slow").await;
    let (retry_after, body) = too_many(server.start_run(TOKEN_A, "ask").await).await;
    assert!(retry_after >= 1, "{retry_after}");
    assert!(
        body["detail"].as_str().unwrap().contains("unfinished"),
        "{body}"
    );
    // The refused start created no session.
    assert_eq!(sessions(&server, TOKEN_A).await, 2);
    // Another tenant has a cap of its own.
    server.started(TOKEN_B, "ask").await;
    // A finished run frees its place.
    let r = server
        .post(&format!("/v1/runs/{first}/cancel"), TOKEN_A, json!({}))
        .await;
    assert_eq!(r.status(), 200);
    f.wait_status(TOKEN_A, &first, "cancelled").await;
    server.started(TOKEN_A, "echo").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_starts_do_not_overshoot_the_cap() {
    let mut f = Fixture::new().await;
    let server = serve(&mut f, quotas(3, 0)).await;
    let starts = (0..12).map(|_| server.start_run(TOKEN_A, "slow"));
    let statuses: Vec<u16> = futures_util::future::join_all(starts)
        .await
        .iter()
        .map(|r| r.status().as_u16())
        .collect();
    // Admission is conservative: a burst never overshoots the cap, though
    // starts racing each other may leave it short.
    let accepted = statuses.iter().filter(|s| **s == 201).count();
    assert!((1..=3).contains(&accepted), "{statuses:?}");
    assert_eq!(
        statuses.iter().filter(|s| **s == 429).count(),
        12 - accepted,
        "{statuses:?}"
    );
    // Once the burst is over, starts fill the cap exactly.
    for _ in accepted..3 {
        server.started(TOKEN_A, "slow").await;
    }
    too_many(server.start_run(TOKEN_A, "slow").await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_unfinished_runs_cap_holds_across_servers_on_one_store() {
    let mut one = Fixture::new().await;
    let store = one.state.sessions.clone();
    let mut two = Fixture::over(store, None);
    let first = serve(&mut one, quotas(2, 0)).await;
    let second = serve(&mut two, quotas(2, 0)).await;
    first.started(TOKEN_A, "ask").await;
    second.started(TOKEN_A, "ask").await;
    too_many(first.start_run(TOKEN_A, "ask").await).await;
    too_many(second.start_run(TOKEN_A, "ask").await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starts_past_the_per_minute_rate_get_429() {
    let mut f = Fixture::new().await;
    let server = serve(&mut f, quotas(0, 2)).await;
    server.started(TOKEN_A, "echo").await;
    server.started(TOKEN_A, "echo").await;
    let (retry_after, body) = too_many(server.start_run(TOKEN_A, "echo").await).await;
    // Two in any minute: a place comes back when the first start is a
    // minute old.
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    assert!(
        body["detail"].as_str().unwrap().contains("per minute"),
        "{body}"
    );
    server.started(TOKEN_B, "echo").await;
    // A malformed start is refused before it costs anything.
    let r = server.post("/v1/runs", TOKEN_B, json!({"agent": 1})).await;
    assert_eq!(r.status(), 400);
    server.started(TOKEN_B, "echo").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_start_rate_holds_across_servers_on_one_store() {
    let mut one = Fixture::new().await;
    let store = one.state.sessions.clone();
    let mut two = Fixture::over(store, None);
    let first = serve(&mut one, quotas(0, 3)).await;
    let second = serve(&mut two, quotas(0, 3)).await;
    first.started(TOKEN_A, "echo").await;
    second.started(TOKEN_A, "echo").await;
    first.started(TOKEN_A, "echo").await;
    // Three in this minute across both servers: each refuses the fourth.
    let (retry_after, _) = too_many(second.start_run(TOKEN_A, "echo").await).await;
    assert!((50..=60).contains(&retry_after), "{retry_after}");
    too_many(first.start_run(TOKEN_A, "echo").await).await;
    // Another tenant's rate is its own.
    second.started(TOKEN_B, "echo").await;
}

#[tokio::test]
async fn quotas_are_on_by_default() {
    let f = Fixture::new().await;
    let q = f.state.tenant_quotas();
    assert_eq!(q.max_unfinished_runs, NonZeroU32::new(100));
    assert_eq!(q.runs_per_minute, NonZeroU32::new(600));
    assert_eq!(q.max_event_streams, NonZeroU32::new(64));
}
