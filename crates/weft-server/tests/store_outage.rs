//! A store outage in the middle of a run, over a real socket: commits fail
//! while a tool runs, so the driver gives the run up at its last commit;
//! once the store is back the sweeper takes the run over and finishes it.
//! A client following the run over SSE all along sees exactly the stored
//! log: never an event the outage lost, never a sequence number twice, no
//! gap, and the run does not stay `running`.

mod common;

use std::time::Duration;

use common::served::Served;
use common::sse::SseReader;
use common::{Fixture, TOKEN_A};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_mid_run_shows_clients_only_stored_events_and_the_run_finishes() {
    let (f, store) = Fixture::counting_with(|b| b.lease_ttl(Duration::from_millis(400))).await;
    let _sweeper = f.state.runtime.start_sweeper();
    let server = Served::start(f.state.clone()).await;
    // `nap` runs a 300 ms tool, then answers.
    let run = server.started(TOKEN_A, "nap").await;
    let events = |last: Option<u64>| {
        let mut request = server
            .client
            .get(server.url(&format!("/v1/runs/{run}/events")))
            .bearer_auth(TOKEN_A);
        if let Some(id) = last {
            request = request.header("Last-Event-ID", id.to_string());
        }
        request.send()
    };
    let mut live = SseReader::new(events(None).await.unwrap());
    let mut seen = Vec::new();
    loop {
        let frame = live
            .next()
            .await
            .expect("the stream ends only with the run");
        let started = frame.event == "tool_started";
        seen.push(frame);
        if started {
            break;
        }
    }
    // The tool's result and everything after it cannot be stored for a while.
    store.fail_commits(true);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    store.fail_commits(false);
    let rest = tokio::time::timeout(Duration::from_secs(30), live.collect())
        .await
        .expect("the run finishes once the store is back");
    seen.extend(rest);
    assert_eq!(seen.last().map(|f| f.event.as_str()), Some("run_finished"));
    f.wait_status(TOKEN_A, &run, "completed").await;

    // What the live client saw is the stored log, event for event.
    let ids: Vec<u64> = seen.iter().filter_map(|f| f.id).collect();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>(), "{seen:#?}");
    let stored = SseReader::new(events(None).await.unwrap()).collect().await;
    assert_eq!(seen, stored);
    // The call cut by the outage reached the model as interrupted, once.
    let finished: Vec<_> = seen.iter().filter(|f| f.event == "tool_finished").collect();
    assert_eq!(finished.len(), 1, "{finished:#?}");
    assert!(
        finished[0].data.to_string().contains("was interrupted"),
        "{finished:#?}"
    );
}
