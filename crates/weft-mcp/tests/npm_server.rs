//! The MCP client toolset against widely used third-party servers, the
//! reference filesystem and "everything" servers from npm (installed by
//! `scripts/mcp-servers.sh`), run with Node.js as child processes.

mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use common::{request, text};
use serde_json::json;
use weft_core::tool::OutputSink;
use weft_mcp::{McpConfig, McpToolSet, Transport};
use weft_tools::ToolSet;

/// The installed filesystem server's entry point, when the install script ran.
fn filesystem_server() -> Option<PathBuf> {
    npm_server("mcp-server-filesystem")
}

/// An installed server's entry point, when the install script ran.
fn npm_server(name: &str) -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/mcp-servers");
    let bin = root.join("node_modules/.bin").join(name);
    if bin.exists() {
        return Some(bin);
    }
    assert!(
        std::env::var_os("WEFT_REQUIRE_NPM_SERVERS").is_none(),
        "the npm MCP servers are not installed: run scripts/mcp-servers.sh"
    );
    eprintln!("skipped: the npm MCP servers are not installed (scripts/mcp-servers.sh)");
    None
}

#[tokio::test]
async fn the_reference_filesystem_server_lists_reads_and_refuses() {
    let Some(bin) = filesystem_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("hello.txt"), "hello from a file").unwrap();
    let config = McpConfig::new(
        "fs",
        Transport::stdio(bin.to_string_lossy(), [root.to_string_lossy().into_owned()]),
    );
    let set = McpToolSet::new(config);
    let specs = set.list_tools().await.unwrap();
    let read = specs
        .iter()
        .find(|s| s.name.as_str() == "fs.read_text_file")
        .unwrap_or_else(|| panic!("no read_text_file in {specs:?}"));
    assert!(read.annotations.read_only, "{:?}", read.annotations);
    let write = specs
        .iter()
        .find(|s| s.name.as_str() == "fs.write_file")
        .unwrap();
    assert!(!write.annotations.read_only);
    let path = root.join("hello.txt");
    let reply = set
        .call_tool(request("fs.read_text_file", json!({"path": path})))
        .await
        .unwrap();
    assert!(text(&reply).contains("hello from a file"), "{reply:?}");
    let outside = set
        .call_tool(request(
            "fs.read_text_file",
            json!({"path": "/etc/hostname"}),
        ))
        .await
        .unwrap_err();
    assert!(
        outside
            .error
            .message
            .contains("toolset `fs`, tool `read_text_file`"),
        "{outside:?}"
    );
}

#[tokio::test]
async fn the_reference_servers_progress_reaches_the_calls_output() {
    let Some(bin) = npm_server("mcp-server-everything") else {
        return;
    };
    let config = McpConfig::new("every", Transport::stdio(bin.to_string_lossy(), ["stdio"]));
    let set = McpToolSet::new(config);
    let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let sink = seen.clone();
    let mut req = request(
        "every.trigger-long-running-operation",
        json!({"duration": 0.4, "steps": 4}),
    );
    req.output = OutputSink::new(move |stream, delta| {
        sink.lock()
            .unwrap()
            .push((stream.to_owned(), delta.to_owned()));
    });
    let reply = set.call_tool(req).await.unwrap();
    assert!(text(&reply).contains("Steps: 4"), "{reply:?}");
    let seen = seen.lock().unwrap();
    let lines: Vec<&str> = seen
        .iter()
        .filter(|(stream, _)| stream == "progress")
        .map(|(_, line)| line.as_str())
        .collect();
    assert_eq!(lines, ["1/4\n", "2/4\n", "3/4\n", "4/4\n"], "{seen:?}");
}
