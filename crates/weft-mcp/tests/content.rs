//! MCP content kept lossless: every content block of the test server's
//! `kinds` tool arrives typed (resource links with their fields, embedded
//! text, blob bytes and MIME type, annotations, structured content), and a
//! round trip MCP → weft → weft's MCP server → weft keeps all of it and the
//! tool's output schema. (A blob over the payload budget is in the unit
//! tests of `convert`.)

mod common;

use std::sync::Arc;

use common::{parts, request, stdio_config};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use weft_core::message::{Part, Resource, ResourceBody};
use weft_core::tool::{ToolContent, ToolResultBody};
use weft_mcp::serve::{HttpServer, WeftServer};
use weft_mcp::{McpConfig, McpToolSet, Transport};
use weft_tools::{Lifecycle, ToolReply, ToolSet};

fn content(reply: &ToolReply) -> &ToolContent {
    match &reply.body {
        ToolResultBody::Content(c) => c,
        other => panic!("expected content, got {other:?}"),
    }
}

/// What the `kinds` tool's blocks are in weft.
fn assert_kinds(reply: &ToolReply) {
    let p = parts(reply);
    assert_eq!(p.len(), 6, "{p:?}");
    assert_eq!(
        p[3],
        Part::Resource(Resource {
            uri: "file:///notes.txt".into(),
            mime_type: Some("text/plain".into()),
            annotations: Some(json!({"priority": 0.5})),
            body: ResourceBody::Link {
                name: "notes".into(),
                title: Some("Notes".into()),
                description: Some("the notes".into()),
                size: Some(12),
            },
        })
    );
    assert_eq!(
        p[4],
        Part::Resource(Resource {
            uri: "mem://embedded".into(),
            mime_type: Some("text/plain".into()),
            annotations: None,
            body: ResourceBody::Text {
                text: "embedded body".into()
            },
        })
    );
    let for_user = json!({"audience": ["user"], "priority": 0.8});
    assert_eq!(
        p[5],
        Part::Resource(Resource {
            uri: "mem://blob".into(),
            mime_type: Some("application/octet-stream".into()),
            annotations: Some(for_user.clone()),
            body: ResourceBody::Blob {
                data: "AAECAw==".into()
            },
        })
    );
    let c = content(reply);
    // The text part's annotations are kept beside it.
    assert_eq!(c.annotations.len(), 1, "{:?}", c.annotations);
    assert_eq!(
        (c.annotations[0].part, &c.annotations[0].annotations),
        (0, &for_user)
    );
    assert_eq!(c.structured, Some(json!({"count": 6})));
}

#[tokio::test]
async fn every_content_kind_arrives_typed() {
    let set = McpToolSet::new(stdio_config("t", &[]));
    let reply = set.call_tool(request("t.kinds", json!({}))).await.unwrap();
    assert_kinds(&reply);
    assert!(reply.bounds.is_none());
    let blob = &parts(&reply)[5];
    assert_eq!(
        blob.model_text().unwrap(),
        "[binary resource] <mem://blob> (application/octet-stream), 4 bytes (contents not shown)"
    );
    set.stop().await.unwrap();
}

#[tokio::test]
async fn content_survives_a_round_trip_through_weft_mcp_serve() {
    let inner: Arc<dyn ToolSet> = Arc::new(McpToolSet::new(stdio_config("t", &[])));
    let direct = inner
        .call_tool(request("t.kinds", json!({})))
        .await
        .unwrap();
    let server = HttpServer::bind("127.0.0.1:0").await.unwrap();
    let url = server.url();
    let stop = CancellationToken::new();
    let served = WeftServer::new(None, vec![inner.clone()]);
    let serving = tokio::spawn(server.serve(move || served.session(), stop.clone()));

    let outer = McpToolSet::new(McpConfig::new("w", Transport::http(url)));
    let specs = outer.list_tools().await.unwrap();
    let kinds = specs
        .iter()
        .find(|s| s.name.as_str() == "w.t.kinds")
        .expect("the exposed tool");
    assert_eq!(
        kinds.output_schema,
        Some(
            json!({"type": "object", "properties": {"count": {"type": "integer"}},
                    "required": ["count"]})
        )
    );
    let again = outer
        .call_tool(request("w.t.kinds", json!({})))
        .await
        .unwrap();
    assert_kinds(&again);
    assert_eq!(content(&again), content(&direct));

    outer.stop().await.unwrap();
    stop.cancel();
    let _ = serving.await;
}
