//! `weft bench stream`: one long streamed answer delivered over SSE to many
//! clients at once. `weft serve` (this binary, as a child on a fresh store)
//! drives a model planner whose provider is a local server speaking OpenAI's
//! Chat Completions stream format; the answer is `tokens` text deltas. One
//! run is started, `clients` SSE clients follow it, and once every client
//! has its first event the provider is let go and streams the whole answer
//! as fast as the server reads it. Prints one JSON line: model deltas and SSE
//! events delivered per second over every client (from the release of the
//! provider to the last client's `run_finished`), the events the run stored,
//! and the time to each client's last event.
//!
//! The runtime commits streamed text every 20 ms and a commit merges the
//! text deltas it holds into one `assistant_chunk` event, so the store holds
//! a row per commit, not per token; clients receive the same text in those
//! events. Every client checks it received the whole answer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use axum::body::{Body, Bytes};
use axum::response::Response;
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::serve::TOKEN;

/// What to measure.
#[derive(Debug, Clone)]
pub struct Settings {
    /// SSE clients following the run.
    pub clients: usize,
    /// Text deltas in the answer.
    pub tokens: usize,
    /// The store: `None` for a fresh SQLite file, or a `postgres://` URL.
    pub db: Option<String>,
}

/// The text of one delta.
const DELTA: &str = " word";

const AGENT: &str = r#"id = "w"
instructions = "Answer at length."

[planner]
kind = "model"
model = "openai/bench-model"
max_tokens = 100000
"#;

/// What one client saw.
struct Seen {
    events: u64,
    text_bytes: usize,
    last_event: Duration,
}

/// Starts the provider and the server, streams the answer to the clients,
/// stops both; one JSON line.
pub fn run(s: &Settings) -> anyhow::Result<Value> {
    let setup = super::serve::Setup::new(AGENT, s.db.as_deref())?;
    let store = setup.store;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    tokio.block_on(async {
        let (release, provider) = start_provider(s.tokens).await?;
        let envs = [
            ("OPENAI_BASE_URL", format!("{provider}/v1")),
            ("OPENAI_API_KEY", "bench".to_owned()),
        ];
        let (mut child, base) = setup.start_server(&envs).await?;
        let measured = drive(s, &base, &release).await;
        child.start_kill().ok();
        child.wait().await.ok();
        let (seen, secs) = measured?;
        let expected = s.tokens * DELTA.len();
        if let Some(short) = seen.iter().find(|x| x.text_bytes != expected) {
            anyhow::bail!(
                "a client received {} bytes of the answer, not {expected}",
                short.text_bytes
            );
        }
        let events: u64 = seen.iter().map(|x| x.events).sum();
        let mut last: Vec<Duration> = seen.iter().map(|x| x.last_event).collect();
        last.sort_unstable();
        let deltas = (s.tokens * s.clients) as f64;
        Ok(json!({
            "bench": "stream",
            "store": store,
            "clients": s.clients,
            "tokens": s.tokens,
            "seconds": round(secs, 3),
            "deltas_delivered_per_s": (deltas / secs).round(),
            "sse_events_delivered_per_s": (events as f64 / secs).round(),
            "stored_events_per_run": seen.first().map_or(0, |x| x.events),
            "last_event_p50_ms": round(pct(&last, 50).as_secs_f64() * 1e3, 1),
            "last_event_max_ms": round(pct(&last, 100).as_secs_f64() * 1e3, 1),
        }))
    })
}

/// A provider on a free port that answers every Chat Completions request
/// with the whole answer, once `release` says so. Returns its URL.
async fn start_provider(tokens: usize) -> anyhow::Result<(watch::Sender<bool>, String)> {
    let (release, gate) = watch::channel(false);
    let body = Bytes::from(answer(tokens));
    let app = axum::Router::new().fallback(move || {
        let mut gate = gate.clone();
        let body = body.clone();
        async move {
            let _ = gate.wait_for(|open| *open).await;
            // Frames of about 16 KiB, as a fast provider's writes would arrive.
            let frames: Vec<Result<Bytes, std::io::Error>> = (0..body.len())
                .step_by(16 * 1024)
                .map(|at| Ok(body.slice(at..(at + 16 * 1024).min(body.len()))))
                .collect();
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(futures_util::stream::iter(frames)))
                .unwrap_or_default()
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((release, format!("http://{addr}")))
}

/// The SSE body of a Chat Completions stream of `tokens` deltas.
fn answer(tokens: usize) -> String {
    let chunk = |delta: Value, finish: Value| {
        let c = json!({
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1_727_346_168,
            "model": "bench-model",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        format!("data: {c}\n\n")
    };
    let mut out = chunk(json!({"role": "assistant", "content": ""}), Value::Null);
    let one = chunk(json!({ "content": DELTA }), Value::Null);
    out.reserve(one.len() * tokens + 512);
    for _ in 0..tokens {
        out.push_str(&one);
    }
    out.push_str(&chunk(json!({}), json!("stop")));
    let usage = json!({
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1_727_346_168,
        "model": "bench-model",
        "choices": [],
        "usage": {"prompt_tokens": 20, "completion_tokens": tokens, "total_tokens": tokens + 20},
    });
    out.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
    out
}

/// Starts the run, opens the clients, releases the provider; returns what
/// each client saw and the seconds from the release to the last client's end.
async fn drive(
    s: &Settings,
    base: &str,
    release: &watch::Sender<bool>,
) -> anyhow::Result<(Vec<Seen>, f64)> {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(s.clients + 1)
        .tcp_nodelay(true)
        .build()?;
    let run_id: Arc<str> = super::serve::start_run(&http, base).await?.into();
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(s.clients);
    let (go_tx, go) = watch::channel(None::<Instant>);
    let clients: Vec<_> = (0..s.clients)
        .map(|_| {
            let url = format!("{base}/v1/runs/{run_id}/events");
            let (http, ready, go) = (http.clone(), ready_tx.clone(), go.clone());
            tokio::spawn(follow(http, url, ready, go))
        })
        .collect();
    drop(ready_tx);
    tokio::time::timeout(Duration::from_secs(60), async {
        for _ in 0..s.clients {
            ready_rx
                .recv()
                .await
                .context("a client ended before its first event")?;
        }
        anyhow::Ok(())
    })
    .await
    .context("the clients did not all get their first event within 60 s")??;
    let t0 = Instant::now();
    go_tx.send_replace(Some(t0));
    release.send_replace(true);
    let mut seen = Vec::with_capacity(s.clients);
    for c in clients {
        seen.push(
            tokio::time::timeout(Duration::from_secs(300), c)
                .await
                .context("a client did not see run_finished within 300 s")???,
        );
    }
    Ok((seen, t0.elapsed().as_secs_f64()))
}

/// One SSE client: says when its first event arrived, then reads to
/// `run_finished`, counting events and the answer's text.
async fn follow(
    http: reqwest::Client,
    url: String,
    ready: tokio::sync::mpsc::Sender<()>,
    go: watch::Receiver<Option<Instant>>,
) -> anyhow::Result<Seen> {
    let mut body = http
        .get(url)
        .bearer_auth(TOKEN)
        .header("accept", "text/event-stream")
        .send()
        .await?
        .error_for_status()?
        .bytes_stream();
    let mut buf: Vec<u8> = Vec::new();
    let mut ready = Some(ready);
    let mut seen = Seen {
        events: 0,
        text_bytes: 0,
        last_event: Duration::ZERO,
    };
    while let Some(chunk) = body.next().await {
        buf.extend_from_slice(&chunk?);
        let mut start = 0;
        while let Some(end) = find(&buf[start..], b"\n\n") {
            let block = &buf[start..start + end];
            start += end + 2;
            let (kind, data) = parse_block(block);
            if kind.is_empty() {
                continue; // a keep-alive comment
            }
            if let Some(r) = ready.take() {
                r.send(()).await.ok();
                continue; // `run_started`, before the provider is let go
            }
            seen.events += 1;
            match kind {
                "assistant_chunk" => {
                    let v: Value = serde_json::from_slice(data)?;
                    seen.text_bytes += v["text"].as_str().map_or(0, str::len);
                }
                "run_finished" => {
                    let t0 = (*go.borrow()).context("finished before the release")?;
                    seen.last_event = t0.elapsed();
                    return Ok(seen);
                }
                "error" => {
                    anyhow::bail!("the event stream failed: {}", String::from_utf8_lossy(data))
                }
                _ => {}
            }
        }
        buf.drain(..start);
    }
    anyhow::bail!("the event stream ended before run_finished")
}

/// An SSE block's `event:` name and `data:` bytes (one data line).
fn parse_block(block: &[u8]) -> (&str, &[u8]) {
    let mut kind = "";
    let mut data: &[u8] = &[];
    for line in block.split(|&b| b == b'\n') {
        if let Some(v) = line.strip_prefix(b"event:") {
            kind = std::str::from_utf8(v).unwrap_or("").trim();
        } else if let Some(v) = line.strip_prefix(b"data:") {
            data = v.strip_prefix(b" ").unwrap_or(v);
        }
    }
    (kind, data)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn pct(sorted: &[Duration], p: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) * p).div_ceil(100).min(sorted.len() - 1)]
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}
