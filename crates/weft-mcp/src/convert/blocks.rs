//! MCP content blocks as weft parts, nothing dropped: text, images and audio
//! as those parts; resource links and embedded resources (text or blob) as
//! resource parts carrying their own annotations, except an embedded image
//! or audio blob, which becomes that part; the annotations of the other
//! blocks kept beside the parts, by position.

use rmcp::model::{Annotations, ContentBlock, ResourceContents};
use serde_json::Value;
use weft_core::message::{Media, MediaSource, Part, Resource, ResourceBody};
use weft_core::tool::PartAnnotations;

/// `blocks` as parts, with the annotations of the parts that keep none
/// themselves.
pub(super) fn parts(blocks: Vec<ContentBlock>) -> (Vec<Part>, Vec<PartAnnotations>) {
    let mut parts = Vec::with_capacity(blocks.len());
    let mut annotations = Vec::new();
    for block in blocks {
        let (part, a) = block_part(block);
        if let Some(annotations_value) = a {
            annotations.push(PartAnnotations {
                part: parts.len(),
                annotations: annotations_value,
            });
        }
        parts.push(part);
    }
    (parts, annotations)
}

/// One block as a part, and its annotations when the part cannot hold them.
fn block_part(block: ContentBlock) -> (Part, Option<Value>) {
    match block {
        ContentBlock::Text(t) => (Part::Text { text: t.text }, json(t.annotations)),
        ContentBlock::Image(i) => (
            Part::Image(base64_media(i.mime_type, i.data)),
            json(i.annotations),
        ),
        ContentBlock::Audio(a) => (
            Part::Audio(base64_media(a.mime_type, a.data)),
            json(a.annotations),
        ),
        ContentBlock::ResourceLink(r) => {
            let resource = Resource {
                uri: r.uri,
                mime_type: r.mime_type,
                annotations: json(r.annotations),
                body: ResourceBody::Link {
                    name: r.name,
                    title: r.title,
                    description: r.description,
                    size: r.size,
                },
            };
            (Part::Resource(resource), None)
        }
        ContentBlock::Resource(embedded) => {
            embedded_part(embedded.resource, json(embedded.annotations))
        }
        // A content kind newer than this SDK: shown as its JSON so nothing is lost silently.
        other => (
            Part::Text {
                text: format!(
                    "[unsupported content] {}",
                    serde_json::to_string(&other).unwrap_or_default()
                ),
            },
            None,
        ),
    }
}

/// An embedded resource as a part: a resource part, or an image or audio
/// part for a blob whose type says so (its annotations then kept beside).
fn embedded_part(resource: ResourceContents, annotations: Option<Value>) -> (Part, Option<Value>) {
    match resource {
        ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text,
            ..
        } => {
            let body = ResourceBody::Text { text };
            (resource_part(uri, mime_type, annotations, body), None)
        }
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            ..
        } => match mime_type {
            Some(m) if m.starts_with("image/") => (Part::Image(base64_media(m, blob)), annotations),
            Some(m) if m.starts_with("audio/") => (Part::Audio(base64_media(m, blob)), annotations),
            mime_type => {
                let body = ResourceBody::Blob { data: blob };
                (resource_part(uri, mime_type, annotations, body), None)
            }
        },
        other => (
            Part::Text {
                text: format!(
                    "[unsupported resource] {}",
                    serde_json::to_string(&other).unwrap_or_default()
                ),
            },
            annotations,
        ),
    }
}

fn resource_part(
    uri: String,
    mime_type: Option<String>,
    annotations: Option<Value>,
    body: ResourceBody,
) -> Part {
    Part::Resource(Resource {
        uri,
        mime_type,
        annotations,
        body,
    })
}

/// Annotations as JSON, written as MCP writes them (a priority of 0.8 stays 0.8).
fn json(annotations: Option<Annotations>) -> Option<Value> {
    let text = serde_json::to_string(&annotations?).ok()?;
    serde_json::from_str(&text).ok()
}

fn base64_media(media_type: String, data: String) -> Media {
    Media {
        media_type,
        source: MediaSource::Base64(data),
    }
}
