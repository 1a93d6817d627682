//! `weft bench serve`: one `weft serve` process (this binary, started as a
//! child on a fresh store) under `clients` concurrent HTTP clients. Each
//! client starts a run (`POST /v1/runs`), follows its events over SSE until
//! `run_finished`, and starts the next, for `seconds`. Prints one JSON line:
//! finished runs per second, and p50/p99 of start-to-first-event (from
//! sending the POST to the first SSE event's arrival) and of the whole run.
//!
//! The agent is scripted (one calculator call, then the answer), so the
//! figures are the server's own cost: HTTP, the store's commits, the event
//! fan-out. The server's quotas are lifted for the bench (`0`: no cap).

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};

/// What to measure.
#[derive(Debug, Clone)]
pub struct Settings {
    /// HTTP clients at once, each with its run's event stream open.
    pub clients: usize,
    /// Seconds of measurement, after one warm-up run per client.
    pub seconds: f64,
    /// The store: `None` for a fresh SQLite file, or a `postgres://` URL.
    pub db: Option<String>,
}

/// What one client saw of one run.
struct Sample {
    first_event: Duration,
    finished: Duration,
}

pub(super) const TOKEN: &str = "bench-token";

const AGENT: &str = r#"id = "w"
toolsets = ["calc"]

[planner]
kind = "scripted"

[[planner.turns]]
tool_calls = [{ name = "calc.add", args = { a = 2, b = 3 } }]

[[planner.turns]]
text = "5"
"#;

/// Starts the server, runs the clients, stops the server; one JSON line.
pub fn run(s: &Settings) -> anyhow::Result<Value> {
    let setup = Setup::new(AGENT, s.db.as_deref())?;
    let store = setup.store;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    tokio.block_on(async {
        let (mut child, base) = setup.start_server(&[]).await?;
        let measured = drive(s, &base).await;
        child.start_kill().ok();
        child.wait().await.ok();
        let (samples, errors, secs) = measured?;
        let mut first: Vec<Duration> = samples.iter().map(|x| x.first_event).collect();
        let mut whole: Vec<Duration> = samples.iter().map(|x| x.finished).collect();
        first.sort_unstable();
        whole.sort_unstable();
        Ok(json!({
            "bench": "serve",
            "store": store,
            "clients": s.clients,
            "runs": samples.len(),
            "errors": errors,
            "seconds": (secs * 100.0).round() / 100.0,
            "runs_per_s": (samples.len() as f64 / secs).round(),
            "first_event_p50_ms": ms(pct(&first, 50)),
            "first_event_p99_ms": ms(pct(&first, 99)),
            "run_p50_ms": ms(pct(&whole, 50)),
            "run_p99_ms": ms(pct(&whole, 99)),
        }))
    })
}

/// What a served benchmark runs on: a directory with the agent file and
/// the token file, and the store (a fresh SQLite file in the directory, or
/// a `postgres://` URL).
pub(super) struct Setup {
    dir: tempfile::TempDir,
    db: String,
    /// `sqlite` or `postgres`.
    pub(super) store: &'static str,
}

impl Setup {
    pub(super) fn new(agent: &str, db: Option<&str>) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("bench.toml"), agent)?;
        std::fs::write(dir.path().join("tokens"), format!("bench={TOKEN}\n"))?;
        let db = match db {
            Some(url) => url.to_owned(),
            None => dir.path().join("bench.db").display().to_string(),
        };
        let store = if db.starts_with("postgres") {
            "postgres"
        } else {
            "sqlite"
        };
        Ok(Self { dir, db, store })
    }

    /// `weft serve` on this setup, with `envs` set.
    pub(super) async fn start_server(
        &self,
        envs: &[(&str, String)],
    ) -> anyhow::Result<(tokio::process::Child, String)> {
        let path = self.dir.path();
        start_server(
            &path.join("bench.toml"),
            &path.join("tokens"),
            &self.db,
            envs,
        )
        .await
    }
}

/// `weft serve` as a child process on a free port, with `envs` set; returns
/// it and its URL.
async fn start_server(
    agent: &Path,
    tokens: &Path,
    db: &str,
    envs: &[(&str, String)],
) -> anyhow::Result<(tokio::process::Child, String)> {
    let exe = std::env::current_exe().context("finding the weft binary")?;
    let mut child = tokio::process::Command::new(exe)
        .args(["serve", "--addr", "127.0.0.1:0", "--db", db])
        .arg("--agent")
        .arg(agent)
        .arg("--tokens-file")
        .arg(tokens)
        .args(["--max-unfinished-runs", "0", "--runs-per-minute", "0"])
        .args(["--max-event-streams", "0"])
        .env("RUST_LOG", "warn")
        .envs(envs.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting weft serve")?;
    let stderr = child.stderr.take().context("weft serve has no stderr")?;
    let mut lines = BufReader::new(stderr).lines();
    let found = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await? {
            if let Some(rest) = line.split("serving on http://").nth(1) {
                let addr = rest.split_whitespace().next().unwrap_or_default();
                return Ok::<_, std::io::Error>(Some(format!("http://{addr}")));
            }
        }
        Ok(None)
    })
    .await
    .context("weft serve did not start within 30 s")??;
    let base = found.context("weft serve exited before listening")?;
    // Keep draining the server's log so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, base))
}

/// Runs the clients; returns the samples, the failed runs and the seconds.
async fn drive(s: &Settings, base: &str) -> anyhow::Result<(Vec<Sample>, u64, f64)> {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(s.clients * 2)
        .tcp_nodelay(true)
        .build()?;
    let base: Arc<str> = base.into();
    // One warm-up run per client, all at once: connections open, caches warm.
    let warm =
        futures_util::future::join_all((0..s.clients).map(|_| one_run(http.clone(), base.clone())))
            .await;
    if let Some(Err(e)) = warm.into_iter().find(Result::is_err) {
        return Err(e.context("a warm-up run failed"));
    }
    let deadline = Instant::now() + Duration::from_secs_f64(s.seconds);
    let started = Instant::now();
    let tasks: Vec<_> = (0..s.clients)
        .map(|_| {
            let (http, base) = (http.clone(), base.clone());
            tokio::spawn(async move {
                let mut samples = Vec::new();
                let mut errors = 0u64;
                while Instant::now() < deadline {
                    match one_run(http.clone(), base.clone()).await {
                        Ok(sample) => samples.push(sample),
                        Err(_) => errors += 1,
                    }
                }
                (samples, errors)
            })
        })
        .collect();
    let mut samples = Vec::new();
    let mut errors = 0;
    for task in tasks {
        let (mut s, e) = task.await?;
        samples.append(&mut s);
        errors += e;
    }
    Ok((samples, errors, started.elapsed().as_secs_f64()))
}

/// Starts a run of agent `w` on input "go"; returns its id.
pub(super) async fn start_run(http: &reqwest::Client, base: &str) -> anyhow::Result<String> {
    let started: Value = http
        .post(format!("{base}/v1/runs"))
        .bearer_auth(TOKEN)
        .json(&json!({"agent": "w", "input": "go"}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    Ok(started["run_id"]
        .as_str()
        .context("the start answer has no run_id")?
        .to_owned())
}

/// Starts one run and follows its events to `run_finished`.
async fn one_run(http: reqwest::Client, base: Arc<str>) -> anyhow::Result<Sample> {
    let t0 = Instant::now();
    let run_id = start_run(&http, &base).await?;
    let mut body = http
        .get(format!("{base}/v1/runs/{run_id}/events"))
        .bearer_auth(TOKEN)
        .header("accept", "text/event-stream")
        .send()
        .await?
        .error_for_status()?
        .bytes_stream();
    let mut first_event = None;
    // The tail of what arrived, enough to see an event name split across chunks.
    let mut tail = String::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        tail.push_str(&String::from_utf8_lossy(&chunk));
        if first_event.is_none() && tail.contains("data:") {
            first_event = Some(t0.elapsed());
        }
        if tail.contains("event: run_finished") || tail.contains("event:run_finished") {
            let first_event = first_event.unwrap_or_else(|| t0.elapsed());
            return Ok(Sample {
                first_event,
                finished: t0.elapsed(),
            });
        }
        if tail.len() > 256 {
            let cut = tail.len() - 64;
            let cut = (cut..tail.len())
                .find(|&i| tail.is_char_boundary(i))
                .unwrap_or(cut);
            tail.drain(..cut);
        }
    }
    anyhow::bail!("run {run_id}: the event stream ended before run_finished")
}

fn pct(sorted: &[Duration], p: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) * p).div_ceil(100).min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 10_000.0).round() / 10.0
}
