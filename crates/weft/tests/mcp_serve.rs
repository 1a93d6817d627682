//! `weft mcp serve` exercised by rmcp's client over stdio and streamable
//! HTTP: the agent as one tool with progress notifications carrying the
//! run's events, and the agent's toolsets exposed with a flag.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::example;
use rmcp::model::{CallToolRequestParams, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RoleClient};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::json;

/// Counts progress notifications and remembers whether one carried `run_finished`.
#[derive(Clone, Default)]
struct Client {
    progress: Arc<AtomicUsize>,
    finished: Arc<AtomicUsize>,
}

impl ClientHandler for Client {
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
