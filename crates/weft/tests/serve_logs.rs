//! `weft serve` as an operator runs it: tokens from a file (never the
//! command line), and logs on stderr as JSON lines whose spans carry the
//! tenant of a request and the id and tenant of a run, and a store failure
//! logged with its cause, and its request's line (status 500) at info level.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};

use common::example;
use serde_json::{Value, json};

fn weft() -> Command {
    Command::new(env!("CARGO_BIN_EXE_weft"))
}

/// `weft serve` of the calculator on `db`, tokens for tenants `acme` and
/// `other` in a file in `dir`, logging JSON lines at info level; returns
/// the server, its log and its address.
fn serve_with_json_logs(dir: &Path, db: &str) -> (Child, BufReader<ChildStderr>, String) {
    let tokens = dir.join("tokens");
    std::fs::write(&tokens, "acme=secret-token\nother=other-token\n").unwrap();
    let mut child = weft()
        .arg("serve")
        .arg("--agent")
        .arg(example("calculator.toml"))
        .args(["--db", db])
        .args(["--addr", "127.0.0.1:0", "--log-format", "json"])
        .arg("--tokens-file")
        .arg(&tokens)
        .env_remove("WEFT_TOKENS")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let addr = common::served_address(&mut stderr);
    (child, stderr, addr)
}

#[test]
fn tokens_are_refused_on_the_command_line() {
    let out = weft()
        .args(["serve", "--tokens", "a=b", "--agent"])
        .arg(example("calculator.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("--tokens"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn json_logs_name_the_tenant_and_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db").display().to_string();
    let (mut child, stderr, addr) = serve_with_json_logs(dir.path(), &db);
    let http = reqwest::Client::new();
    let call = |request: reqwest::RequestBuilder| async move {
        let reply = request.bearer_auth("secret-token").send().await.unwrap();
        reply.json::<Value>().await.unwrap()
    };
    let started = call(
        http.post(format!("http://{addr}/v1/runs"))
            .json(&json!({"agent": "calculator", "input": "What is 2 + 3?"})),
    )
    .await;
    let run_id = started["run_id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let view = call(http.get(format!("http://{addr}/v1/runs/{run_id}"))).await;
        if view["status"] == "completed" {
            break;
        }
        assert!(Instant::now() < deadline, "run did not finish: {view}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let lines: Vec<Value> = stderr
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str(&l).ok())
        .collect();
    let with_message = |m: &str| {
        lines
            .iter()
            .find(|l| l["fields"]["message"] == m)
            .unwrap_or_else(|| panic!("no `{m}` line in {lines:?}"))
            .clone()
    };
    let started = with_message("run started");
    assert_eq!(started["span"]["name"], "request");
    assert_eq!(started["span"]["tenant"], "acme");
    assert_eq!(started["fields"]["run_id"], run_id.as_str());
    let finished = with_message("run finished");
    assert_eq!(finished["span"]["name"], "run");
    assert_eq!(finished["span"]["run_id"], run_id.as_str());
    assert_eq!(finished["span"]["tenant"], "acme");
    assert_eq!(finished["fields"]["outcome"], "completed");
    let text = serde_json::to_string(&lines).unwrap();
    assert!(!text.contains("secret-token"), "a token reached the logs");
}

/// A store that fails under a request (here: its PostgreSQL schema dropped
/// while the server runs) answers 500 with a generic problem, and the
/// failure is logged with its cause and the request's tenant.
#[tokio::test(flavor = "multi_thread")]
async fn a_store_failure_is_logged_with_its_cause() {
    use sqlx::Connection as _;
    let (db, schema) = common::postgres_schema("weft_logs").await;
    let dir = tempfile::tempdir().unwrap();
    let (mut child, stderr, addr) = serve_with_json_logs(dir.path(), &db);
    let http = reqwest::Client::new();
    let list = || {
        http.get(format!("http://{addr}/v1/runs"))
            .bearer_auth("secret-token")
            .send()
    };
    assert_eq!(list().await.unwrap().status(), 200);
    let mut conn = sqlx::PgConnection::connect(&schema.base).await.unwrap();
    sqlx::query(&format!("DROP SCHEMA \"{}\" CASCADE", schema.schema))
        .execute(&mut conn)
        .await
        .unwrap();
    let reply = list().await.unwrap();
    assert_eq!(reply.status(), 500);
    let request_id = reply.headers()["x-request-id"].to_str().unwrap().to_owned();
    let problem: Value = reply.json().await.unwrap();
    assert_eq!(problem["detail"], "the server failed to handle the request");
    assert_eq!(problem["request_id"], request_id.as_str());
    child.kill().unwrap();
    child.wait().unwrap();
    let lines: Vec<Value> = stderr
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str(&l).ok())
        .collect();
    let failed = lines
        .iter()
        .find(|l| l["fields"]["message"] == "request failed")
        .unwrap_or_else(|| panic!("no `request failed` line in {lines:?}"));
    assert_eq!(failed["level"], "ERROR");
    assert_eq!(failed["span"]["tenant"], "acme");
    assert_eq!(failed["span"]["request_id"], request_id.as_str());
    // The request's own line, at info level (a 2xx or 4xx is at debug).
    let served = lines
        .iter()
        .find(|l| l["fields"]["message"] == "request")
        .unwrap_or_else(|| panic!("no request line in {lines:?}"));
    assert_eq!(served["level"], "INFO");
    let fields = &served["fields"];
    assert_eq!(fields["status"], 500);
    assert_eq!(fields["method"], "GET");
    assert_eq!(fields["route"], "/v1/runs");
    assert_eq!(fields["tenant"], "acme");
    assert_eq!(fields["request_id"], request_id.as_str());
    let cause = failed["fields"]["error"].as_str().unwrap_or_default();
    assert!(
        cause.contains("does not exist"),
        "the cause is logged: {cause}"
    );
}
