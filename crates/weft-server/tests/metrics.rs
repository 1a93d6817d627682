//! `GET /metrics` on a real server: off unless the operator turns it on,
//! and the open event streams gauge follows SSE clients as they come and go.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::served::Served;
use common::{Fixture, TOKEN_A};
use weft_server::{Metrics, MetricsAccess};

async fn scrape(server: &Served) -> reqwest::Response {
    server
        .client
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap()
}

/// The value of the open event streams gauge in an exposition.
fn open_streams(text: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix("weft_event_streams_open "))
        .unwrap_or_else(|| panic!("no gauge in {text}"))
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_off_by_default() {
    let f = Fixture::new().await;
    let server = Served::start(f.state.clone()).await;
    let reply = scrape(&server).await;
    assert_eq!(reply.status(), 404);
    assert_eq!(reply.headers()["content-type"], "application/problem+json");
    // A tenant's token does not open them either.
    let reply = server.get("/metrics", TOKEN_A).await;
    assert_eq!(reply.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gauge_counts_open_event_streams() {
    let f = Fixture::new().await;
    let metrics = Arc::new(Metrics::new());
    let state = f.state.clone().with_metrics(metrics, MetricsAccess::Open);
    let server = Served::start(state).await;
    let before = scrape(&server).await;
    assert_eq!(before.status(), 200);
    assert_eq!(open_streams(&before.text().await.unwrap()), 0.0);

    // The run sleeps in a tool for a minute: its event stream stays open.
    let run = server.started(TOKEN_A, "slow").await;
    let stream = server.get(&format!("/v1/runs/{run}/events"), TOKEN_A).await;
    assert_eq!(stream.status(), 200);
    let during = scrape(&server).await.text().await.unwrap();
    assert_eq!(open_streams(&during), 1.0);

    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let after = scrape(&server).await.text().await.unwrap();
        if open_streams(&after) == 0.0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the closed stream is still counted"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
