//! `weft mcp serve` exercised by rmcp's client over stdio and streamable
//! HTTP: the agent as one tool with progress notifications carrying the
//! run's events, and the agent's toolsets exposed with a flag; its server
//! info, MCP logging, the error for an unknown tool, and the JSON-RPC
//! errors for bodies that are not JSON-RPC messages.
// MCP logging, which rmcp marks deprecated, is still part of the protocol served.
#![allow(deprecated)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::example;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, CustomRequest, ErrorCode, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, SetLevelRequestParams,
};
use rmcp::service::{NotificationContext, RoleClient};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::json;

/// Counts progress notifications, remembers whether one carried
/// `run_finished`, and keeps the log messages (level and event type).
#[derive(Clone, Default)]
struct Client {
    progress: Arc<AtomicUsize>,
    finished: Arc<AtomicUsize>,
    logs: Arc<Mutex<Vec<(LoggingLevel, String)>>>,
}

impl Client {
    fn logs(&self) -> Vec<(LoggingLevel, String)> {
        self.logs.lock().unwrap().clone()
    }
}

impl ClientHandler for Client {
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let kind = params.data["type"].as_str().unwrap_or_default().to_owned();
        self.logs.lock().unwrap().push((params.level, kind));
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.fetch_add(1, Ordering::SeqCst);
        if params
            .message
            .is_some_and(|m| m.contains("\"run_finished\""))
        {
            self.finished.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn text_of(result: &rmcp::model::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn exercise<S>(client: &rmcp::service::RunningService<RoleClient, S>, handler: &Client)
where
    S: rmcp::Service<RoleClient>,
{
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"calculator"), "{names:?}");
    assert!(names.contains(&"calc.add"), "{names:?}");
    let add = tools.iter().find(|t| t.name == "calc.add").unwrap();
    assert_eq!(add.annotations.as_ref().unwrap().read_only_hint, Some(true));

    let answer = client
        .call_tool(
            CallToolRequestParams::new("calculator").with_arguments(
                json!({"prompt": "What is (2 + 3) * 7?"})
                    .as_object()
                    .cloned()
                    .unwrap(),
            ),
        )
        .await
        .unwrap();
    assert_ne!(answer.is_error, Some(true), "{answer:?}");
    assert_eq!(text_of(&answer), "(2 + 3) * 7 = 35");
    assert!(handler.progress.load(Ordering::SeqCst) >= 5);
    assert_eq!(handler.finished.load(Ordering::SeqCst), 1);

    let sum = client
        .call_tool(
            CallToolRequestParams::new("calc.add")
                .with_arguments(json!({"a": 40, "b": 2}).as_object().cloned().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(text_of(&sum), "42");
    let bad = client
        .call_tool(
            CallToolRequestParams::new("calc.add")
                .with_arguments(json!({"a": "x"}).as_object().cloned().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(bad.is_error, Some(true));
}

#[tokio::test]
async fn serves_the_agent_over_stdio() {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_weft"));
    cmd.args(["mcp", "serve", "--expose-toolsets"])
        .arg(example("calculator.toml"));
    let handler = Client::default();
    let client = handler
        .clone()
        .serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap();
    exercise(&client, &handler).await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn serves_the_agent_over_streamable_http() {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(["mcp", "serve", "--expose-toolsets", "--http", "127.0.0.1:0"])
        .arg(example("calculator.toml"))
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let url = tokio::io::BufReader::new(stdout)
        .lines()
        .next_line()
        .await
        .unwrap()
        .expect("the server prints its URL");
    // rmcp's HTTP client is built without a bundled TLS provider.
    weft_mcp::client::install_crypto_provider();
    let handler = Client::default();
    let client = handler
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(url))
        .await
        .unwrap();
    exercise(&client, &handler).await;
    client.cancel().await.unwrap();
}

#[test]
fn bench_mcp_prints_json_lines() {
    let lines = common::json_lines(
        std::process::Command::new(env!("CARGO_BIN_EXE_weft"))
            .args(["bench", "mcp", "--calls", "5", "--warmup", "1"]),
    );
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["client"], "rmcp_direct");
    assert_eq!(lines[1]["client"], "weft_toolset");
    assert_eq!(lines[1]["calls"], 5);
    assert!(lines[2]["p50_ratio"].as_f64().unwrap() > 0.0);
}

/// A client that gives up on the agent tool cancels the request; the server
/// cancels the run behind it, which the store then shows as cancelled.
#[tokio::test]
async fn a_client_cancelling_the_call_cancels_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("slow.toml");
    std::fs::write(
        &agent,
        r#"id = "slow"
toolsets = ["journal"]

[planner]
kind = "scripted"

[[planner.turns]]
tool_calls = [{ name = "journal.put", args = { text = "x", sleep_ms = 10000 } }]

[[planner.turns]]
text = "done"
"#,
    )
    .unwrap();
    let db = dir.path().join("w.db");
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_weft"));
    cmd.args(["mcp", "serve", "--db"])
        .arg(&db)
        .arg(&agent)
        .env("WEFT_JOURNAL_DIR", dir.path());
    let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let call = client.call_tool(
        CallToolRequestParams::new("slow")
            .with_arguments(json!({"prompt": "go"}).as_object().cloned().unwrap()),
    );
    // Dropping the pending call sends `notifications/cancelled`.
    let gave_up = tokio::time::timeout(std::time::Duration::from_millis(500), call).await;
    assert!(gave_up.is_err(), "the slow call answered: {gave_up:?}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let status = loop {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_weft"))
            .args(["runs", "list", "--db"])
            .arg(&db)
            .output()
            .unwrap();
        let listed = String::from_utf8(out.stdout).unwrap();
        let status = listed
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .map(|r| r["status"].as_str().unwrap_or_default().to_owned())
            .next();
        if status.as_deref() == Some("cancelled") || std::time::Instant::now() > deadline {
            break status;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(status.as_deref(), Some("cancelled"));
    assert!(
        !dir.path().read_dir().unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".entry")),
        "the cancelled call's tool did not finish"
    );
    client.cancel().await.unwrap();
}

fn prompt(text: &str) -> serde_json::Map<String, serde_json::Value> {
    json!({ "prompt": text }).as_object().cloned().unwrap()
}

/// Waits until the client holds `n` log messages (notifications may trail the result).
async fn wait_for_logs(handler: &Client, n: usize) -> Vec<(LoggingLevel, String)> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while handler.logs().len() < n && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    handler.logs()
}

/// The server names itself `weft` at weft's version, titled with the agent.
#[tokio::test]
async fn server_info_names_weft_and_the_agent() {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_weft"));
    cmd.args(["mcp", "serve"]).arg(example("calculator.toml"));
    let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let info = client.peer_info().expect("the server answered initialize");
    let server = info.server_info.as_ref().expect("server info");
    assert_eq!(server.name, "weft");
    assert_eq!(server.title.as_deref(), Some("calculator"));
    assert_eq!(server.version, env!("CARGO_PKG_VERSION"));
    client.cancel().await.unwrap();
}

/// The server declares logging and sends the run's events as log messages
/// only at or above the level the client set (none before it set one); an
/// unknown level is invalid params.
#[tokio::test]
async fn logs_run_events_at_the_level_the_client_set() {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_weft"));
    cmd.args(["mcp", "serve"]).arg(example("calculator.toml"));
    let handler = Client::default();
    let client = handler
        .clone()
        .serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap();

    let info = client.peer_info().expect("the server answered initialize");
    assert!(
        info.capabilities.logging.is_some(),
        "{:?}",
        info.capabilities
    );

    // Before any `logging/setLevel`, nothing is logged.
    let call = CallToolRequestParams::new("calculator").with_arguments(prompt("What is 2 + 3?"));
    client.call_tool(call.clone()).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(handler.logs(), vec![], "logged before a level was set");

    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Info))
        .await
        .unwrap();
    let answer = client.call_tool(call.clone()).await.unwrap();
    assert_ne!(answer.is_error, Some(true), "{answer:?}");
    let logs = wait_for_logs(&handler, 1).await;
    let kinds: Vec<&str> = logs.iter().map(|(_, k)| k.as_str()).collect();
    for kind in [
        "run_started",
        "tool_started",
        "tool_finished",
        "run_finished",
    ] {
        assert!(kinds.contains(&kind), "no {kind} in {logs:?}");
    }
    assert!(
        logs.iter().all(|(level, _)| *level != LoggingLevel::Debug),
        "debug messages below the level set: {logs:?}"
    );
    assert!(
        logs.iter()
            .any(|(level, kind)| *level == LoggingLevel::Info && kind == "tool_started"),
        "{logs:?}"
    );

    // At `error`, a run without failures logs nothing.
    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Error))
        .await
        .unwrap();
    let before = handler.logs().len();
    client.call_tool(call).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(handler.logs().len(), before, "{:?}", handler.logs());

    let unknown = client
        .send_request(ClientRequest::CustomRequest(CustomRequest::new(
            "logging/setLevel",
            Some(json!({ "level": "verbose" })),
        )))
        .await;
    match unknown {
        Err(rmcp::ServiceError::McpError(e)) => assert_eq!(e.code, ErrorCode::INVALID_PARAMS),
        other => panic!("an unknown level was not invalid params: {other:?}"),
    }
    client.cancel().await.unwrap();
}

/// Calling a tool the server does not have is JSON-RPC's invalid params,
/// not a tool result.
#[tokio::test]
async fn an_unknown_tool_is_invalid_params() {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_weft"));
    cmd.args(["mcp", "serve", "--expose-toolsets"])
        .arg(example("calculator.toml"));
    let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    for name in ["no_such_tool", "calc.no_such_tool", "nowhere.add"] {
        let result = client
            .call_tool(CallToolRequestParams::new(name).with_arguments(prompt("x")))
            .await;
        match result {
            Err(rmcp::ServiceError::McpError(e)) => {
                assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{name}: {e:?}")
            }
            other => panic!("{name}: not invalid params: {other:?}"),
        }
    }
    client.cancel().await.unwrap();
}

/// Over streamable HTTP, a JSON body that does not parse is JSON-RPC's
/// parse error (HTTP 400, id null), JSON that is no message is invalid
/// request (HTTP 400), and a body of another content type stays 415.
#[tokio::test]
async fn malformed_http_bodies_get_json_rpc_errors() {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(["mcp", "serve", "--http", "127.0.0.1:0"])
        .arg(example("calculator.toml"))
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let url = tokio::io::BufReader::new(stdout)
        .lines()
        .next_line()
        .await
        .unwrap()
        .expect("the server prints its URL");
    let http = reqwest::Client::new();
    let post = |content_type: &'static str, body: &'static str| {
        http.post(&url)
            .header("content-type", content_type)
            .header("accept", "application/json, text/event-stream")
            .body(body)
            .send()
    };

    for body in [
        "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\":",
        "not json",
        "",
    ] {
        let reply = post("application/json", body).await.unwrap();
        assert_eq!(reply.status(), 400, "{body:?}");
        let error: serde_json::Value = serde_json::from_str(&reply.text().await.unwrap()).unwrap();
        assert_eq!(error["jsonrpc"], "2.0");
        assert_eq!(error["error"]["code"], -32700, "{body:?}: {error}");
        assert!(error.get("id").is_some_and(|id| id.is_null()), "{error}");
    }

    let reply = post("application/json", "[1, 2]").await.unwrap();
    assert_eq!(reply.status(), 400);
    let error: serde_json::Value = serde_json::from_str(&reply.text().await.unwrap()).unwrap();
    assert_eq!(error["error"]["code"], -32600, "{error}");

    let reply = post("text/plain", "{}").await.unwrap();
    assert_eq!(reply.status(), 415);

    // A well-formed initialize still works behind the check.
    let reply = post(
        "application/json; charset=utf-8",
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    )
    .await
    .unwrap();
    assert_eq!(reply.status(), 200);
    assert!(reply.text().await.unwrap().contains("\"weft\""));
}
