//! Resources as message parts: a link to a resource, or its contents
//! embedded as text or as a base64 blob, each with its URI, MIME type and
//! annotations; and the text a model that reads only text sees for one.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A resource a tool pointed at or embedded (MCP's resource links and
/// embedded resources).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resource {
    /// The resource's URI.
    pub uri: String,
    /// Its IANA media type, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// How the resource is meant to be used or shown (MCP's annotations:
    /// `audience`, `priority`, `lastModified`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// A link, or the contents.
    pub body: ResourceBody,
}

/// What a resource part holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ResourceBody {
    /// A link: the contents stay with the server.
    Link {
        /// The resource's programmatic name.
        name: String,
        /// A human-readable title.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// What the resource is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Its size in bytes, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
    },
    /// Embedded text contents.
    Text {
        /// The text.
        text: String,
    },
    /// Embedded binary contents.
    Blob {
        /// The bytes, base64-encoded.
        data: String,
    },
    /// Embedded binary contents left out because they did not fit the
    /// payload budget.
    Omitted {
        /// Their size in bytes.
        size: u64,
    },
}

impl Resource {
    /// The size in bytes of the contents, when the part says or holds them.
    pub fn size(&self) -> Option<u64> {
        match &self.body {
            ResourceBody::Link { size, .. } => *size,
            ResourceBody::Text { text } => Some(text.len() as u64),
            ResourceBody::Blob { data } => Some(base64_len(data)),
            ResourceBody::Omitted { size } => Some(*size),
        }
    }

    /// The resource as text for a model: a link's name, URI, MIME type,
    /// size and description; embedded text under a header naming its URI;
    /// a blob's URI, MIME type and size (its bytes are not shown).
    pub fn model_text(&self) -> String {
        let mut out = String::new();
        let mime = self
            .mime_type
            .as_ref()
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        let uri = &self.uri;
        match &self.body {
            ResourceBody::Link {
                name,
                title,
                description,
                size,
            } => {
                let _ = write!(out, "[resource link] {name} <{uri}>{mime}");
                if let Some(size) = size {
                    let _ = write!(out, ", {size} bytes");
                }
                if let Some(d) = description.as_ref().or(title.as_ref()) {
                    let _ = write!(out, ": {d}");
                }
            }
            ResourceBody::Text { text } => {
                let _ = write!(out, "[resource] <{uri}>{mime}\n{text}");
            }
            ResourceBody::Blob { data } => {
                let _ = write!(
                    out,
                    "[binary resource] <{uri}>{mime}, {} bytes (contents not shown)",
                    base64_len(data)
                );
            }
            ResourceBody::Omitted { size } => {
                let _ = write!(
                    out,
                    "[binary resource] <{uri}>{mime}, {size} bytes, omitted: over the payload budget"
                );
            }
        }
        out
    }
}

/// The number of bytes `data` (base64, padded or not) decodes to.
pub fn base64_len(data: &str) -> u64 {
    let chars = data
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .count() as u64;
    chars * 3 / 4
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::message::Part;

    fn parts() -> Vec<Part> {
        let link = Resource {
            uri: "file:///notes.txt".into(),
            mime_type: Some("text/plain".into()),
            annotations: Some(json!({"audience": ["user"], "priority": 0.5})),
            body: ResourceBody::Link {
                name: "notes".into(),
                title: Some("Notes".into()),
                description: Some("the notes".into()),
                size: Some(12),
            },
        };
        let text = Resource {
            uri: "mem://t".into(),
            mime_type: None,
            annotations: None,
            body: ResourceBody::Text { text: "hi".into() },
        };
        let blob = Resource {
            uri: "mem://b".into(),
            mime_type: Some("application/pdf".into()),
            annotations: None,
            body: ResourceBody::Blob {
                data: "AAECAw==".into(),
            },
        };
        let omitted = Resource {
            body: ResourceBody::Omitted { size: 9 },
            ..blob.clone()
        };
        [link, text, blob, omitted]
            .into_iter()
            .map(Part::Resource)
            .collect()
    }

    #[test]
    fn resource_parts_round_trip_through_json_and_message_pack() {
        let parts = parts();
        let json = serde_json::to_value(&parts).unwrap();
        assert_eq!(
            json[0],
            json!({"type": "resource", "uri": "file:///notes.txt", "mime_type": "text/plain",
                   "annotations": {"audience": ["user"], "priority": 0.5},
                   "body": {"kind": "link", "name": "notes", "title": "Notes",
                            "description": "the notes", "size": 12}})
        );
        assert_eq!(json[2]["body"], json!({"kind": "blob", "data": "AAECAw=="}));
        assert_eq!(serde_json::from_value::<Vec<Part>>(json).unwrap(), parts);
        let mut packed = Vec::new();
        let mut ser = rmp_serde::Serializer::new(&mut packed)
            .with_struct_map()
            .with_human_readable();
        parts.serialize(&mut ser).unwrap();
        let mut de = rmp_serde::Deserializer::from_read_ref(&packed).with_human_readable();
        assert_eq!(Vec::<Part>::deserialize(&mut de).unwrap(), parts);
    }

    #[test]
    fn parts_stored_before_resources_still_decode() {
        let old = json!([
            {"type": "text", "text": "a"},
            {"type": "image", "media_type": "image/png", "source": {"kind": "base64", "value": "AA=="}},
            {"type": "tool_result", "tool_use_id": "c", "is_error": false,
             "content": [{"type": "audio", "media_type": "audio/wav", "source": {"kind": "url", "value": "https://a"}}]}
        ]);
        let parts: Vec<Part> = serde_json::from_value(old.clone()).unwrap();
        assert_eq!(parts.len(), 3);
        assert_eq!(serde_json::to_value(&parts).unwrap(), old);
        // A MessagePack snapshot (structs as maps) of the same parts.
        let mut packed = Vec::new();
        let mut ser = rmp_serde::Serializer::new(&mut packed)
            .with_struct_map()
            .with_human_readable();
        old.serialize(&mut ser).unwrap();
        let mut de = rmp_serde::Deserializer::from_read_ref(&packed).with_human_readable();
        assert_eq!(Vec::<Part>::deserialize(&mut de).unwrap(), parts);
        // Tool content stored before part annotations reads with none, and
        // content without them is written as before.
        let content = json!({"parts": [{"type": "text", "text": "a"}], "structured": {"n": 1}});
        let c: crate::tool::ToolContent = serde_json::from_value(content.clone()).unwrap();
        assert!(c.annotations.is_empty());
        assert_eq!(serde_json::to_value(&c).unwrap(), content);
    }

    #[test]
    fn joined_model_text_puts_each_resource_on_lines_of_its_own() {
        let mut p = vec![Part::Text { text: "a".into() }];
        p.push(parts().swap_remove(1));
        p.push(Part::Text { text: "b".into() });
        p.push(Part::Text { text: "c".into() });
        assert_eq!(
            crate::message::joined_model_text(&p),
            "a\n[resource] <mem://t>\nhi\nbc"
        );
    }

    #[test]
    fn models_read_a_text_rendering() {
        let texts: Vec<String> = parts()
            .iter()
            .filter_map(|p| p.model_text().map(|t| t.into_owned()))
            .collect();
        assert_eq!(
            texts,
            [
                "[resource link] notes <file:///notes.txt> (text/plain), 12 bytes: the notes",
                "[resource] <mem://t>\nhi",
                "[binary resource] <mem://b> (application/pdf), 4 bytes (contents not shown)",
                "[binary resource] <mem://b> (application/pdf), 9 bytes, omitted: over the payload budget",
            ]
        );
    }
}
