//! Tests of the MCP ⇄ weft mappings.

use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use serde_json::json;
use weft_core::message::Part;
use weft_core::tool::ToolResultBody;

use super::{call_result, tool_spec};
use crate::error::McpError;

fn schema() -> std::sync::Arc<rmcp::model::JsonObject> {
    std::sync::Arc::new(json!({"type": "object"}).as_object().cloned().unwrap())
}

#[test]
fn absent_hints_take_mcp_defaults_and_titles_carry_over() {
    let plain = tool_spec("s", "", &Tool::new("t", "d", schema())).unwrap();
    assert!(plain.annotations.destructive && plain.annotations.open_world);
    assert!(!plain.annotations.read_only && !plain.annotations.idempotent);
    let read = Tool::new("r", "d", schema()).with_annotations(ToolAnnotations::from_raw(
        Some("Reader".into()),
        Some(true),
        None,
        None,
        Some(false),
    ));
    let spec = tool_spec("s", "p_", &read).unwrap();
    assert_eq!(spec.name.as_str(), "s.p_r");
    assert!(spec.annotations.read_only && spec.annotations.idempotent);
    assert!(!spec.annotations.destructive && !spec.annotations.open_world);
    assert_eq!(spec.annotations.title.as_deref(), Some("Reader"));
}

#[test]
fn a_broken_schema_is_a_typed_error_naming_the_tool() {
    let bad = std::sync::Arc::new(json!({"type": 12}).as_object().cloned().unwrap());
    let err = tool_spec("s", "", &Tool::new("b", "d", bad)).unwrap_err();
    assert!(
        matches!(err, McpError::InvalidSchema { ref tool, .. } if tool == "b"),
        "{err}"
    );
}

#[test]
fn results_are_bounded_and_errors_keep_their_text() {
    let big = CallToolResult::success(vec![
        ContentBlock::text("a".repeat(100)),
        ContentBlock::text("b".repeat(100)),
    ]);
    let reply = call_result("s", "t", big, 200).unwrap();
    let bounds = reply.bounds.unwrap();
    assert!(bounds.truncated);
    assert_eq!((bounds.returned, bounds.total), (2, Some(2)));
    let ToolResultBody::Content(c) = reply.body else {
        panic!("content expected");
    };
    assert!(matches!(&c.parts[1], Part::Text { text } if text.len() < 100));
    let failed = CallToolResult::error(vec![ContentBlock::text("nope")]);
    let err = call_result("s", "t", failed, 1000).unwrap_err();
    assert_eq!(err.to_string(), "toolset `s`, tool `t` failed: nope");
}

#[test]
fn binary_contents_over_the_budget_are_stated_and_later_parts_still_tried() {
    use rmcp::model::{Annotations, EmbeddedResource, ResourceContents};
    use weft_core::message::{Resource, ResourceBody};

    let blob = ResourceContents::BlobResourceContents {
        uri: "mem://big.bin".into(),
        mime_type: Some("application/pdf".into()),
        blob: "A".repeat(4000),
        meta: None,
    };
    let result = CallToolResult::success(vec![
        ContentBlock::Resource(
            EmbeddedResource::new(blob).with_annotations(Annotations::default().with_priority(1.0)),
        ),
        ContentBlock::image("B".repeat(4000), "image/png"),
        ContentBlock::text("after"),
    ]);
    let reply = call_result("s", "t", result, 1000).unwrap();
    let bounds = reply.bounds.unwrap();
    assert!(bounds.truncated);
    assert_eq!((bounds.returned, bounds.total), (3, Some(3)));
    let ToolResultBody::Content(c) = reply.body else {
        panic!("content expected");
    };
    assert_eq!(
        c.parts[0],
        Part::Resource(Resource {
            uri: "mem://big.bin".into(),
            mime_type: Some("application/pdf".into()),
            annotations: Some(json!({"priority": 1.0})),
            body: ResourceBody::Omitted { size: 3000 },
        })
    );
    assert_eq!(
        c.parts[1],
        Part::Text {
            text: "[image omitted: image/png, 3000 bytes, over the payload budget]".into()
        }
    );
    assert_eq!(
        c.parts[2],
        Part::Text {
            text: "after".into()
        }
    );
    let omitted = c.parts[0].model_text().unwrap();
    assert_eq!(
        omitted,
        "[binary resource] <mem://big.bin> (application/pdf), 3000 bytes, omitted: over the payload budget"
    );
}

#[test]
fn a_blob_within_the_budget_is_kept_whole() {
    use rmcp::model::ResourceContents;
    use weft_core::message::ResourceBody;

    let blob = ResourceContents::blob("AAECAw==", "mem://b").with_mime_type("font/woff2");
    let reply = call_result(
        "s",
        "t",
        CallToolResult::success(vec![ContentBlock::resource(blob)]),
        1000,
    )
    .unwrap();
    assert!(reply.bounds.is_none());
    let ToolResultBody::Content(c) = reply.body else {
        panic!("content expected");
    };
    let Part::Resource(r) = &c.parts[0] else {
        panic!("a resource expected: {:?}", c.parts);
    };
    assert_eq!(r.mime_type.as_deref(), Some("font/woff2"));
    assert_eq!(
        r.body,
        ResourceBody::Blob {
            data: "AAECAw==".into()
        }
    );
    assert_eq!(r.size(), Some(4));
}
