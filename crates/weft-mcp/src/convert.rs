//! Mapping between MCP and weft: an MCP tool becomes a [`ToolSpec`] (its
//! annotations carried over with MCP's defaults), and a `tools/call` result
//! becomes a [`ToolReply`] or a tool failure, every content kind kept.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, Tool};
use serde_json::Value;
use weft_core::message::{Media, MediaSource, Part};
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
    let mut parts = Vec::with_capacity(result.content.len());
    for block in result.content {
        parts.push(content_part(block));
    }
    if result.is_error == Some(true) {
        let mut message = parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
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
    };
    let (content, bounds) = bound_content(content, budget);
    let mut reply = ToolReply::from_body(ToolResultBody::Content(content));
    reply.bounds = bounds;
    Ok(reply)
}

/// One MCP content block as a weft part. Resource links and embedded
/// resources become text the model can read (an embedded resource keeps its
/// text; a binary one is an image or audio part when its type says so).
fn content_part(block: ContentBlock) -> Part {
    match block {
        ContentBlock::Text(t) => Part::Text { text: t.text },
        ContentBlock::Image(i) => Part::Image(base64_media(i.mime_type, i.data)),
        ContentBlock::Audio(a) => Part::Audio(base64_media(a.mime_type, a.data)),
        ContentBlock::ResourceLink(r) => {
            let mut text = format!("[resource link] {} <{}>", r.name, r.uri);
            if let Some(mime) = &r.mime_type {
                text.push_str(&format!(" ({mime})"));
            }
            if let Some(size) = r.size {
                text.push_str(&format!(", {size} bytes"));
            }
            if let Some(d) = r.description.as_ref().or(r.title.as_ref()) {
                text.push_str(&format!(": {d}"));
            }
            Part::Text { text }
        }
        ContentBlock::Resource(embedded) => resource_part(embedded.resource),
        // A content kind newer than this SDK: shown as its JSON so nothing is lost silently.
        other => Part::Text {
            text: format!(
                "[unsupported content] {}",
                serde_json::to_string(&other).unwrap_or_default()
            ),
        },
    }
}

/// An embedded resource as a part: its text, or its blob as media when the type says so.
fn resource_part(resource: ResourceContents) -> Part {
    match resource {
        ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text,
            ..
        } => Part::Text {
            text: format!("[resource] <{uri}>{}\n{text}", mime_suffix(&mime_type)),
        },
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            ..
        } => match mime_type.as_deref() {
            Some(m) if m.starts_with("image/") => Part::Image(base64_media(m.to_owned(), blob)),
            Some(m) if m.starts_with("audio/") => Part::Audio(base64_media(m.to_owned(), blob)),
            _ => Part::Text {
                text: format!(
                    "[binary resource] <{uri}>{}, {} base64 characters not shown",
                    mime_suffix(&mime_type),
                    blob.len()
                ),
            },
        },
        other => Part::Text {
            text: format!(
                "[unsupported resource] {}",
                serde_json::to_string(&other).unwrap_or_default()
            ),
        },
    }
}

fn mime_suffix(mime: &Option<String>) -> String {
    mime.as_ref().map(|m| format!(" ({m})")).unwrap_or_default()
}

fn base64_media(media_type: String, data: String) -> Media {
    Media {
        media_type,
        source: MediaSource::Base64(data),
    }
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
