//! MCP toolsets through the real `weft` binary: a server marked `optional`
//! that cannot start leaves the agent working with its other tools (one
//! not marked so stops `weft run`: `toolset_start.rs`), and the reference
//! filesystem server from npm (installed by `scripts/mcp-servers.sh`)
//! serves a call.

mod common;

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn run_jsonl(agent: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("agent.toml");
    std::fs::write(&file, agent).unwrap();
    common::json_lines(
        Command::new(env!("CARGO_BIN_EXE_weft"))
            .args(["run", "--output", "jsonl"])
            .arg(&file)
            .arg("go"),
    )
}

fn finished(lines: &[Value]) -> Vec<&Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "tool_finished")
        .collect()
}

#[test]
fn a_server_that_cannot_start_leaves_the_other_tools_working() {
    let lines = run_jsonl(
        r#"
id = "tolerant"
[[toolsets]]
type = "builtin"
name = "calc"
[[toolsets]]
type = "mcp"
name = "gone"
command = "/nonexistent/weft-test/mcp-server"
optional = true
[planner]
kind = "scripted"
[[planner.turns]]
tool_calls = [{ name = "calc.add", args = { a = 1, b = 2 } }]
[[planner.turns]]
text = "3"
"#,
    );
    let done = finished(&lines);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0]["output"]["result"]["value"], 3);
    assert_eq!(lines.last().unwrap()["outcome"]["kind"], "response");
}

#[test]
fn the_npm_filesystem_server_serves_an_agent() {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts/mcp-servers/node_modules/.bin/mcp-server-filesystem");
    if !bin.exists() {
        assert!(
            std::env::var_os("WEFT_REQUIRE_NPM_SERVERS").is_none(),
            "run scripts/mcp-servers.sh"
        );
        eprintln!("skipped: the npm MCP servers are not installed (scripts/mcp-servers.sh)");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap();
    std::fs::write(root.join("note.txt"), "a note for the agent").unwrap();
    let lines = run_jsonl(&format!(
        r#"
id = "reader"
[[toolsets]]
type = "mcp"
name = "fs"
command = "{bin}"
args = ["{root}"]
[planner]
kind = "scripted"
[[planner.turns]]
tool_calls = [{{ name = "fs.read_text_file", args = {{ path = "{file}" }} }}]
[[planner.turns]]
text = "read it"
"#,
        bin = bin.display(),
        root = root.display(),
        file = root.join("note.txt").display(),
    ));
    let done = finished(&lines);
    assert_eq!(done.len(), 1);
    let shown = done[0]["output"]["result"].to_string();
    assert!(shown.contains("a note for the agent"), "{shown}");
}
