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
