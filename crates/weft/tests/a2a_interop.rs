//! `weft a2a serve` against the official A2A SDK: the real binary serves
//! agent files (scripted ones, and one whose model is a strict OpenAI fake
//! that never answers its first request, so its task stays working until
//! cancelled), and the SDK's own Python client (`tests/a2a/client.py`,
//! from the virtual environment `scripts/a2a-sdk.sh` makes) fetches the
//! card, sends, streams, gets, cancels, subscribes and answers an
//! input-required task, over A2A 1.0 and 0.3 JSON-RPC.
//!
//! Without `WEFT_A2A_PYTHON` the SDK test is skipped, unless
//! `WEFT_REQUIRE_A2A_SDK=1` (as in `scripts/test`) makes it fail. The
//! other tests need no SDK: JSON-RPC's error codes and a task that
//! outlives a killed server (`--db`) speak HTTP themselves, and a weft
//! agent calls served agents through `type = "a2a"` toolsets, answering
//! one's question on `weft run`'s stdin.

mod common;
#[path = "a2a/harness.rs"]
mod harness;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use harness::{ANSWERER, ASKER};
use serde_json::{Value, json};

/// A running `weft a2a serve`, killed when dropped.
struct Server {
    child: Child,
    url: String,
    log: common::LogTail,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Serves the agent file `text` (written into `dir` as `name.toml`).
fn serve(dir: &Path, name: &str, text: &str) -> Server {
    serve_with(dir, name, text, &[])
}

/// [`serve`] with more arguments.
fn serve_with(dir: &Path, name: &str, text: &str, args: &[&str]) -> Server {
    let agent = dir.join(format!("{name}.toml"));
    std::fs::write(&agent, text).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(["a2a", "serve", "--addr", "127.0.0.1:0", "--agent"])
        .arg(&agent)
        .args(args)
        .env("OPENAI_API_KEY", "sk-fake")
        .env_remove("OPENAI_BASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = common::keep_log(BufReader::new(child.stderr.take().unwrap()));
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut url = String::new();
    stdout.read_line(&mut url).unwrap();
    let url = url.trim().to_owned();
    assert!(
        url.starts_with("http://"),
        "weft a2a serve printed no URL: {}",
        log.text()
    );
    Server { child, url, log }
}

/// Serves staller `name` (see [`harness::staller`]).
async fn staller(dir: &Path, name: &str) -> (Server, weft_fakes::Fake) {
    let (text, fake) = harness::staller(name).await;
    (serve(dir, name, &text), fake)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_sdk_client_drives_weft_a2a_serve() {
    let Some(python) = harness::sdk_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let answerer = serve(dir.path(), "answerer", ANSWERER);
    let asker = serve(dir.path(), "asker", ASKER);
    let (staller10, _fake10) = staller(dir.path(), "staller10").await;
    let (staller03, _fake03) = staller(dir.path(), "staller03").await;
    let urls = json!({
        "answerer": answerer.url,
        "asker": asker.url,
        "stallers": {"1.0": staller10.url, "0.3": staller03.url},
    });
    let servers = [&answerer, &asker, &staller10, &staller03];
    let logs = || {
        let logs: Vec<String> = servers.iter().map(|s| s.log.text()).collect();
        logs.join("\n---\n")
    };
    harness::sdk_client(&python, &urls, logs).await;
}

/// Posts `body` (raw) to `url` with `version` as `A2A-Version`; the JSON answer.
async fn post(url: &str, version: Option<&str>, body: impl Into<reqwest::Body>) -> Value {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .body(body);
    if let Some(v) = version {
        request = request.header("A2A-Version", v);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

fn rpc(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_json_rpc_gets_the_spec_error_codes() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), "answerer", ANSWERER);
    let url = format!("{}/", server.url);
    let code = |v: &Value| v["error"]["code"].as_i64();
    assert_eq!(code(&post(&url, None, "{not json").await), Some(-32700));
    assert_eq!(code(&post(&url, None, "[1]").await), Some(-32600));
    let v = post(&url, Some("1.0"), rpc("NoSuchMethod", json!({}))).await;
    assert_eq!((code(&v), v["id"].as_i64()), (Some(-32601), Some(7)));
    let v = post(&url, None, rpc("GetTask", json!({"id": "x"}))).await;
    assert_eq!(
        code(&v),
        Some(-32009),
        "a 1.0 method without A2A-Version: {v}"
    );
    let v = post(&url, Some("1.0"), rpc("GetTask", json!({"id": "x"}))).await;
    assert_eq!(code(&v), Some(-32001), "{v}");
    assert_eq!(v["error"]["data"][0]["reason"], "TASK_NOT_FOUND");
    let v = post(&url, Some("1.0"), rpc("GetTask", json!({"id": 5}))).await;
    assert_eq!(code(&v), Some(-32602), "{v}");
    let v = post(&url, None, rpc("tasks/get", json!({"id": "x"}))).await;
    assert_eq!(code(&v), Some(-32001), "a 0.3 method needs no header: {v}");
    let file = json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"url": "http://x/y"}]}});
    let v = post(&url, Some("1.0"), rpc("SendMessage", file)).await;
    assert_eq!(code(&v), Some(-32005), "{v}");
    let v = post(
        &url,
        Some("1.0"),
        rpc("CreateTaskPushNotificationConfig", json!({})),
    )
    .await;
    assert_eq!(code(&v), Some(-32003), "{v}");
    let big = format!("{{\"pad\": \"{}\"}}", "x".repeat(2 << 20));
    assert_eq!(code(&post(&url, None, big).await), Some(-32600));
    let card: Value = reqwest::get(format!("{}/.well-known/agent-card.json", server.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["name"], "answerer");
    assert_eq!(card["supportedInterfaces"][0]["url"], url);
}

#[test]
fn an_agent_calls_remote_a2a_agents_as_tools() {
    let dir = tempfile::tempdir().unwrap();
    let answerer = serve(dir.path(), "answerer", ANSWERER);
    let asker = serve(dir.path(), "asker", ASKER);
    let caller = format!(
        "id = \"caller\"\n\
         toolsets = [\n  {{ type = \"a2a\", name = \"oracle\", url = \"{}\" }},\n  \
         {{ type = \"a2a\", name = \"greeter\", url = \"{}/.well-known/agent-card.json\" }},\n]\n\
         [planner]\nkind = \"scripted\"\n\
         [[planner.turns]]\ntool_calls = [\n  \
         {{ name = \"oracle.send\", args = {{ message = \"What is 6 x 7?\" }} }},\n  \
         {{ name = \"greeter.send\", args = {{ message = \"Greet me.\" }} }},\n]\n\
         [[planner.turns]]\ntext = \"asked\"\n",
        answerer.url, asker.url
    );
    let agent = dir.path().join("caller.toml");
    std::fs::write(&agent, caller).unwrap();
    // The greeter's question is put to `weft run`'s person, who answers on stdin.
    let mut child = Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(["run", "--output", "jsonl"])
        .arg(&agent)
        .arg("go")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"Ada\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("What is your name?"),
        "the greeter's question was not asked: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = common::output_json_lines(out);
    let finished: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "tool_finished")
        .collect();
    assert_eq!(finished.len(), 2, "{lines:#?}");
    let text: Vec<String> = finished.iter().map(|l| l.to_string()).collect();
    let oracle = text.iter().find(|t| t.contains("oracle.send")).unwrap();
    assert!(
        oracle.contains("The answer is 42.") && oracle.contains("TASK_STATE_COMPLETED"),
        "{oracle}"
    );
    let greeter = text.iter().find(|t| t.contains("greeter.send")).unwrap();
    assert!(
        greeter.contains("greeted") && greeter.contains("TASK_STATE_COMPLETED"),
        "{greeter}"
    );
    assert_eq!(
        lines.last().unwrap()["outcome"]["message"]["parts"][0]["text"],
        "asked",
        "{lines:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_input_required_task_outlives_its_server() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tasks.db");
    let db = db.to_str().unwrap();
    let send = |task: Option<&str>, text: &str| {
        let mut message =
            json!({"messageId": text, "role": "ROLE_USER", "parts": [{"text": text}]});
        if let Some(task) = task {
            message["taskId"] = json!(task);
        }
        rpc("SendMessage", json!({ "message": message }))
    };
    let first = serve_with(dir.path(), "asker", ASKER, &["--db", db]);
    let v = post(
        &format!("{}/", first.url),
        Some("1.0"),
        send(None, "Greet me."),
    )
    .await;
    let task = v["result"]["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{v}");
    let id = task["id"].as_str().unwrap().to_owned();
    // The process dies (SIGKILL): the task is in the store, waiting.
    drop(first);
    let second = serve_with(dir.path(), "asker", ASKER, &["--db", db]);
    let url = format!("{}/", second.url);
    let v = post(&url, Some("1.0"), rpc("GetTask", json!({ "id": id }))).await;
    assert_eq!(
        v["result"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{v}"
    );
    assert_eq!(v["result"]["contextId"], task["contextId"]);
    let v = post(&url, Some("1.0"), send(Some(&id), "Ada")).await;
    let done = &v["result"]["task"];
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
    assert_eq!(done["artifacts"][0]["parts"][0]["text"], "greeted");
    assert_eq!(done["id"], id.as_str());
    let v = post(&url, Some("1.0"), rpc("CancelTask", json!({ "id": id }))).await;
    assert_eq!(
        v["error"]["code"], -32002,
        "a completed task is not cancelable: {v}"
    );
    let v = post(&url, Some("1.0"), send(Some(&id), "again")).await;
    assert_eq!(
        v["error"]["code"], -32004,
        "an ended task takes no message: {v}"
    );
}
