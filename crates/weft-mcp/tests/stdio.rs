//! The MCP client toolset against the in-repo test server over stdio, as a
//! child process: listing, every content kind, errors, timeouts, a crash and
//! restart, list changes, a binary that appears after a failed start.

mod common;

use std::time::Duration;

use common::{parts, request, stdio_config, text};
use serde_json::json;
use weft_core::message::Part;
use weft_core::tool::ToolError;
use weft_mcp::McpToolSet;
use weft_mcp::error::TOOL_FAILED;
use weft_tools::{Lifecycle, StartableToolSet, ToolSet};

#[tokio::test]
async fn lists_tools_with_their_annotations_and_prefix() {
    let set = McpToolSet::new(stdio_config("t", &[]).with_prefix("x_"));
    let specs = set.list_tools().await.unwrap();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"t.x_echo"), "{names:?}");
    let delete = specs
        .iter()
        .find(|s| s.name.as_str() == "t.x_delete")
        .unwrap();
    assert!(delete.annotations.destructive && !delete.annotations.read_only);
    assert!(!delete.annotations.open_world);
    let read = specs
        .iter()
        .find(|s| s.name.as_str() == "t.x_read")
        .unwrap();
    assert!(read.annotations.read_only && read.annotations.idempotent);
    assert!(!read.annotations.destructive);
    assert_eq!(read.annotations.title.as_deref(), Some("Read things"));
    // An unannotated tool gets MCP's defaults: destructive, open world.
    let echo = specs
        .iter()
        .find(|s| s.name.as_str() == "t.x_echo")
        .unwrap();
    assert!(echo.annotations.destructive && echo.annotations.open_world);
    let reply = set
        .call_tool(request("t.x_echo", json!({"text": "hi"})))
        .await
        .unwrap();
    assert_eq!(text(&reply), "hi");
    set.stop().await.unwrap();
}

#[tokio::test]
async fn maps_every_content_kind() {
    let set = McpToolSet::new(stdio_config("t", &[]));
    let reply = set.call_tool(request("t.kinds", json!({}))).await.unwrap();
    let p = parts(&reply);
    assert_eq!(p.len(), 6, "{p:?}");
    assert!(matches!(&p[0], Part::Text { text } if text == "plain text"));
    assert!(matches!(&p[1], Part::Image(m) if m.media_type == "image/png"));
    assert!(matches!(&p[2], Part::Audio(m) if m.media_type == "audio/wav"));
    // Resources stay typed (every field is checked in tests/content.rs).
    for (i, uri) in [
        (3, "file:///notes.txt"),
        (4, "mem://embedded"),
        (5, "mem://blob"),
    ] {
        assert!(
            matches!(&p[i], Part::Resource(r) if r.uri == uri),
            "{:?}",
            p[i]
        );
    }
    let weft_core::tool::ToolResultBody::Content(c) = &reply.body else {
        panic!("content expected");
    };
    assert_eq!(c.structured, Some(json!({"count": 6})));
    assert!(reply.bounds.is_none());
}

#[tokio::test]
async fn a_tool_error_names_the_toolset_and_the_tool() {
    let set = McpToolSet::new(stdio_config("t", &[]));
    let failure = set
        .call_tool(request("t.fail", json!({})))
        .await
        .unwrap_err();
    assert_eq!(failure.error.code, TOOL_FAILED);
    assert!(
        failure.error.message.contains("toolset `t`, tool `fail`"),
        "{}",
        failure.error.message
    );
    assert!(failure.error.message.contains("it broke"));
    let failure = set
        .call_tool(request("t.nope", json!({})))
        .await
        .unwrap_err();
    assert!(
        failure.error.message.contains("tool `nope`"),
        "{}",
        failure.error.message
    );
}

#[tokio::test]
async fn large_results_are_cut_to_the_budget_with_bounds() {
    let set = McpToolSet::new(stdio_config("t", &[]).with_result_budget(1000));
    let reply = set
        .call_tool(request("t.big", json!({"bytes": 5000})))
        .await
        .unwrap();
    let bounds = reply.bounds.clone().expect("bounds");
    assert!(bounds.truncated);
    assert_eq!(bounds.total, Some(1));
    assert!(serde_json::to_vec(&reply.body).unwrap().len() <= 1100);
    assert!(text(&reply).starts_with("xxx"));
}

#[tokio::test]
async fn a_call_past_its_timeout_fails_and_the_server_keeps_serving() {
    let set = McpToolSet::new(stdio_config("t", &[]).with_call_timeout(Duration::from_millis(200)));
    let failure = set
        .call_tool(request("t.sleep", json!({"ms": 60_000})))
        .await
        .unwrap_err();
    assert_eq!(failure.error.code, ToolError::TIMEOUT);
    assert!(failure.error.message.contains("tool `sleep`"));
    let reply = set
        .call_tool(request("t.echo", json!({"text": "still here"})))
        .await
        .unwrap();
    assert_eq!(text(&reply), "still here");
}

#[tokio::test]
async fn a_server_killed_mid_call_is_restarted_by_the_next_call() {
    let set = McpToolSet::new(stdio_config("t", &[]));
    set.call_tool(request("t.echo", json!({"text": "a"})))
        .await
        .unwrap();
    let failure = set
        .call_tool(request("t.crash", json!({})))
        .await
        .unwrap_err();
    assert_eq!(failure.error.code, ToolError::UNAVAILABLE, "{failure:?}");
    assert!(
        failure.error.message.contains("toolset `t`, tool `crash`"),
        "{}",
        failure.error.message
    );
    // What the server said as it died is part of the error.
    assert!(
        failure
            .error
            .message
            .contains("its stderr ended with: weft-mcp-test-server: crashing as asked"),
        "{}",
        failure.error.message
    );
    let reply = set
        .call_tool(request("t.echo", json!({"text": "b"})))
        .await
        .unwrap();
    assert_eq!(text(&reply), "b");
}

#[tokio::test]
async fn a_dead_server_waits_out_its_backoff() {
    let config = stdio_config("t", &[]).with_restart_backoff(weft_mcp::Backoff {
        initial: Duration::from_secs(3600),
        max: Duration::from_secs(3600),
    });
    let set = McpToolSet::new(config);
    set.call_tool(request("t.crash", json!({})))
        .await
        .unwrap_err();
    let failure = set
        .call_tool(request("t.echo", json!({"text": "b"})))
        .await
        .unwrap_err();
    assert!(
        failure.error.message.contains("next restart in"),
        "{}",
        failure.error.message
    );
    assert!(
        failure.error.message.contains("tool `echo`"),
        "{}",
        failure.error.message
    );
}

#[tokio::test]
async fn list_changed_notifications_make_the_next_listing_ask_again() {
    let set = McpToolSet::new(stdio_config("t", &[]));
    let changes = weft_tools::find_tool_list_changes(&set)
        .unwrap()
        .subscribe_tool_list();
    let before = set.list_tools().await.unwrap();
    assert!(!before.iter().any(|s| s.name.as_str() == "t.extra"));
    set.call_tool(request("t.add_tool", json!({})))
        .await
        .unwrap();
    // Announced before the answer on the one ordered stream: known by the
    // time the call returns, so the next turn lists again.
    assert!(changes.has_changed().unwrap());
    let after = set.list_tools().await.unwrap();
    assert!(
        after.iter().any(|s| s.name.as_str() == "t.extra"),
        "{after:?}"
    );
    let reply = set.call_tool(request("t.extra", json!({}))).await.unwrap();
    assert_eq!(text(&reply), "extra");
}

#[tokio::test]
async fn a_tool_with_a_broken_schema_is_left_out() {
    let set = McpToolSet::new(stdio_config("t", &["--bad-schema"]));
    let specs = set.list_tools().await.unwrap();
    assert!(!specs.iter().any(|s| s.name.as_str() == "t.bad"));
    assert!(specs.iter().any(|s| s.name.as_str() == "t.echo"));
}

#[tokio::test]
async fn a_server_binary_installed_after_a_failed_start_is_picked_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("late-server");
    let config = weft_mcp::McpConfig::new(
        "late",
        weft_mcp::Transport::stdio(path.to_string_lossy(), Vec::<String>::new()),
    )
    .with_restart_backoff(common::no_backoff());
    let set = StartableToolSet::new(McpToolSet::new(config));
    let failure = set
        .call_tool(request("late.echo", json!({"text": "x"})))
        .await
        .unwrap_err();
    assert_eq!(failure.error.code, ToolError::UNAVAILABLE);
    assert!(
        failure.error.message.contains("toolset `late`"),
        "{}",
        failure.error.message
    );
    assert!(set.should_report_failure());
    assert!(!set.should_report_failure(), "reported once per streak");
    std::fs::copy(common::server_bin(), &path).unwrap();
    let reply = set
        .call_tool(request("late.echo", json!({"text": "x"})))
        .await
        .unwrap();
    assert_eq!(text(&reply), "x");
    assert!(set.consume_recovery());
}

#[tokio::test]
async fn a_server_that_prints_garbage_first_still_serves_or_fails_typed() {
    let set = McpToolSet::new(
        stdio_config("t", &["--garbage"]).with_start_timeout(Duration::from_secs(5)),
    );
    match set
        .call_tool(request("t.echo", json!({"text": "ok"})))
        .await
    {
        Ok(reply) => assert_eq!(text(&reply), "ok"),
        Err(failure) => assert!(failure.error.message.contains("toolset `t`"), "{failure:?}"),
    }
}
