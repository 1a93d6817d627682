//! Event stream limits over a real socket: each tenant holds a capped number
//! of streams open (a 429 past it, a place freed when a stream ends), open
//! streams outlive the connection idle timeout, and a catch-up reads the
//! stored log a page at a time.

mod common;

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use common::served::{Served, too_many};
use common::sse::SseReader;
use common::{Fixture, TOKEN_A, TOKEN_B};
use serde_json::json;
use weft_server::{ConnLimits, TenantQuotas};

async fn stream(server: &Served, run: &str, token: &str) -> reqwest::Response {
    server.get(&format!("/v1/runs/{run}/events"), token).await
}

/// Reads `reader` up to and including the first `event`.
async fn read_until(reader: &mut SseReader, event: &str) {
    while let Some(frame) = reader.next().await {
        if frame.event == event {
            return;
        }
    }
    panic!("the stream ended before {event}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_streams_past_the_tenant_cap_get_429() {
    let f = Fixture::new().await;
    let state = f
        .state
        .clone()
        .with_tenant_quotas(TenantQuotas {
            max_event_streams: NonZeroU32::new(1),
            ..TenantQuotas::default()
        })
        .with_conn_limits(ConnLimits {
            idle_timeout: Duration::from_millis(300),
            ..ConnLimits::default()
        });
    let server = Served::start(state).await;
    let run = server.started(TOKEN_A, "ask").await;
    let mut open = SseReader::new(stream(&server, &run, TOKEN_A).await);
    read_until(&mut open, "await_requested").await;

    let (retry_after, body) = too_many(stream(&server, &run, TOKEN_A).await).await;
    assert!(retry_after >= 1);
    assert!(
        body["detail"].as_str().unwrap().contains("event streams"),
        "{body}"
    );
    // Another tenant's streams are counted apart.
    let other = server.started(TOKEN_B, "ask").await;
    let mut theirs = SseReader::new(stream(&server, &other, TOKEN_B).await);
    read_until(&mut theirs, "await_requested").await;

    // The open stream outlives the connection idle timeout, and ends with
    // its run; its place is then free.
    tokio::time::sleep(Duration::from_millis(900)).await;
    let r = server
        .post(&format!("/v1/runs/{run}/cancel"), TOKEN_A, json!({}))
        .await;
    assert_eq!(r.status(), 200);
    read_until(&mut open, "run_finished").await;
    assert_eq!(open.next().await, None);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let r = stream(&server, &run, TOKEN_A).await;
        if r.status() == 200 {
            break;
        }
        assert_eq!(r.status(), 429);
        assert!(Instant::now() < deadline, "the ended stream kept its place");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catch_up_reads_the_stored_log_a_page_at_a_time() {
    let (f, counting) = Fixture::counting().await;
    let state = f
        .state
        .clone()
        .with_catch_up_page(NonZeroU32::new(2).unwrap());
    let server = Served::start(state).await;
    let run = server.started(TOKEN_A, "echo").await;
    f.wait_status(TOKEN_A, &run, "completed").await;
    let before = counting.reads().len();

    let frames = SseReader::new(stream(&server, &run, TOKEN_A).await)
        .collect()
        .await;
    let ids: Vec<u64> = frames.iter().filter_map(|f| f.id).collect();
    let expected: Vec<u64> = (1..=ids.len() as u64).collect();
    assert_eq!(ids, expected);
    assert!(ids.len() >= 5, "{frames:#?}");
    assert_eq!(frames.last().unwrap().event, "run_finished");
    let reads = counting.reads()[before..].to_vec();
    assert!(reads.iter().all(|n| *n <= 2), "{reads:?}");
    assert!(reads.len() >= ids.len() / 2, "{reads:?}");

    // From the middle, too.
    let r = server
        .client
        .get(server.url(&format!("/v1/runs/{run}/events")))
        .bearer_auth(TOKEN_A)
        .header("Last-Event-ID", "3")
        .send()
        .await
        .unwrap();
    let tail = SseReader::new(r).collect().await;
    assert_eq!(tail, frames[3..].to_vec());
}
