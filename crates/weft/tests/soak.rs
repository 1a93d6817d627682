//! Tenant isolation under a soak, through the real `weft serve` binary:
//! three tenants on one server, `mallory` misbehaving while `alice` and
//! `bob` start runs of a scripted agent (no model, no network) as they did
//! before her attack.
//!
//! Her attack, all at once: slow bodies (requests whose body trickles in a
//! byte at a time until the body-read timeout answers them 408), runs with
//! label sets at every size limit and past each one (a typed 400 naming the
//! limit), 1,000 event streams over runs of hers that wait for an answer,
//! and a loop starting runs as fast as her quotas let her (it ignores
//! `Retry-After`). Her streams and slow bodies together ask for more
//! requests in flight than a tenant's share (`--max-requests-per-tenant`,
//! 1,024 by default), so the share is what refuses the rest.
//!
//! Asserted is behaviour only: every run of alice and bob completes; each
//! of their requests succeeds (no 5xx, no 429, no refused or reset
//! connection); `/healthz` answers 200 all along; mallory's over-limit
//! labels get their typed 400s, her refusals are 429 problems with
//! `Retry-After`, her slow bodies 408 problems, and none of her streams is
//! cut; once she lets go, her streams and connections are released. Speed
//! is measured, never asserted: each phase prints one JSON line per tenant
//! with its start latencies (`POST /v1/runs` until the whole response), and
//! the ratio of the attack's p99 to the baseline's.
//!
//! Each client comes from a loopback address of its own (127.0.0.x, all
//! local on Linux), as tenants come from different hosts, so the per-address
//! connection cap (`--max-connections-per-peer`, tested in `weft-server`'s
//! `connections` tests) does not make one tenant's connections another's.
//! The server keeps its default limits but three: `--max-event-streams
//! 1000` (so mallory's 1,000 streams are held, not refused at the default
//! 64), a 5 s body-read timeout (so slow bodies are answered within the
//! test) and `--durability process` (no sync per commit, so slow disks do
//! not stretch the soak). Each side holds a socket per stream: the test
//! raises its open-file limit, which the server inherits, to 8,192 where
//! the hard limit allows, and opens fewer streams where it does not (the
//! figures say how many).
//!
//! A second test checks what a client keeping connections alive meets
//! after an answer given before its request's body was read (a 429 for the
//! tenant's share, a 408 for a body too slow): the answer says the
//! connection closes, or the connection serves the next request.
#![cfg(target_os = "linux")]

mod common;

use std::collections::BTreeMap;
use std::io::BufReader;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

const ALICE: &str = "alice-soak-token";
const BOB: &str = "bob-soak-token";
const MALLORY: &str = "mallory-soak-token";
const METRICS_TOKEN: &str = "soak-scrape-token";

/// The last byte of each client's loopback address.
const ALICE_IP: u8 = 2;
const BOB_IP: u8 = 3;
const MALLORY_STREAMS_IP: u8 = 4;
const MALLORY_IP: u8 = 5;
const PROBE_IP: u8 = 6;

/// Runs each well-behaved tenant starts per phase, and how many at once.
const RUNS: usize = 40;
const WORKERS: usize = 4;
/// mallory's event streams (fewer when the open-file limit cannot allow
/// them), the runs they follow, her slow bodies and run-loop workers.
const STREAMS: usize = 1000;
const STREAM_RUNS: usize = 10;
const SLOW_BODIES: usize = 64;
const LOOP_WORKERS: usize = 2;
/// Streams being opened at once.
const OPENING: usize = 32;
/// The server's body-read timeout.
const BODY_TIMEOUT_SECS: u64 = 5;
/// The attack lasts at least this long, so slow bodies reach the timeout.
const MIN_ATTACK: Duration = Duration::from_secs(8);
/// How long a phase's runs may take to finish once started.
const FINISH_WITHIN: Duration = Duration::from_secs(60);
/// How long the server may take to release mallory's streams and sockets.
const RELEASE_WITHIN: Duration = Duration::from_secs(30);
/// Open files the server may hold beyond its count before the attack once
/// mallory has let go (the well-behaved clients' pooled connections vary).
const FD_SLACK: usize = 16;
/// The whole soak, server start to stop, ends within this or fails.
const HARD_TIMEOUT: Duration = Duration::from_secs(240);

fn ip(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 0, last)
}

/// `weft serve` of the calculator agent (a run completes without a model)
/// and the clarify agent (a run waits for an answer) on a fresh SQLite
/// store; killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
    log: common::LogTail,
    _dir: tempfile::TempDir,
}

impl Server {
    /// Starts the server with `extra` flags.
    fn start(extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let tokens = dir.path().join("tokens");
        let spec = format!("alice={ALICE}\nbob={BOB}\nmallory={MALLORY}\n");
        std::fs::write(&tokens, spec).expect("the tokens file is written");
        let mut child = Command::new(env!("CARGO_BIN_EXE_weft"))
            .arg("serve")
            .arg("--agent")
            .arg(common::example("calculator.toml"))
            .arg("--agent")
            .arg(common::example("clarify.toml"))
            .arg("--db")
            .arg(dir.path().join("soak.db"))
            .args(["--addr", "127.0.0.1:0", "--durability", "process"])
            .args(["--max-event-streams", "1000"])
            .arg("--tokens-file")
            .arg(&tokens)
            .args(extra)
            .env_remove("WEFT_TOKENS")
            .env("WEFT_METRICS_TOKEN", METRICS_TOKEN)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("weft serve starts");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr is piped"));
        let addr = common::served_address(&mut stderr)
            .parse()
            .expect("the server names a socket address");
        let log = common::keep_log(stderr);
        Self {
            child,
            addr,
            log,
            _dir: dir,
        }
    }

    fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The files (sockets, the store's) the server holds open.
    fn open_files(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .map(Iterator::count)
            .unwrap_or(0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Raises this process's open-file limit (which the server inherits) to
/// `want`, or as far as the hard limit allows; the soft limit after.
fn raise_open_file_limit(want: libc::rlim_t) -> libc::rlim_t {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return 1024;
    }
    if limit.rlim_cur >= want {
        return limit.rlim_cur;
    }
    let raised = libc::rlimit {
        rlim_cur: want.min(limit.rlim_max),
        rlim_max: limit.rlim_max,
    };
    // SAFETY: setrlimit only reads the struct it is given.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
        raised.rlim_cur
    } else {
        limit.rlim_cur
    }
}

/// An HTTP client whose connections come from `127.0.0.{last}`; `pooled`
/// keeps connections alive between requests.
fn client(last: u8, pooled: bool) -> reqwest::Client {
    let builder = reqwest::Client::builder()
        .local_address(IpAddr::V4(ip(last)))
        .timeout(Duration::from_secs(30));
    let builder = if pooled {
        builder
    } else {
        builder.pool_max_idle_per_host(0)
    };
    builder.build().expect("an HTTP client")
}

/// A TCP connection to `server` from `127.0.0.{last}`.
async fn connect_from(last: u8, server: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(SocketAddr::new(IpAddr::V4(ip(last)), 0))?;
    socket.connect(server).await
}

/// Reads a response head (up to its blank line) within `limit`; `None`
/// when the connection ends or the time runs out first.
async fn read_head(stream: &mut TcpStream, limit: Duration) -> Option<String> {
    let deadline = tokio::time::Instant::now() + limit;
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => head.extend_from_slice(&buf[..n]),
            _ => return None,
        }
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}

/// The status code of a response head.
fn status_of(head: &str) -> u16 {
    head.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Whether a response head has the header `name: …value…`.
fn has_header(head: &str, name: &str, value: &str) -> bool {
    head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with(&format!("{name}:")) && l.contains(value)
    })
}

/// What one tenant's workload saw in a phase.
#[derive(Default)]
struct Workload {
    latencies: Vec<Duration>,
    runs: Vec<String>,
    failures: Vec<String>,
}

impl Workload {
    fn merge(&mut self, other: Workload) {
        self.latencies.extend(other.latencies);
        self.runs.extend(other.runs);
        self.failures.extend(other.failures);
    }

    /// The `p`th percentile start latency in milliseconds (nearest rank).
    fn percentile_ms(&self, p: f64) -> f64 {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        if sorted.is_empty() {
            return 0.0;
        }
        let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
        ms(sorted[rank.clamp(1, sorted.len()) - 1])
    }

    /// Prints the phase's JSON line for `tenant`.
    fn print(&self, phase: &str, tenant: &str) {
        let line = json!({
            "soak": phase,
            "tenant": tenant,
            "runs": self.runs.len(),
            "p50_ms": self.percentile_ms(50.0),
            "p99_ms": self.percentile_ms(99.0),
            "max_ms": self.percentile_ms(100.0),
            "failures": self.failures.len(),
        });
        println!("{line}");
    }
}

/// Starts [`RUNS`] runs of the calculator agent as `token`, [`WORKERS`] at
/// a time, timing each start, then waits for each to finish.
async fn workload(http: reqwest::Client, base: String, token: &'static str) -> Workload {
    let mut workers = Vec::new();
    for worker in 0..WORKERS {
        let (http, base) = (http.clone(), base.clone());
        workers.push(tokio::spawn(async move {
            let mut seen = Workload::default();
            for _ in (worker..RUNS).step_by(WORKERS) {
                let body = json!({"agent": "calculator", "input": "What is 2 + 3?"});
                let began = Instant::now();
                let reply = http
                    .post(format!("{base}/v1/runs"))
                    .bearer_auth(token)
                    .json(&body)
                    .send()
                    .await;
                let started = match reply {
                    Ok(r) if r.status() == reqwest::StatusCode::CREATED => {
                        match r.json::<Value>().await {
                            Ok(v) => v["run_id"]
                                .as_str()
                                .map(str::to_owned)
                                .ok_or_else(|| format!("POST /v1/runs: no run id in {v}")),
                            Err(e) => Err(format!("POST /v1/runs: the body: {e:?}")),
                        }
                    }
                    Ok(r) => {
                        let status = r.status();
                        let text = r.text().await.unwrap_or_default();
                        Err(format!("POST /v1/runs: {status} {text}"))
                    }
                    Err(e) => Err(format!("POST /v1/runs: {e:?}")),
                };
                seen.latencies.push(began.elapsed());
                match started {
                    Ok(run) => seen.runs.push(run),
                    Err(e) => seen.failures.push(e),
                }
            }
            seen
        }));
    }
    let mut seen = Workload::default();
    for worker in workers {
        seen.merge(worker.await.expect("a workload task"));
    }
    let deadline = Instant::now() + FINISH_WITHIN;
    for run in &seen.runs {
        if let Err(e) = finished(&http, &base, token, run, deadline).await {
            seen.failures.push(e);
        }
    }
    seen
}

/// Waits until `run` completes; why not, when it does not by `deadline`,
/// ends otherwise or a request fails.
async fn finished(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    run: &str,
    deadline: Instant,
) -> Result<(), String> {
    loop {
        let reply = http
            .get(format!("{base}/v1/runs/{run}"))
            .bearer_auth(token)
            .send()
            .await
            .map_err(|e| format!("GET /v1/runs/{run}: {e:?}"))?;
        let status = reply.status();
        if !status.is_success() {
            let text = reply.text().await.unwrap_or_default();
            return Err(format!("GET /v1/runs/{run}: {status} {text}"));
        }
        let view: Value = reply
            .json()
            .await
            .map_err(|e| format!("GET /v1/runs/{run}: the body: {e:?}"))?;
        match view["status"].as_str() {
            Some("completed") => return Ok(()),
            Some("failed" | "cancelled") => return Err(format!("run {run} ended: {view}")),
            _ if Instant::now() > deadline => {
                return Err(format!("run {run} has not finished: {view}"));
            }
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Counts of what mallory's requests got, and anything the API does not
/// document for them.
#[derive(Default)]
struct Tally {
    counts: Mutex<BTreeMap<String, usize>>,
    unexpected: Mutex<Vec<String>>,
}

impl Tally {
    fn count(&self, what: &str) {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        *counts.entry(what.to_owned()).or_default() += 1;
    }

    fn get(&self, what: &str) -> usize {
        let counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        counts.get(what).copied().unwrap_or(0)
    }

    fn unexpected(&self, what: String) {
        let mut unexpected = self.unexpected.lock().unwrap_or_else(|e| e.into_inner());
        if unexpected.len() < 50 {
            unexpected.push(what);
        }
    }
}

/// One slow body after another until `stop`: a run's start whose body
/// trickles in a byte every 250 ms, answered 408 at the body-read timeout
/// (or 429 at once when mallory holds her share; she then waits a second).
async fn slow_bodies(server: SocketAddr, stop: CancellationToken, tally: Arc<Tally>) {
    let head = format!(
        "POST /v1/runs HTTP/1.1\r\nhost: soak\r\nauthorization: Bearer {MALLORY}\r\n\
         content-type: application/json\r\ncontent-length: 4096\r\n\r\n{{"
    );
    while !stop.is_cancelled() {
        let mut stream = match connect_from(MALLORY_IP, server).await {
            Ok(stream) => stream,
            Err(e) => {
                tally.unexpected(format!("slow body: connect: {e}"));
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if let Err(e) = stream.write_all(head.as_bytes()).await {
            tally.unexpected(format!("slow body: write: {e}"));
            continue;
        }
        let mut answer = Vec::new();
        let mut buf = [0u8; 2048];
        let answer = loop {
            tokio::select! {
                () = stop.cancelled() => return,
                read = stream.read(&mut buf) => match read {
                    Ok(n) if n > 0 => {
                        answer.extend_from_slice(&buf[..n]);
                        if answer.windows(4).any(|w| w == b"\r\n\r\n") {
                            break String::from_utf8_lossy(&answer).into_owned();
                        }
                    }
                    _ => break String::from_utf8_lossy(&answer).into_owned(),
                },
                () = tokio::time::sleep(Duration::from_millis(250)) => {
                    // The server may stop reading once it has answered.
                    let _ = stream.write_all(b" ").await;
                }
            }
        };
        let problem = has_header(&answer, "content-type", "application/problem+json");
        match status_of(&answer) {
            408 if problem => tally.count("slow_body_408"),
            429 if problem && has_header(&answer, "retry-after", "") => {
                tally.count("slow_body_429");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            _ => tally.unexpected(format!("slow body answered: {answer:?}")),
        }
    }
}

/// Labels `count` long, keys `key_len` bytes, values `value_len` bytes.
fn labels(count: usize, key_len: usize, value_len: usize) -> Value {
    let map: serde_json::Map<String, Value> = (0..count)
        .map(|i| {
            let key = format!("{i:04}{}", "k".repeat(key_len.saturating_sub(4)));
            (key, json!("v".repeat(value_len)))
        })
        .collect();
    Value::Object(map)
}

/// The label sets mallory starts runs with: the name under which each is
/// counted, the labels, and the error code a start with them must get
/// (`None`: at every limit, so accepted unless a quota refuses it).
fn label_sets() -> Vec<(&'static str, Value, Option<&'static str>)> {
    vec![
        ("labels_at_limits", labels(64, 128, 1024), None),
        ("too_many_labels", labels(65, 8, 8), Some("too_many_labels")),
        ("bad_label_key", labels(1, 129, 8), Some("bad_label_key")),
        (
            "label_value_too_long",
            labels(1, 8, 1025),
            Some("label_value_too_long"),
        ),
        (
            "reserved_label",
            json!({"weft.tenant": "alice"}),
            Some("reserved_label"),
        ),
    ]
}

/// Starts one run with each of [`label_sets`] and counts the answers: a
/// typed 400 for each set past a limit, a 201 or a 429 for the one at
/// every limit, a 429 with `Retry-After` for any while her share is full.
async fn label_round(http: &reqwest::Client, base: &str, tally: &Tally) {
    for (name, labels, code) in label_sets() {
        let body = json!({"agent": "calculator", "input": "What is 2 + 3?", "labels": labels});
        let reply = http
            .post(format!("{base}/v1/runs"))
            .bearer_auth(MALLORY)
            .json(&body)
            .send()
            .await;
        let reply = match reply {
            Ok(reply) => reply,
            Err(e) => {
                tally.unexpected(format!("{name}: {e:?}"));
                continue;
            }
        };
        let status = reply.status().as_u16();
        let retry_after = reply.headers().contains_key("retry-after");
        let problem: Value = reply.json().await.unwrap_or(Value::Null);
        let got = problem["errors"][0]["code"].as_str();
        match (status, code) {
            (400, Some(code)) if got == Some(code) => tally.count(&format!("{name}_400")),
            (201, None) => tally.count(&format!("{name}_201")),
            (429, _) if retry_after => tally.count(&format!("{name}_429")),
            _ => tally.unexpected(format!("{name}: {status} {problem}")),
        }
    }
}

/// Starts runs as fast as mallory can until `stop`: at once after a 201,
/// 20 ms after a 429 (whose `Retry-After` she ignores).
async fn run_loop(http: reqwest::Client, base: String, stop: CancellationToken, tally: Arc<Tally>) {
    let body = json!({"agent": "calculator", "input": "What is 2 + 3?"});
    while !stop.is_cancelled() {
        let reply = http
            .post(format!("{base}/v1/runs"))
            .bearer_auth(MALLORY)
            .json(&body)
            .send()
            .await;
        match reply {
            Ok(r) if r.status() == reqwest::StatusCode::CREATED => tally.count("loop_201"),
            Ok(r)
                if r.status() == reqwest::StatusCode::TOO_MANY_REQUESTS
                    && r.headers().contains_key("retry-after") =>
            {
                tally.count("loop_429");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Ok(r) => {
                let status = r.status();
                let text = r.text().await.unwrap_or_default();
                tally.unexpected(format!("run loop: {status} {text}"));
            }
            Err(e) => tally.unexpected(format!("run loop: {e:?}")),
        }
    }
}

/// How one of mallory's streams went.
enum StreamEnd {
    /// Opened, and open until she let go.
    Held,
    /// Refused with a 429 problem and `Retry-After`.
    Refused,
    /// Anything else.
    Unexpected(String),
}

/// Opens an event stream of `run` as mallory: the response head and the
/// connection.
async fn open_stream(server: SocketAddr, run: &str) -> Result<(String, TcpStream), String> {
    let request = format!(
        "GET /v1/runs/{run}/events HTTP/1.1\r\nhost: soak\r\n\
         authorization: Bearer {MALLORY}\r\naccept: text/event-stream\r\n\r\n"
    );
    let mut stream = connect_from(MALLORY_STREAMS_IP, server)
        .await
        .map_err(|e| format!("stream: connect: {e}"))?;
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| format!("stream: write: {e}"))?;
    let head = read_head(&mut stream, Duration::from_secs(20))
        .await
        .ok_or_else(|| "stream: no answer within 20 s".to_owned())?;
    Ok((head, stream))
}

/// Opens an event stream of `run` (waiting for a place among the streams
/// being opened), says so on `opened`, and holds it until `stop`.
async fn hold_stream(
    server: SocketAddr,
    run: String,
    opening: Arc<Semaphore>,
    opened: mpsc::UnboundedSender<()>,
    stop: CancellationToken,
) -> StreamEnd {
    let place = opening.acquire_owned().await;
    let head = open_stream(server, &run).await;
    drop(place);
    // The receiver may have stopped counting.
    let _ = opened.send(());
    let (head, mut stream) = match head {
        Ok(opened) => opened,
        Err(e) => return StreamEnd::Unexpected(e),
    };
    match status_of(&head) {
        200 => {}
        429 if has_header(&head, "retry-after", "") => return StreamEnd::Refused,
        _ => return StreamEnd::Unexpected(format!("stream answered: {head:?}")),
    }
    let mut buf = [0u8; 4096];
    loop {
        tokio::select! {
            () = stop.cancelled() => return StreamEnd::Held,
            read = stream.read(&mut buf) => match read {
                Ok(n) if n > 0 => {}
                _ => return StreamEnd::Unexpected("a stream ended under its reader".to_owned()),
            },
        }
    }
}

/// `GET /healthz` on a fresh connection every 100 ms until `stop`; the
/// latencies, and what was not a 200.
async fn probe(base: String, stop: CancellationToken) -> (Vec<Duration>, Vec<String>) {
    let http = client(PROBE_IP, false);
    let (mut latencies, mut failures) = (Vec::new(), Vec::new());
    while !stop.is_cancelled() {
        let began = Instant::now();
        match http.get(format!("{base}/healthz")).send().await {
            Ok(r) if r.status().is_success() => latencies.push(began.elapsed()),
            Ok(r) => failures.push(format!("/healthz: {}", r.status())),
            Err(e) => failures.push(format!("/healthz: {e:?}")),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (latencies, failures)
}

/// The event streams the server holds open, from `/metrics`.
async fn open_streams(http: &reqwest::Client, base: &str) -> Option<u64> {
    let text = http
        .get(format!("{base}/metrics"))
        .bearer_auth(METRICS_TOKEN)
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("weft_event_streams_open "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|v| v as u64)
}

/// Starts a run of the clarify agent as mallory (it waits for an answer),
/// trying again while a quota refuses it.
async fn waiting_run(http: &reqwest::Client, base: &str) -> String {
    let body = json!({"agent": "clarify", "input": "Add 2 and 3, then multiply."});
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let reply = http
            .post(format!("{base}/v1/runs"))
            .bearer_auth(MALLORY)
            .json(&body)
            .send()
            .await
            .expect("mallory's run start is answered");
        let status = reply.status();
        let view: Value = reply.json().await.unwrap_or(Value::Null);
        if status == reqwest::StatusCode::CREATED {
            return view["run_id"].as_str().expect("a run id").to_owned();
        }
        assert!(
            status == reqwest::StatusCode::TOO_MANY_REQUESTS && Instant::now() < deadline,
            "mallory's waiting run: {status} {view}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `d` in milliseconds, to two decimals.
fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0 * 100.0).round() / 100.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_misbehaving_tenant_leaves_the_others_served() {
    // Each side holds a socket per stream and slow body, and more.
    let limit = raise_open_file_limit(8192);
    let room = usize::try_from(limit).unwrap_or(usize::MAX);
    let streams = STREAMS.min(room.saturating_sub(SLOW_BODIES + 256));
    let body_timeout = BODY_TIMEOUT_SECS.to_string();
    let server = Server::start(&["--body-read-timeout-secs", &body_timeout]);
    let soaked = tokio::time::timeout(HARD_TIMEOUT, soak(&server, streams)).await;
    assert!(
        soaked.is_ok(),
        "the soak did not end within {HARD_TIMEOUT:?}; the server's log:\n{}",
        server.log.text()
    );
}

async fn soak(server: &Server, streams: usize) {
    let soak_began = Instant::now();
    let base = server.base();
    let log = || server.log.text();
    let alice = client(ALICE_IP, true);
    let bob = client(BOB_IP, true);

    // 1. Baseline: alice and bob alone.
    let (a, b) = tokio::join!(
        workload(alice.clone(), base.clone(), ALICE),
        workload(bob.clone(), base.clone(), BOB),
    );
    a.print("baseline", "alice");
    b.print("baseline", "bob");
    for (tenant, seen) in [("alice", &a), ("bob", &b)] {
        assert!(
            seen.failures.is_empty(),
            "{tenant}'s baseline failed: {:#?}\n{}",
            seen.failures,
            log()
        );
    }
    let baseline = [a, b];
    let files_before = server.open_files();

    // 2. The attack, with alice and bob doing as before.
    let attack_began = Instant::now();
    let stop = CancellationToken::new();
    let tally = Arc::new(Tally::default());
    let mallory = client(MALLORY_IP, true);
    let probes = tokio::spawn(probe(base.clone(), stop.clone()));
    let mut targets = Vec::new();
    for _ in 0..STREAM_RUNS {
        targets.push(waiting_run(&mallory, &base).await);
    }
    let mut attackers = Vec::new();
    for _ in 0..SLOW_BODIES {
        attackers.push(tokio::spawn(slow_bodies(
            server.addr,
            stop.clone(),
            tally.clone(),
        )));
    }
    for _ in 0..LOOP_WORKERS {
        attackers.push(tokio::spawn(run_loop(
            mallory.clone(),
            base.clone(),
            stop.clone(),
            tally.clone(),
        )));
    }
    // One round of labels while her share has room (so each over-limit set
    // meets its validation, not the share), then rounds until she stops.
    // Each on a connection of its own: a start refused for her share is
    // answered before its body, and the connection is closed under it (see
    // `a_request_refused_before_its_body_leaves_no_broken_connection`).
    let labeller = client(MALLORY_IP, false);
    label_round(&labeller, &base, &tally).await;
    attackers.push(tokio::spawn({
        let (http, base, stop, tally) = (labeller, base.clone(), stop.clone(), tally.clone());
        async move {
            while !stop.is_cancelled() {
                tokio::time::sleep(Duration::from_millis(100)).await;
                label_round(&http, &base, &tally).await;
            }
        }
    }));
    let opening = Arc::new(Semaphore::new(OPENING));
    let (opened_tx, mut opened) = mpsc::unbounded_channel();
    let mut held = Vec::new();
    for i in 0..streams {
        held.push(tokio::spawn(hold_stream(
            server.addr,
            targets[i % targets.len()].clone(),
            opening.clone(),
            opened_tx.clone(),
            stop.clone(),
        )));
    }
    drop(opened_tx);
    let opening_began = Instant::now();
    for _ in 0..streams {
        if opened.recv().await.is_none() {
            break;
        }
    }
    let opening_took = opening_began.elapsed();
    let peak_streams = open_streams(&mallory, &base).await;

    let (a, b) = tokio::join!(
        workload(alice.clone(), base.clone(), ALICE),
        workload(bob.clone(), base.clone(), BOB),
    );
    let attacked = [a, b];
    if let Some(rest) = MIN_ATTACK.checked_sub(attack_began.elapsed()) {
        tokio::time::sleep(rest).await;
    }
    let attack_took = attack_began.elapsed();
    stop.cancel();
    for attacker in attackers {
        attacker.await.expect("an attacker task");
    }
    let mut ends: BTreeMap<&str, usize> = BTreeMap::new();
    for stream in held {
        match stream.await.expect("a stream task") {
            StreamEnd::Held => *ends.entry("held").or_default() += 1,
            StreamEnd::Refused => *ends.entry("refused_429").or_default() += 1,
            StreamEnd::Unexpected(e) => {
                *ends.entry("unexpected").or_default() += 1;
                tally.unexpected(e);
            }
        }
    }
    let (probe_latencies, probe_failures) = probes.await.expect("the probe task");
    drop(mallory);

    for ((tenant, seen), before) in ["alice", "bob"].iter().zip(&attacked).zip(&baseline) {
        seen.print("attack", tenant);
        let ratio = seen.percentile_ms(99.0) / before.percentile_ms(99.0).max(0.01);
        let line = json!({
            "soak": "ratio",
            "tenant": tenant,
            "p99_attack_over_baseline": (ratio * 100.0).round() / 100.0,
        });
        println!("{line}");
    }
    let counts = tally
        .counts
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let line = json!({
        "soak": "attack",
        "tenant": "mallory",
        "attack_s": (attack_took.as_secs_f64() * 10.0).round() / 10.0,
        "streams_tried": streams,
        "streams": ends,
        "streams_open_at_peak": peak_streams,
        "streams_opening_s": (opening_took.as_secs_f64() * 10.0).round() / 10.0,
        "answers": counts,
    });
    println!("{line}");
    let probes = Workload {
        latencies: probe_latencies,
        ..Workload::default()
    };
    let line = json!({
        "soak": "attack",
        "probe": "/healthz",
        "answered": probes.latencies.len(),
        "failed": probe_failures.len(),
        "p50_ms": probes.percentile_ms(50.0),
        "p99_ms": probes.percentile_ms(99.0),
    });
    println!("{line}");

    // 3. Behaviour: the well-behaved were served, mallory was told why not.
    for (tenant, seen) in ["alice", "bob"].iter().zip(&attacked) {
        assert!(
            seen.failures.is_empty(),
            "{tenant} was not served under the attack: {:#?}\n{}",
            seen.failures,
            log()
        );
        assert_eq!(seen.runs.len(), RUNS, "{tenant}'s runs");
    }
    assert!(
        probe_failures.is_empty() && !probes.latencies.is_empty(),
        "/healthz under the attack: {probe_failures:#?}\n{}",
        log()
    );
    let unexpected = tally
        .unexpected
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    assert!(
        unexpected.is_empty(),
        "mallory got answers the API does not document: {unexpected:#?}\n{}",
        log()
    );
    for (name, _, code) in label_sets() {
        if code.is_some() {
            assert!(
                tally.get(&format!("{name}_400")) > 0,
                "{name} never got its typed 400"
            );
        }
    }
    assert!(
        tally.get("slow_body_408") > 0,
        "no slow body was answered 408"
    );
    assert!(
        ends.get("held").copied().unwrap_or(0) > 0,
        "none of mallory's streams was held: {ends:?}"
    );

    // After the attack: her streams and sockets are released, and she is
    // served again like anyone.
    let release_began = Instant::now();
    let deadline = release_began + RELEASE_WITHIN;
    let probe_http = client(PROBE_IP, false);
    let (mut streams_now, mut files_now);
    loop {
        streams_now = open_streams(&probe_http, &base).await;
        files_now = server.open_files();
        if streams_now == Some(0) && files_now <= files_before + FD_SLACK {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "mallory's connections were not released within {RELEASE_WITHIN:?}: \
             {streams_now:?} streams open, {files_now} files open (before the attack: {files_before})\n{}",
            log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let released_took = release_began.elapsed();
    let line = json!({
        "soak": "released",
        "tenant": "mallory",
        "released_s": (released_took.as_secs_f64() * 10.0).round() / 10.0,
        "server_files_before_attack": files_before,
        "server_files_after": files_now,
    });
    println!("{line}");
    let mallory = client(MALLORY_IP, true);
    let listed = mallory
        .get(format!("{base}/v1/runs?limit=1"))
        .bearer_auth(MALLORY)
        .send()
        .await
        .expect("mallory's list is answered");
    assert_eq!(listed.status(), reqwest::StatusCode::OK, "{}", log());
    let (opened_tx, _opened) = mpsc::unbounded_channel();
    let again = tokio::spawn(hold_stream(
        server.addr,
        targets[0].clone(),
        Arc::new(Semaphore::new(1)),
        opened_tx,
        stop.clone(),
    ));
    match again.await.expect("the stream task") {
        // `stop` is cancelled already: an open stream returns at once.
        StreamEnd::Held => {}
        StreamEnd::Refused => panic!("mallory's streams were not given back\n{}", log()),
        StreamEnd::Unexpected(e) => panic!("mallory's stream after the attack: {e}\n{}", log()),
    }
    let line = json!({
        "soak": "total",
        "wall_s": (soak_began.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        "baseline_runs_per_tenant": RUNS,
        "start_latency": "POST /v1/runs until the whole response",
        "baseline_p99_ms": baseline.iter().map(|w| w.percentile_ms(99.0)).collect::<Vec<_>>(),
        "attack_p99_ms": attacked.iter().map(|w| w.percentile_ms(99.0)).collect::<Vec<_>>(),
    });
    println!("{line}");
}

/// Sends `request` on `stream` and reads until the connection closes or
/// `limit` passes; what came back.
async fn exchange(
    stream: &mut TcpStream,
    request: &[u8],
    limit: Duration,
) -> Result<String, String> {
    stream
        .write_all(request)
        .await
        .map_err(|e| format!("writing the request: {e}"))?;
    let deadline = tokio::time::Instant::now() + limit;
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => answer.extend_from_slice(&buf[..n]),
            Ok(Ok(_)) | Err(_) => break,
            Ok(Err(e)) if answer.is_empty() => return Err(format!("reading the answer: {e}")),
            Ok(Err(_)) => break,
        }
    }
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// After an answer given before the request's body was read (a 429 for the
/// tenant's share, a 408 for a body too slow), the connection either says
/// it closes (`connection: close`) or serves the next request: a client
/// keeping connections alive, as HTTP clients do, must not lose its next
/// request on a connection closed under it without a word.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_refused_before_its_body_leaves_no_broken_connection() {
    let server = Server::start(&[
        "--max-requests-per-tenant",
        "1",
        "--body-read-timeout-secs",
        "1",
    ]);
    let log = || server.log.text();
    let next = b"GET /healthz HTTP/1.1\r\nhost: soak\r\n\r\n";
    // mallory's one place, held by a body that never comes.
    let mut held = connect_from(MALLORY_IP, server.addr)
        .await
        .expect("a connection");
    let head = format!(
        "POST /v1/runs HTTP/1.1\r\nhost: soak\r\nauthorization: Bearer {MALLORY}\r\n\
         content-type: application/json\r\ncontent-length: 100\r\n\
         expect: 100-continue\r\n\r\n"
    );
    held.write_all(head.as_bytes())
        .await
        .expect("the head is sent");
    let continued = read_head(&mut held, Duration::from_secs(10)).await;
    assert!(
        continued
            .as_deref()
            .is_some_and(|h| h.starts_with("HTTP/1.1 100")),
        "{continued:?}\n{}",
        log()
    );
    // A start with a 64 KiB body meanwhile: refused before its body.
    let body = json!({"agent": "calculator", "input": "x".repeat(64 << 10)}).to_string();
    let request = format!(
        "POST /v1/runs HTTP/1.1\r\nhost: soak\r\nauthorization: Bearer {MALLORY}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut refused = connect_from(MALLORY_IP, server.addr)
        .await
        .expect("a connection");
    refused
        .write_all(request.as_bytes())
        .await
        .expect("the request is sent");
    let answer = read_head(&mut refused, Duration::from_secs(10))
        .await
        .expect("an answer");
    assert_eq!(status_of(&answer), 429, "{answer}");
    let says_close = has_header(&answer, "connection", "close");
    let then = exchange(&mut refused, next, Duration::from_secs(2)).await;
    let served = then.as_deref().is_ok_and(|t| t.contains("HTTP/1.1 200"));
    println!(
        "{}",
        json!({"early_answer": 429, "connection_close": says_close, "next_request_served": served})
    );
    assert!(
        says_close || served,
        "a 429 answered before its body said nothing of closing, and the connection \
         was closed under the next request ({then:?}); the 429: {answer}\n{}",
        log()
    );
    // The held body is answered 408 at the body-read timeout: the same.
    let answer = read_head(&mut held, Duration::from_secs(10))
        .await
        .expect("a 408");
    let answer = answer.trim_start_matches("HTTP/1.1 100 Continue\r\n\r\n");
    assert_eq!(status_of(answer), 408, "{answer}");
    let says_close = has_header(answer, "connection", "close");
    let then = exchange(&mut held, next, Duration::from_secs(2)).await;
    let served = then.as_deref().is_ok_and(|t| t.contains("HTTP/1.1 200"));
    println!(
        "{}",
        json!({"early_answer": 408, "connection_close": says_close, "next_request_served": served})
    );
    assert!(
        says_close || served,
        "a 408 said nothing of closing, and the connection was closed under the next \
         request ({then:?}); the 408: {answer}\n{}",
        log()
    );
}
