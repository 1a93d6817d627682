//! Helpers shared by the MCP client tests: the in-repo test server, requests,
//! and reading replies.

#![allow(dead_code)]

use std::time::Duration;

use serde_json::Value;
use weft_core::ids::{RunId, SessionId, ToolCallId, TurnId};
use weft_core::message::Part;
use weft_core::tool::{ToolIdent, ToolRequest, ToolResultBody};
use weft_mcp::{Backoff, McpConfig, Transport};
use weft_tools::ToolReply;

/// The in-repo test server binary.
pub fn server_bin() -> &'static str {
    env!("CARGO_BIN_EXE_weft-mcp-test-server")
}

/// A stdio config for the test server with `args`, restarting without delay.
pub fn stdio_config(name: &str, args: &[&str]) -> McpConfig {
    McpConfig::new(name, Transport::stdio(server_bin(), args.iter().copied()))
        .with_restart_backoff(no_backoff())
        .with_start_timeout(Duration::from_secs(20))
}

/// A backoff that allows an immediate restart.
pub fn no_backoff() -> Backoff {
    Backoff {
        initial: Duration::ZERO,
        max: Duration::ZERO,
    }
}

/// A request for `tool` with `payload`.
pub fn request(tool: &str, payload: Value) -> ToolRequest {
    ToolRequest {
        name: ToolIdent::from(tool),
        payload: payload.into(),
        run_id: RunId::new("run"),
        session_id: SessionId::new("session"),
        turn_id: TurnId::new("turn"),
        tool_call_id: ToolCallId::new("call"),
        parent_tool_call_id: None,
        labels: Default::default(),
        output: Default::default(),
        elicit: Default::default(),
        children: Default::default(),
    }
}

/// The reply's parts.
pub fn parts(reply: &ToolReply) -> &[Part] {
    match &reply.body {
        ToolResultBody::Content(c) => &c.parts,
        other => panic!("expected content, got {other:?}"),
    }
}

/// The reply's text parts joined.
pub fn text(reply: &ToolReply) -> String {
    parts(reply)
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A test server serving streamable HTTP, killed on drop.
pub struct HttpChild {
    pub child: tokio::process::Child,
    pub url: String,
}

impl HttpChild {
    /// Starts the test server on `addr` (port 0 for any).
    pub async fn start(addr: &str) -> Self {
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new(server_bin())
            .args(["--http", addr])
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the test server");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let url = lines
            .next_line()
            .await
            .expect("read the URL")
            .expect("the server prints its URL");
        Self { child, url }
    }
}
