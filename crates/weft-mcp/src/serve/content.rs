//! weft tool results as MCP results: text, image and audio parts as those
//! blocks with their annotations, resource parts as `resource_link` or
//! embedded `resource` blocks (a blob left out over the payload budget as
//! the text saying so), structured content as `structuredContent`, meta as
//! `_meta`; and a weft tool spec as an MCP tool, `outputSchema` included.

use std::sync::Arc;

use rmcp::model::{
    Annotations, AudioContent, CallToolResult, ContentBlock, EmbeddedResource, ImageContent,
    MetaObject, ResourceContents, TextContent, Tool, ToolAnnotations,
};
use serde_json::Value;
use weft_core::message::{MediaSource, Part, Resource, ResourceBody};
use weft_core::tool::{ToolContent, ToolResultBody, ToolSpec};

/// A weft result body as an MCP result.
pub(super) fn body_result(body: ToolResultBody) -> CallToolResult {
    match body {
        ToolResultBody::Json(v) => {
            let mut r = CallToolResult::success(vec![ContentBlock::text(v.to_string())]);
            r.structured_content = Some(v);
            r
        }
        ToolResultBody::Content(c) => content_result(c),
        ToolResultBody::Omitted(o) => CallToolResult::success(vec![ContentBlock::text(o.marker())]),
        ToolResultBody::Error(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
    }
}

/// Rich content as an MCP result; parts no MCP block holds (thinking, tool
/// calls) are left out.
fn content_result(c: ToolContent) -> CallToolResult {
    let mut annotations: Vec<Option<Value>> = vec![None; c.parts.len()];
    for a in c.annotations {
        if let Some(slot) = annotations.get_mut(a.part) {
            *slot = Some(a.annotations);
        }
    }
    let blocks = c
        .parts
        .into_iter()
        .zip(annotations)
        .filter_map(|(p, a)| block(p, mcp_annotations(a)))
        .collect();
    let mut r = CallToolResult::success(blocks);
    r.structured_content = c.structured;
    r.meta = match c.meta {
        Some(Value::Object(m)) => Some(MetaObject(m)),
        _ => None,
    };
    r
}

/// One part as an MCP block, with `annotations` when it has them.
fn block(part: Part, annotations: Option<Annotations>) -> Option<ContentBlock> {
    Some(match part {
        Part::Text { text } => {
            ContentBlock::Text(annotate_text(TextContent::new(text), annotations))
        }
        Part::Image(m) => match m.source {
            MediaSource::Base64(d) => {
                let mut image = ImageContent::new(d, m.media_type);
                image.annotations = annotations;
                ContentBlock::Image(image)
            }
            MediaSource::Url(u) => text_block(format!("[image] {u}"), annotations),
        },
        Part::Audio(m) => match m.source {
            MediaSource::Base64(d) => {
                let mut audio = AudioContent::new(d, m.media_type);
                audio.annotations = annotations;
                ContentBlock::Audio(audio)
            }
            MediaSource::Url(u) => text_block(format!("[audio] {u}"), annotations),
        },
        Part::Resource(r) => resource_block(r),
        Part::Thinking(_) | Part::ToolUse { .. } | Part::ToolResult { .. } => return None,
    })
}

/// A resource part as a `resource_link`, an embedded `resource`, or (a
/// blob left out) the text saying what was left out.
fn resource_block(r: Resource) -> ContentBlock {
    let annotations = mcp_annotations(r.annotations.clone());
    let embedded = |contents: ResourceContents, annotations: Option<Annotations>| {
        let mut e = EmbeddedResource::new(contents);
        e.annotations = annotations;
        ContentBlock::Resource(e)
    };
    match r.body {
        ResourceBody::Link {
            name,
            title,
            description,
            size,
        } => {
            let mut link = rmcp::model::Resource::new(r.uri, name);
            link.title = title;
            link.description = description;
            link.mime_type = r.mime_type;
            link.size = size;
            link.annotations = annotations;
            ContentBlock::ResourceLink(link)
        }
        ResourceBody::Text { text } => embedded(
            ResourceContents::TextResourceContents {
                uri: r.uri,
                mime_type: r.mime_type,
                text,
                meta: None,
            },
            annotations,
        ),
        ResourceBody::Blob { data } => embedded(
            ResourceContents::BlobResourceContents {
                uri: r.uri,
                mime_type: r.mime_type,
                blob: data,
                meta: None,
            },
            annotations,
        ),
        ResourceBody::Omitted { .. } => {
            let text = Resource {
                annotations: None,
                ..r
            }
            .model_text();
            text_block(text, annotations)
        }
    }
}

fn text_block(text: String, annotations: Option<Annotations>) -> ContentBlock {
    ContentBlock::Text(annotate_text(TextContent::new(text), annotations))
}

fn annotate_text(mut t: TextContent, annotations: Option<Annotations>) -> TextContent {
    t.annotations = annotations;
    t
}

/// Stored annotations as MCP's; ones that are not MCP's shape are left out.
fn mcp_annotations(value: Option<Value>) -> Option<Annotations> {
    serde_json::from_value(value?).ok()
}

/// A weft tool spec as an MCP tool: its annotations, and its output schema
/// when it has one.
pub(super) fn mcp_tool(spec: &ToolSpec) -> Tool {
    let schema = spec.input_schema.as_object().cloned().unwrap_or_default();
    let a = &spec.annotations;
    let mut tool = Tool::new(
        spec.name.as_str().to_owned(),
        spec.description.clone(),
        Arc::new(schema),
    )
    .with_annotations(ToolAnnotations::from_raw(
        a.title.clone(),
        Some(a.read_only),
        Some(a.destructive),
        Some(a.idempotent),
        Some(a.open_world),
    ));
    if let Some(Value::Object(output)) = &spec.output_schema {
        tool = tool.with_raw_output_schema(Arc::new(output.clone()));
    }
    tool
}
