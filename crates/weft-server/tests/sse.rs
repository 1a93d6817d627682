//! Server-Sent Events over a real socket: `serve` on 127.0.0.1:0, read with
//! reqwest, frames parsed by hand. Replay from `Last-Event-ID` yields exactly
//! the missing events; a live stream follows a run across its await; shutdown
//! ends open streams.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::sse::{Frame, SseReader};
use common::{Fixture, TOKEN_A, TOKEN_B, clarification};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

struct Server {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
    client: reqwest::Client,
}

impl Server {
    async fn start(f: &Fixture) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(weft_server::serve_with_shutdown(
            listener,
            f.state.clone(),
            async move {
                let _ = stopped.await;
            },
        ));
        Self {
            addr,
            stop: Some(stop),
            task,
            client: reqwest::Client::new(),
        }
    }

    async fn events(&self, run_id: &str, last_event_id: Option<u64>, query: &str) -> SseReader {
        let url = format!("http://{}/v1/runs/{run_id}/events{query}", self.addr);
        let mut request = self.client.get(url).bearer_auth(TOKEN_A);
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id.to_string());
        }
        SseReader::new(request.send().await.unwrap())
    }

    async fn post(&self, path: &str, body: Value) -> reqwest::Response {
        self.client
            .post(format!("http://{}{path}", self.addr))
            .bearer_auth(TOKEN_A)
            .json(&body)
            .send()
            .await
            .unwrap()
    }
}

/// Frames are numbered 1, 2, ... without gaps, match their data, and the
/// last one finishes the run.
fn assert_complete_log(frames: &[Frame]) {
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(f.id, Some(i as u64 + 1), "{frames:#?}");
        assert_eq!(f.data["seq"], i as u64 + 1);
        assert_eq!(f.data["type"], f.event.as_str());
    }
    assert_eq!(frames.last().unwrap().event, "run_finished");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_from_last_event_id_yields_exactly_the_missing_events() {
    let f = Fixture::new().await;
    let server = Server::start(&f).await;
    let run = f.start(TOKEN_A, "echo", None).await;
    f.wait_status(TOKEN_A, &run, "completed").await;

    let full = server.events(&run, None, "").await.collect().await;
    assert_complete_log(&full);
    assert!(full.len() >= 4, "{full:#?}");
    assert_eq!(full[0].event, "run_started");
    assert!(full.iter().any(|f| f.event == "tool_finished"));

    let n = full.len() as u64;
    for after in [0, 1, 3, n - 1, n] {
        let tail = server.events(&run, Some(after), "").await.collect().await;
        assert_eq!(tail, full[after as usize..].to_vec(), "after {after}");
    }
    let tail = server.events(&run, None, "?after=2").await.collect().await;
    assert_eq!(tail, full[2..].to_vec());
    // The header wins over the query parameter.
    let tail = server
        .events(&run, Some(3), "?after=1")
        .await
        .collect()
        .await;
    assert_eq!(tail, full[3..].to_vec());

    // A bad Last-Event-ID is a 400; another tenant gets a 404.
    let url = format!("http://{}/v1/runs/{run}/events", server.addr);
    let r = server
        .client
        .get(&url)
        .bearer_auth(TOKEN_A)
        .header("Last-Event-ID", "soon")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r = server
        .client
        .get(&url)
        .bearer_auth(TOKEN_B)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_stream_follows_a_run_across_its_await_and_a_reconnect() {
    let f = Fixture::new().await;
    let server = Server::start(&f).await;
    let run = f.start(TOKEN_A, "ask", None).await;

    // Read up to the await, then drop the connection.
    let mut first = Vec::new();
    let mut stream = server.events(&run, None, "").await;
    while let Some(frame) = stream.next().await {
        let done = frame.event == "await_requested";
        first.push(frame);
        if done {
            break;
        }
    }
    drop(stream);
    f.wait_status(TOKEN_A, &run, "awaiting").await;

    // Reconnect from the last id seen, and answer while the stream is open.
    let mut stream = server.events(&run, first.last().unwrap().id, "").await;
    let answers = format!("/v1/runs/{run}/answers");
    let r = server
        .post(
            &answers,
            json!({"item_id": "pick", "answer": {"kind": "questions", "answers": {"color": ["red"]}}}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let r = server
        .post(&answers, clarification("why", "just because"))
        .await;
    assert_eq!(r.status(), 200);
    let mut all = first;
    while let Some(frame) = stream.next().await {
        all.push(frame);
    }
    assert_complete_log(&all);
    let kinds: Vec<&str> = all.iter().map(|f| f.event.as_str()).collect();
    assert!(kinds.contains(&"await_satisfied"), "{kinds:?}");
    assert!(kinds.contains(&"run_continued"), "{kinds:?}");
    assert_eq!(all.last().unwrap().data["outcome"]["kind"], "response");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_open_event_streams() {
    let f = Fixture::new().await;
    let mut server = Server::start(&f).await;
    let run = f.start(TOKEN_A, "ask", None).await;
    f.wait_status(TOKEN_A, &run, "awaiting").await;
    let mut stream = server.events(&run, None, "").await;
    while let Some(frame) = stream.next().await {
        if frame.event == "await_requested" {
            break;
        }
    }
    let _ = server.stop.take().unwrap().send(());
    let served = tokio::time::timeout(Duration::from_secs(5), &mut server.task)
        .await
        .expect("serve did not return after shutdown");
    served.unwrap().unwrap();
    assert_eq!(stream.next().await, None);
}
