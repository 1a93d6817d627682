//! Agents called as tools, end to end: `weft serve` with
//! `examples/coordinator.toml`, whose two specialists run as child runs.
//! The writer's question is asked through the coordinator's call and
//! answered over HTTP; the server is killed with SIGKILL while the writer
//! waits, restarted on the same store, and the run finishes with each
//! specialist run exactly once; then the three runs replay identically
//! with the coordinator's file (`weft replay --all`). On SQLite and on
//! PostgreSQL.

mod common;

use std::io::BufReader;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::example;
use serde_json::{Value, json};

const TOKEN: &str = "team-token";

struct Server {
    child: Child,
    addr: String,
    log: common::LogTail,
}

impl Server {
    fn start(db: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_weft"))
            .arg("serve")
            .arg("--agent")
            .arg(example("coordinator.toml"))
            .args([
                "--db",
                db,
                "--addr",
                "127.0.0.1:0",
                "--lease-ttl-ms",
                "1000",
            ])
            .env("WEFT_TOKENS", format!("team={TOKEN}"))
            .env("RUST_LOG", "info,weft_runtime=debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let addr = common::served_address(&mut stderr);
        let log = common::keep_log(stderr);
        Self { child, addr, log }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let http = reqwest::Client::new();
        let mut request = http
            .request(method, format!("http://{}{path}", self.addr))
            .bearer_auth(TOKEN);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let reply = request.send().await.unwrap();
        let status = reply.status();
        let body: Value = reply.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "{path}: {status} {body}");
        body
    }

    async fn get(&self, path: &str) -> Value {
        self.call(reqwest::Method::GET, path, None).await
    }

    /// Polls the run until `done` holds of its view.
    async fn wait_for(&self, run: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let view = self.get(&format!("/v1/runs/{run}")).await;
            if done(&view) {
                return view;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: {view}\nthe server's log ends with:\n{}",
                self.log.text()
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The pending elicitation of the coordinator's call, once it is asked.
fn question(view: &Value) -> Option<Value> {
    view["await"]["items"]
        .as_array()?
        .iter()
        .find(|i| i["kind"] == "elicitation")
        .cloned()
}

async fn coordinator_with_a_crash_while_the_writer_asks(db: &str) {
    let first = Server::start(db);
    let started = first
        .call(
            reqwest::Method::POST,
            "/v1/runs",
            Some(json!({"agent": "coordinator", "input": "Report on 6 * 7"})),
        )
        .await;
    let run = started["run_id"].as_str().unwrap().to_owned();
    let asked = first
        .wait_for(&run, "the writer's question reaches the coordinator", |v| {
            question(v).is_some()
        })
        .await;
    let first_question = question(&asked).unwrap();
    assert_eq!(
        first_question["message"],
        "Which tone should the report take?"
    );
    // The server dies while the writer waits for its answer.
    first.kill();

    let second = Server::start(db);
    // Recovery withdraws the question and runs the coordinator's
    // (idempotent) call again: it finds the writer's run and asks anew.
    let asked = second
        .wait_for(&run, "the question is asked again after the restart", |v| {
            question(v).is_some_and(|q| q["id"] != first_question["id"])
        })
        .await;
    let item = question(&asked).unwrap();
    second
        .call(
            reqwest::Method::POST,
            &format!("/v1/runs/{run}/answers"),
            Some(json!({
                "item_id": item["id"],
                "answer": {"kind": "elicitation", "action": "accept", "content": {"answer": "plain"}},
            })),
        )
        .await;
    let done = second
        .wait_for(&run, "the coordinator finishes", |v| {
            v["status"] == "completed"
        })
        .await;
    assert_eq!(done["outcome"]["kind"], "response", "{done}");

    // One run per specialist, each completed, linked to the coordinator.
    let children = second
        .get(&format!("/v1/runs?label=weft.parent_run={run}"))
        .await;
    let mut agents: Vec<(String, String)> = children["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["agent_id"].as_str().unwrap().to_owned(),
                r["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    agents.sort();
    assert_eq!(
        agents,
        [
            ("researcher".to_owned(), "completed".to_owned()),
            ("writer".to_owned(), "completed".to_owned())
        ]
    );
    // The writer got the answer given to the coordinator.
    let writer = children["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["agent_id"] == "writer")
        .unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Its event stream (SSE) ends with its last event: it was finished.
    let stream = reqwest::Client::new()
        .get(format!("http://{}/v1/runs/{writer}/events", second.addr))
        .bearer_auth(TOKEN)
        .send();
    let text = tokio::time::timeout(Duration::from_secs(10), async {
        stream.await.unwrap().text().await.unwrap()
    })
    .await
    .expect("the writer's events within 10 s");
    assert!(
        text.contains(r#""answer":{"kind":"clarification","text":"plain"}"#),
        "{text}"
    );
    second.kill();

    // The coordinator's file brings its team: all three runs replay
    // identically, the call the crash cut short and asked again included.
    let db = db.to_owned();
    let replayed = tokio::task::spawn_blocking(move || {
        common::replay::replay_all(&db, &[example("coordinator.toml")], &[])
    })
    .await
    .unwrap();
    replayed.assert_identical(3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn specialists_run_once_across_a_crash_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("team.db");
    coordinator_with_a_crash_while_the_writer_asks(db.to_str().unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn specialists_run_once_across_a_crash_on_postgres() {
    let (db, _schema) = common::postgres_schema("team").await;
    coordinator_with_a_crash_while_the_writer_asks(&db).await;
}
