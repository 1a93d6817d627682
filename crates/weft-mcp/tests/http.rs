//! The MCP client toolset against the in-repo test server over streamable
//! HTTP, the server a child process: listing, calls, content kinds, list
//! changes, and a server restarted under the client.

mod common;

use common::{HttpChild, no_backoff, parts, request, text};
use serde_json::json;
use weft_mcp::{McpConfig, McpToolSet, Transport};
use weft_tools::ToolSet;

fn config(url: &str) -> McpConfig {
    McpConfig::new("web", Transport::http(url)).with_restart_backoff(no_backoff())
}

#[tokio::test]
async fn lists_and_calls_over_streamable_http() {
    let server = HttpChild::start("127.0.0.1:0").await;
    let set = McpToolSet::new(config(&server.url));
    let specs = set.list_tools().await.unwrap();
    assert!(specs.iter().any(|s| s.name.as_str() == "web.echo"));
    let reply = set
        .call_tool(request("web.echo", json!({"text": "over http"})))
        .await
        .unwrap();
    assert_eq!(text(&reply), "over http");
    let reply = set
        .call_tool(request("web.kinds", json!({})))
        .await
        .unwrap();
    assert_eq!(parts(&reply).len(), 6);
    let mut changes = weft_tools::find_tool_list_changes(&set)
        .unwrap()
        .subscribe_tool_list();
    set.call_tool(request("web.add_tool", json!({})))
        .await
        .unwrap();
    changes.changed().await.unwrap();
    let specs = set.list_tools().await.unwrap();
    assert!(specs.iter().any(|s| s.name.as_str() == "web.extra"));
}

#[tokio::test]
async fn a_restarted_server_is_reconnected_and_its_tools_listed_again() {
    let mut first = HttpChild::start("127.0.0.1:0").await;
    let addr = first
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let set = McpToolSet::new(config(&first.url));
    set.call_tool(request("web.add_tool", json!({})))
        .await
        .unwrap();
    let specs = set.list_tools().await.unwrap();
    assert!(specs.iter().any(|s| s.name.as_str() == "web.extra"));
    first.child.kill().await.unwrap();
    let _second = HttpChild::start(&addr).await;
    // The old session is gone: the first call fails with a typed error or
    // already reconnects; either way the next one is served by the new
    // server, whose tool list (without `extra`) replaced the stale one.
    let mut reply = set
        .call_tool(request("web.echo", json!({"text": "again"})))
        .await;
    if let Err(failure) = &reply {
        assert!(
            failure.error.message.contains("toolset `web`"),
            "{failure:?}"
        );
        reply = set
            .call_tool(request("web.echo", json!({"text": "again"})))
            .await;
    }
    assert_eq!(text(&reply.unwrap()), "again");
    let specs = set.list_tools().await.unwrap();
    assert!(
        !specs.iter().any(|s| s.name.as_str() == "web.extra"),
        "{specs:?}"
    );
}

#[tokio::test]
async fn an_unreachable_server_is_a_typed_start_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let set = McpToolSet::new(config(&url));
    let err = set.list_tools().await.unwrap_err();
    assert_eq!(err.code, weft_core::tool::ToolError::UNAVAILABLE);
    assert!(err.message.contains("toolset `web`"), "{err}");
}

#[tokio::test]
async fn a_tool_announced_after_the_answer_is_listed_before_the_next_turn() {
    let server = HttpChild::start("127.0.0.1:0").await;
    let set = McpToolSet::new(config(&server.url));
    let mut changes = weft_tools::find_tool_list_changes(&set)
        .unwrap()
        .subscribe_tool_list();
    set.list_tools().await.unwrap();
    changes.borrow_and_update();
    // The server adds `extra` and answers; its announcement comes later, on
    // the standalone stream.
    set.call_tool(request("web.add_tool_late", json!({})))
        .await
        .unwrap();
    assert!(
        changes.has_changed().unwrap(),
        "the runtime is told to list the tools again before its next turn"
    );
    let specs = set.list_tools().await.unwrap();
    assert!(
        specs.iter().any(|s| s.name.as_str() == "web.extra"),
        "{specs:?}"
    );
}
