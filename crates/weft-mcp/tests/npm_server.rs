//! The MCP client toolset against a widely used third-party server, the
//! reference filesystem server from npm (installed by
//! `scripts/mcp-servers.sh`), run with Node.js as a child process.

mod common;

use std::path::PathBuf;

use common::{request, text};
use serde_json::json;
use weft_mcp::{McpConfig, McpToolSet, Transport};
use weft_tools::ToolSet;

/// The installed server's entry point, when the install script ran.
fn filesystem_server() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/mcp-servers");
    let bin = root.join("node_modules/.bin/mcp-server-filesystem");
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
