//! `weft serve`'s A2A routes (`/a2a/{agent}`), behind its tenant tokens,
//! through the real binary: the official SDK's client (`tests/a2a/client.py`)
//! runs every check it runs against `weft a2a serve`, authenticating as the
//! card's bearer scheme asks with the SDK's own auth interceptor, and finds
//! none of its tasks visible to another tenant; plain HTTP shows what the
//! routes refuse (no token, an unknown agent, another tenant's context)
//! and that an A2A start counts against the tenant's run quota.

mod common;
#[path = "a2a/harness.rs"]
mod harness;

use std::io::BufReader;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use harness::{ANSWERER, ASKER};
use serde_json::{Value, json};

const ALPHA: &str = "alpha-token";
const BETA: &str = "beta-token";

/// A running `weft serve`, killed when dropped.
struct Server {
    child: Child,
    base: String,
    log: common::LogTail,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// The A2A base URL of `agent`.
    fn agent(&self, agent: &str) -> String {
        format!("{}/a2a/{agent}", self.base)
    }
}

/// `weft serve` of the agent files `agents` (name, text) on a SQLite store
/// in `dir`, tenants `alpha` and `beta` holding [`ALPHA`] and [`BETA`].
fn serve(dir: &Path, agents: &[(&str, &str)], extra: &[&str]) -> Server {
    let tokens = dir.join("tokens");
    std::fs::write(&tokens, format!("alpha={ALPHA}\nbeta={BETA}\n")).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_weft"));
    command.arg("serve");
    for (name, text) in agents {
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(&path, text).unwrap();
        command.arg("--agent").arg(path);
    }
    let mut child = command
        .arg("--db")
        .arg(dir.join("w.db"))
        .args(["--addr", "127.0.0.1:0", "--tokens-file"])
        .arg(&tokens)
        .args(extra)
        .env_remove("WEFT_TOKENS")
        .env("OPENAI_API_KEY", "sk-fake")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let addr = common::served_address(&mut stderr);
    let log = common::keep_log(stderr);
    Server {
        child,
        base: format!("http://{addr}"),
        log,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_sdk_client_drives_weft_serve_behind_tenant_tokens() {
    let Some(python) = harness::sdk_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (staller10, _fake10) = harness::staller("staller10").await;
    let (staller03, _fake03) = harness::staller("staller03").await;
    let agents = [
        ("answerer", ANSWERER),
        ("asker", ASKER),
        ("staller10", staller10.as_str()),
        ("staller03", staller03.as_str()),
    ];
    let server = serve(dir.path(), &agents, &[]);
    let urls = json!({
        "answerer": server.agent("answerer"),
        "asker": server.agent("asker"),
        "stallers": {"1.0": server.agent("staller10"), "0.3": server.agent("staller03")},
        "token": ALPHA,
        "other_token": BETA,
    });
    let out = harness::sdk_client(&python, &urls, || server.log.text()).await;
    assert!(out.contains("tenants ok"), "{out}");
    // The tasks are the tenant's runs, on the API as on A2A.
    let runs: Value = reqwest::Client::new()
        .get(format!("{}/v1/runs?limit=100", server.base))
        .bearer_auth(BETA)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(runs["runs"], json!([]), "beta started nothing: {runs}");
}

/// Posts JSON-RPC `method` with `params` (A2A 1.0) to `url` as `token`;
/// the HTTP status and the JSON answer.
async fn call(url: &str, token: Option<&str>, method: &str, params: Value) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = reqwest::Client::new()
        .post(url)
        .header("A2A-Version", "1.0")
        .json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn message(text: &str, context: Option<&str>) -> Value {
    let mut message = json!({"messageId": text, "role": "ROLE_USER", "parts": [{"text": text}]});
    if let Some(context) = context {
        message["contextId"] = json!(context);
    }
    json!({ "message": message })
}

#[tokio::test(flavor = "multi_thread")]
async fn the_routes_keep_tenants_apart_and_count_their_runs() {
    let dir = tempfile::tempdir().unwrap();
    let agents = [("answerer", ANSWERER), ("asker", ASKER)];
    let server = serve(dir.path(), &agents, &["--max-unfinished-runs", "1"]);
    let answerer = server.agent("answerer");
    let asker = server.agent("asker");
    let card = format!("{answerer}/.well-known/agent-card.json");
    let status = |r: reqwest::Response| r.status().as_u16();
    let http = reqwest::Client::new();
    assert_eq!(status(http.get(&card).send().await.unwrap()), 401);
    let (code, _) = call(&answerer, None, "GetTask", json!({"id": "x"})).await;
    assert_eq!(code, 401, "a call without a token");
    let (code, _) = call(&answerer, Some("wrong"), "GetTask", json!({"id": "x"})).await;
    assert_eq!(code, 401, "a call with an unknown token");
    let (code, body) = call(&server.agent("nobody"), Some(ALPHA), "GetTask", json!({})).await;
    assert_eq!(code, 404, "an agent not served: {body}");
    let card: Value = http
        .get(&card)
        .bearer_auth(ALPHA)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["supportedInterfaces"][0]["url"], answerer);
    assert_eq!(card["url"], format!("{answerer}/v0.3"));

    // Alpha's task, in a context of alpha's.
    let (_, v) = call(&answerer, Some(ALPHA), "SendMessage", message("hi", None)).await;
    let task = &v["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
    let (id, context) = (
        task["id"].as_str().unwrap(),
        task["contextId"].as_str().unwrap(),
    );
    let (_, v) = call(&answerer, Some(BETA), "GetTask", json!({ "id": id })).await;
    assert_eq!(
        v["error"]["code"], -32001,
        "beta does not see alpha's task: {v}"
    );
    let (_, v) = call(
        &answerer,
        Some(BETA),
        "SendMessage",
        message("hi", Some(context)),
    )
    .await;
    assert_eq!(
        v["error"]["code"], -32602,
        "beta cannot join alpha's context: {v}"
    );
    let (_, v) = call(
        &answerer,
        Some(ALPHA),
        "SendMessage",
        message("again", Some(context)),
    )
    .await;
    let again = &v["result"]["task"];
    assert_eq!(
        again["contextId"], context,
        "alpha continues its context: {v}"
    );
    let (_, v) = call(
        &answerer,
        Some(ALPHA),
        "SendMessage",
        message("x", Some("mine")),
    )
    .await;
    assert_eq!(
        v["error"]["code"], -32602,
        "a context the server never made: {v}"
    );

    // One unfinished run each: alpha's asker waits for input, and the
    // next start is refused until it is answered.
    let (_, v) = call(
        &asker,
        Some(ALPHA),
        "SendMessage",
        message("greet me", None),
    )
    .await;
    let waiting = &v["result"]["task"];
    assert_eq!(
        waiting["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{v}"
    );
    let (_, v) = call(&asker, Some(ALPHA), "SendMessage", message("and me", None)).await;
    assert_eq!(v["error"]["code"], -32000, "over the quota: {v}");
    assert_eq!(v["error"]["data"][0]["reason"], "RESOURCE_EXHAUSTED", "{v}");
    let (_, v) = call(&answerer, Some(BETA), "SendMessage", message("hi", None)).await;
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "beta's quota is its own: {v}"
    );
    let mut answer = message("Ada", None);
    answer["message"]["taskId"] = waiting["id"].clone();
    let (_, v) = call(&asker, Some(ALPHA), "SendMessage", answer).await;
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{v}"
    );
    let (_, v) = call(&answerer, Some(ALPHA), "SendMessage", message("now", None)).await;
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "room again: {v}"
    );
}
