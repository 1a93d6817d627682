//! What `weft serve` records of each request, through the real binary: a
//! log line per request (at debug level, with its route template, status,
//! tenant and request id), the `x-request-id` echoed and named in problem
//! bodies, the HTTP metrics on `/metrics`, runs ended by a cancel counted
//! as finished, a text log written to a file without colour codes, and a
//! burst of runs on one server that warns of no lost lease.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::example;
use serde_json::{Value, json};

const TOKEN: &str = "secret-token";
const METRICS_TOKEN: &str = "scrape-token";

/// `weft serve` of `agent` on a SQLite store in `dir`, the tenant `acme`
/// holding [`TOKEN`], `/metrics` open to [`METRICS_TOKEN`], logs on
/// `stderr` in `format` at `RUST_LOG=filter`, with `extra` flags.
fn serve(
    dir: &Path,
    agent: &str,
    format: &str,
    filter: &str,
    extra: &[&str],
    stderr: Stdio,
) -> Child {
    let tokens = dir.join("tokens");
    std::fs::write(&tokens, format!("acme={TOKEN}\n")).unwrap();
    Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg("serve")
        .arg("--agent")
        .arg(example(agent))
        .arg("--db")
        .arg(dir.join("w.db"))
        .args(["--addr", "127.0.0.1:0", "--log-format", format])
        .arg("--tokens-file")
        .arg(&tokens)
        .args(extra)
        .env_remove("WEFT_TOKENS")
        .env("WEFT_METRICS_TOKEN", METRICS_TOKEN)
        .env("RUST_LOG", filter)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// Stops `child` and parses the JSON lines of its log.
fn json_log(mut child: Child, stderr: BufReader<std::process::ChildStderr>) -> Vec<Value> {
    child.kill().unwrap();
    child.wait().unwrap();
    stderr
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str(&l).ok())
        .collect()
}

/// The request log line of the request with id `id`.
fn request_line<'a>(lines: &'a [Value], id: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["fields"]["message"] == "request" && l["fields"]["request_id"] == id)
        .unwrap_or_else(|| panic!("no request line for {id} in {lines:#?}"))
}

/// Sends `request` with request id `id`; its status, echoed id and body.
async fn send(request: reqwest::RequestBuilder, id: &str) -> (u16, String, Value) {
    let reply = request.header("x-request-id", id).send().await.unwrap();
    let status = reply.status().as_u16();
    let echoed = reply.headers()["x-request-id"].to_str().unwrap().to_owned();
    let body = reply.json().await.unwrap_or(Value::Null);
    (status, echoed, body)
}

#[tokio::test(flavor = "multi_thread")]
async fn each_request_leaves_a_debug_line_and_its_id() {
    let dir = tempfile::tempdir().unwrap();
    let filter = "info,weft_server=debug";
    let args = ["--runs-per-minute", "1"];
    let mut child = serve(
        dir.path(),
        "calculator.toml",
        "json",
        filter,
        &args,
        Stdio::piped(),
    );
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let addr = common::served_address(&mut stderr);
    let http = reqwest::Client::new();
    let url = |path: &str| format!("http://{addr}{path}");

    // 401: no token; the problem names the request's id.
    let (status, echoed, body) = send(http.get(url("/v1/runs/run_x")), "req-401").await;
    assert_eq!((status, echoed.as_str()), (401, "req-401"));
    assert_eq!(body["request_id"], "req-401");
    // 404 of a run that does not exist, and of a route that does not.
    let run = http.get(url("/v1/runs/run_x")).bearer_auth(TOKEN);
    let (status, _, body) = send(run, "req-404").await;
    assert_eq!((status, &body["request_id"]), (404, &json!("req-404")));
    let (status, _, _) = send(http.get(url("/no/such/route")), "req-nowhere").await;
    assert_eq!(status, 404);
    // 413: a body just over the 1 MiB limit (the server reads it whole
    // before refusing it, so it does not reset the connection under a
    // client still sending; a reset is tried again all the same).
    let big = json!({"agent": "calculator", "input": "x".repeat(1 << 20)});
    let mut attempts = 0;
    let status = loop {
        attempts += 1;
        let request = http.post(url("/v1/runs")).bearer_auth(TOKEN).json(&big);
        match request.header("x-request-id", "req-413").send().await {
            Ok(reply) => break reply.status().as_u16(),
            Err(e) => assert!(attempts < 3, "{e}"),
        }
    };
    assert_eq!(status, 413);
    // 201, then 429: one run a minute.
    let start = || {
        let body = json!({"agent": "calculator", "input": "What is 2 + 3?"});
        http.post(url("/v1/runs")).bearer_auth(TOKEN).json(&body)
    };
    let (status, _, _) = send(start(), "req-201").await;
    assert_eq!(status, 201);
    let (status, _, body) = send(start(), "req-429").await;
    assert_eq!((status, &body["request_id"]), (429, &json!("req-429")));
    // A malformed id (a space, or longer than 64) is replaced by a fresh one.
    for bad in ["has space", &"x".repeat(65)] {
        let (status, echoed, body) = send(http.get(url("/v1/runs/run_x")), bad).await;
        assert_eq!(status, 401);
        assert_eq!(echoed.len(), 32, "{echoed}");
        assert_eq!(body["request_id"], echoed.as_str());
    }
    // A success carries an id too.
    let reply = http.get(url("/healthz")).send().await.unwrap();
    assert_eq!(reply.headers()["x-request-id"].len(), 32);

    let lines = json_log(child, stderr);
    let expect = [
        ("req-401", "GET", "/v1/runs/{run_id}", 401, None),
        ("req-404", "GET", "/v1/runs/{run_id}", 404, Some("acme")),
        ("req-nowhere", "GET", "unmatched", 404, None),
        ("req-413", "POST", "/v1/runs", 413, Some("acme")),
        ("req-201", "POST", "/v1/runs", 201, Some("acme")),
        ("req-429", "POST", "/v1/runs", 429, Some("acme")),
    ];
    for (id, method, route, status, tenant) in expect {
        let line = request_line(&lines, id);
        assert_eq!(line["level"], "DEBUG", "{line}");
        let fields = &line["fields"];
        assert_eq!(fields["method"], method, "{line}");
        assert_eq!(fields["route"], route, "{line}");
        assert_eq!(fields["status"], status, "{line}");
        assert_eq!(fields["tenant"].as_str(), tenant, "{line}");
        assert!(fields["duration_ms"].as_f64().is_some(), "{line}");
    }
    let text = serde_json::to_string(&lines).unwrap();
    assert!(!text.contains(TOKEN), "a token reached the logs");
    assert!(
        !text.contains("xxxxxxxxxxxxxxxx"),
        "a body reached the logs"
    );
}

/// At the default level (info) no 2xx or 4xx request is logged.
#[tokio::test(flavor = "multi_thread")]
async fn requests_are_not_logged_at_info() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = serve(
        dir.path(),
        "calculator.toml",
        "json",
        "info",
        &[],
        Stdio::piped(),
    );
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let addr = common::served_address(&mut stderr);
    let reply = reqwest::get(format!("http://{addr}/v1/runs"))
        .await
        .unwrap();
    assert_eq!(reply.status(), 401);
    let lines = json_log(child, stderr);
    assert!(
        !lines.iter().any(|l| l["fields"]["message"] == "request"),
        "{lines:#?}"
    );
}

/// The value of the sample `name{labels}` in an exposition.
fn sample(text: &str, name: &str, labels: &str) -> Option<f64> {
    let prefix = format!("{name}{{{labels}}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.parse().unwrap())
}

async fn scrape(http: &reqwest::Client, addr: &str) -> String {
    let reply = http
        .get(format!("http://{addr}/metrics"))
        .bearer_auth(METRICS_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
    reply.text().await.unwrap()
}

/// Calls the API as the tenant; the reply must succeed.
async fn call(http: &reqwest::Client, addr: &str, path: &str, body: Option<Value>) -> Value {
    let url = format!("http://{addr}{path}");
    let request = match body {
        Some(body) => http.post(url).json(&body),
        None => http.get(url),
    };
    let reply = request.bearer_auth(TOKEN).send().await.unwrap();
    assert!(reply.status().is_success(), "{path}: {}", reply.status());
    reply.json().await.unwrap()
}

async fn wait_status(http: &reqwest::Client, addr: &str, run: &str, status: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let view = call(http, addr, &format!("/v1/runs/{run}"), None).await;
        if view["status"] == status {
            return;
        }
        assert!(Instant::now() < deadline, "the run is not {status}: {view}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs cancelled while awaiting an answer, or paused, are counted as
/// finished: started − finished is the runs in flight. And `/metrics`
/// has the request counter and latency histogram by route template.
#[tokio::test(flavor = "multi_thread")]
async fn metrics_count_requests_and_cancelled_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = serve(
        dir.path(),
        "clarify.toml",
        "json",
        "info",
        &[],
        Stdio::piped(),
    );
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let addr = common::served_address(&mut stderr);
    let _log = common::keep_log(stderr);
    let http = reqwest::Client::new();
    let input = json!({"agent": "clarify", "input": "Add 2 and 3"});
    let mut runs = Vec::new();
    for _ in 0..2 {
        let started = call(&http, &addr, "/v1/runs", Some(input.clone())).await;
        let run = started["run_id"].as_str().unwrap().to_owned();
        wait_status(&http, &addr, &run, "awaiting").await;
        runs.push(run);
    }
    // One cancelled while it awaits, one paused first.
    call(
        &http,
        &addr,
        &format!("/v1/runs/{}/pause", runs[1]),
        Some(json!({})),
    )
    .await;
    wait_status(&http, &addr, &runs[1], "paused").await;
    for run in &runs {
        call(
            &http,
            &addr,
            &format!("/v1/runs/{run}/cancel"),
            Some(json!({})),
        )
        .await;
        wait_status(&http, &addr, run, "cancelled").await;
    }
    let missing = http
        .get(format!("http://{addr}/v1/runs/run_missing"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);

    let text = scrape(&http, &addr).await;
    let value = |name: &str, labels: &str| {
        sample(&text, name, labels).unwrap_or_else(|| panic!("no {name}{{{labels}}} in {text}"))
    };
    assert_eq!(value("weft_runs_started_total", r#"agent="clarify""#), 2.0);
    let cancelled = r#"agent="clarify",outcome="cancelled""#;
    assert_eq!(value("weft_runs_finished_total", cancelled), 2.0);
    let not_found = r#"method="GET",route="/v1/runs/{run_id}",status="404""#;
    assert_eq!(value("weft_http_requests_total", not_found), 1.0);
    let started = r#"method="POST",route="/v1/runs",status="201""#;
    assert_eq!(value("weft_http_requests_total", started), 2.0);
    let class = r#"method="GET",route="/v1/runs/{run_id}",status_class="4xx""#;
    assert_eq!(
        value("weft_http_request_duration_seconds_count", class),
        1.0
    );
    let bucket = format!(r#"le="+Inf",{class}"#);
    assert_eq!(
        value("weft_http_request_duration_seconds_bucket", &bucket),
        1.0
    );
    assert!(text.contains("# TYPE weft_http_request_duration_seconds histogram"));
    assert!(text.contains("# TYPE weft_http_requests counter"));
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A text log written to a file carries no colour codes.
#[tokio::test(flavor = "multi_thread")]
async fn a_text_log_in_a_file_is_plain() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("weft.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let filter = "info,weft_server=debug";
    let mut child = serve(
        dir.path(),
        "calculator.toml",
        "text",
        filter,
        &[],
        log.into(),
    );
    let read = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(30);
    let addr = loop {
        let text = read();
        if let Some(rest) = text.split("serving on http://").nth(1) {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
        assert!(Instant::now() < deadline, "not serving: {text}");
        assert!(child.try_wait().unwrap().is_none(), "exited: {text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let http = reqwest::Client::new();
    let body = json!({"agent": "calculator", "input": "What is 2 + 3?"});
    let started = call(&http, &addr, "/v1/runs", Some(body)).await;
    let run = started["run_id"].as_str().unwrap().to_owned();
    wait_status(&http, &addr, &run, "completed").await;
    child.kill().unwrap();
    child.wait().unwrap();
    let text = read();
    assert!(text.contains("run started"), "{text}");
    assert!(text.contains("route=/v1/runs/{run_id}"), "{text}");
    assert!(!text.contains('\u{1b}'), "colour codes in a file: {text:?}");
}

/// A burst of runs on one server, with a short lease TTL (a renewal every
/// 200 ms): many runs' last commits free their leases while a renewal is
/// under way. None of them is another process's, so none is a "lease
/// lost" warning; each is a debug line naming why the lease was not
/// renewed. (A TTL much shorter lets a loaded debug build miss its own
/// renewals: those drops are real, and warned of as such.)
#[tokio::test(flavor = "multi_thread")]
async fn a_burst_of_runs_warns_of_no_lost_lease() {
    const RUNS: usize = 300;
    let dir = tempfile::tempdir().unwrap();
    let filter = "info,weft_runtime::leases=debug";
    let args = [
        "--lease-ttl-ms",
        "600",
        "--runs-per-minute",
        "0",
        "--max-unfinished-runs",
        "0",
        "--durability",
        "process",
    ];
    let mut child = serve(
        dir.path(),
        "calculator.toml",
        "json",
        filter,
        &args,
        Stdio::piped(),
    );
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let addr = common::served_address(&mut stderr);
    // The log is read while the burst runs, so the server never blocks on it.
    let log = std::thread::spawn(move || {
        stderr
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
            .collect::<Vec<_>>()
    });
    let http = reqwest::Client::new();
    let mut starts = Vec::new();
    for worker in 0..8 {
        let (http, addr) = (http.clone(), addr.clone());
        starts.push(tokio::spawn(async move {
            for _ in (worker..RUNS).step_by(8) {
                let body = json!({"agent": "calculator", "input": "What is 2 + 3?"});
                call(&http, &addr, "/v1/runs", Some(body)).await;
            }
        }));
    }
    for start in starts {
        start.await.unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    let completed = r#"agent="calculator",outcome="completed""#;
    loop {
        let text = scrape(&http, &addr).await;
        let done = sample(&text, "weft_runs_finished_total", completed).unwrap_or(0.0);
        if done as usize == RUNS {
            break;
        }
        assert!(Instant::now() < deadline, "{done} of {RUNS} runs finished");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let lines = log.join().unwrap();
    let message = |l: &Value| {
        l["fields"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let lost: Vec<&Value> = lines
        .iter()
        .filter(|l| l["level"] == "WARN" && message(l).starts_with("lease lost"))
        .collect();
    assert!(lost.is_empty(), "{lost:#?}");
    // Each lease a renewal missed, by why (before, each was a warning).
    let mut explained = std::collections::BTreeMap::<String, usize>::new();
    for line in lines
        .iter()
        .filter(|l| message(l).starts_with("lease not renewed"))
    {
        let why = format!("{} {}", message(line), line["fields"]["status"]);
        *explained.entry(why).or_default() += 1;
    }
    eprintln!("leases not renewed: {explained:?}");
}
