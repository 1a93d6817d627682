//! Mapping between MCP and weft: an MCP tool becomes a [`ToolSpec`] (its
//! annotations carried over with MCP's defaults), and a `tools/call` result
//! becomes a [`ToolReply`] or a tool failure, every content kind kept
//! (the blocks' mapping is in `blocks`).

mod blocks;

use rmcp::model::{CallToolResult, Tool};
use serde_json::Value;
use weft_core::tool::{ToolAnnotations, ToolContent, ToolIdent, ToolResultBody, ToolSpec};
use weft_tools::{ArgsValidator, ToolReply};

use crate::bound::{bound_content, truncate_str};
use crate::error::McpError;

/// The weft spec of MCP tool `tool`, named `toolset.{prefix}{name}`.
///
/// MCP's defaults apply to absent hints: a tool that is not read-only is
/// destructive and talks to the open world unless it says otherwise. A
/// read-only tool counts as idempotent.
pub fn tool_spec(toolset: &str, prefix: &str, tool: &Tool) -> Result<ToolSpec, McpError> {
    let input_schema = Value::Object((*tool.input_schema).clone());
    ArgsValidator::compile(&input_schema).map_err(|e| McpError::InvalidSchema {
        toolset: toolset.to_owned(),
        tool: tool.name.to_string(),
        message: e.to_string(),
    })?;
    let hints = tool.annotations.clone().unwrap_or_default();
    let read_only = hints.read_only_hint.unwrap_or(false);
    let annotations = ToolAnnotations {
        title: hints.title.clone().or_else(|| tool.title.clone()),
        read_only,
        destructive: !read_only && hints.destructive_hint.unwrap_or(true),
        idempotent: hints.idempotent_hint.unwrap_or(read_only),
        open_world: hints.open_world_hint.unwrap_or(true),
    };
    Ok(ToolSpec {
        name: ToolIdent::from_parts(toolset, &format!("{prefix}{}", tool.name)),
        description: tool.description.as_deref().unwrap_or_default().to_owned(),
        input_schema,
        output_schema: tool
            .output_schema
            .as_ref()
            .map(|s| Value::Object((**s).clone())),
        annotations,
        tags: vec!["mcp".to_owned()],
    })
}

/// The reply for a `tools/call` result, cut to `budget` serialized bytes;
/// `isError` becomes [`McpError::ToolFailed`] carrying the tool's text.
pub fn call_result(
    toolset: &str,
    tool: &str,
    result: CallToolResult,
    budget: u64,
) -> Result<ToolReply, McpError> {
    let (parts, annotations) = blocks::parts(result.content);
    if result.is_error == Some(true) {
        let mut message = parts
            .iter()
            .filter_map(|p| p.model_text())
            .collect::<Vec<_>>()
            .join("\n");
        if message.is_empty() {
            message = "the tool reported an error without a message".to_owned();
        }
        truncate_str(&mut message, usize::try_from(budget).unwrap_or(usize::MAX));
        return Err(McpError::ToolFailed {
            toolset: toolset.to_owned(),
            tool: tool.to_owned(),
            message,
        });
    }
    let content = ToolContent {
        parts,
        structured: result.structured_content,
        meta: result.meta.map(|m| Value::Object(m.0)),
        annotations,
    };
    let (content, bounds) = bound_content(content, budget);
    let mut reply = ToolReply::from_body(ToolResultBody::Content(content));
    reply.bounds = bounds;
    Ok(reply)
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
