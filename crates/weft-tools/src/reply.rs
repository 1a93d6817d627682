//! Building tool replies: [`ToolReply`] constructors and [`Content`], a
//! builder for rich results (text, images, audio, resources, structured
//! JSON, meta, part annotations).

use serde_json::Value;
use weft_core::message::{Media, MediaSource, Part, Resource};
use weft_core::tool::{Bounds, PartAnnotations, ToolContent, ToolResultBody};

use crate::toolset::ToolReply;

impl ToolReply {
    /// A reply with the given body and no extras.
    pub fn from_body(body: ToolResultBody) -> Self {
        Self {
            body,
            server_data: None,
            bounds: None,
        }
    }

    /// A reply carrying rich content.
    pub fn content(content: impl Into<ToolContent>) -> Self {
        Self::from_body(ToolResultBody::Content(content.into()))
    }

    /// A reply carrying one text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::content(Content::new().text(text))
    }

    /// Attaches data for UIs and persistence that never reaches a model.
    pub fn with_server_data(mut self, data: Value) -> Self {
        self.server_data = Some(data);
        self
    }

    /// Attaches how the result relates to the full data.
    pub fn with_bounds(mut self, bounds: Bounds) -> Self {
        self.bounds = Some(bounds);
        self
    }
}

/// A builder for [`ToolContent`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Content(ToolContent);

impl Content {
    /// Empty content.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a text part.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.0.parts.push(Part::Text { text: text.into() });
        self
    }

    /// Appends an image given as base64 data.
    pub fn image_base64(self, media_type: impl Into<String>, data: impl Into<String>) -> Self {
        self.media(true, media_type, MediaSource::Base64(data.into()))
    }

    /// Appends an image at a URL.
    pub fn image_url(self, media_type: impl Into<String>, url: impl Into<String>) -> Self {
        self.media(true, media_type, MediaSource::Url(url.into()))
    }

    /// Appends an audio clip given as base64 data.
    pub fn audio_base64(self, media_type: impl Into<String>, data: impl Into<String>) -> Self {
        self.media(false, media_type, MediaSource::Base64(data.into()))
    }

    /// Appends an audio clip at a URL.
    pub fn audio_url(self, media_type: impl Into<String>, url: impl Into<String>) -> Self {
        self.media(false, media_type, MediaSource::Url(url.into()))
    }

    /// Appends a resource: a link, or embedded text or blob contents.
    pub fn resource(mut self, resource: Resource) -> Self {
        self.0.parts.push(Part::Resource(resource));
        self
    }

    /// Annotates the last part appended (a resource keeps its own
    /// annotations; these are for text, image and audio parts).
    pub fn annotate(mut self, annotations: Value) -> Self {
        if let Some(last) = self.0.parts.len().checked_sub(1) {
            self.0.annotations.retain(|a| a.part != last);
            self.0.annotations.push(PartAnnotations {
                part: last,
                annotations,
            });
        }
        self
    }

    /// Sets the structured JSON content.
    pub fn structured(mut self, value: Value) -> Self {
        self.0.structured = Some(value);
        self
    }

    /// Sets the free-form metadata.
    pub fn meta(mut self, value: Value) -> Self {
        self.0.meta = Some(value);
        self
    }

    /// The finished content.
    pub fn build(self) -> ToolContent {
        self.0
    }

    fn media(mut self, image: bool, media_type: impl Into<String>, source: MediaSource) -> Self {
        let media = Media {
            media_type: media_type.into(),
            source,
        };
        self.0.parts.push(if image {
            Part::Image(media)
        } else {
            Part::Audio(media)
        });
        self
    }
}

impl From<Content> for ToolContent {
    fn from(content: Content) -> Self {
        content.0
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn builds_rich_content() {
        let reply = ToolReply::content(
            Content::new()
                .text("a chart")
                .annotate(json!({"audience": ["user"]}))
                .image_base64("image/png", "AAAA")
                .audio_url("audio/mpeg", "https://example.com/a.mp3")
                .structured(json!({"points": 3}))
                .meta(json!({"source": "test"})),
        )
        .with_server_data(json!({"raw": true}));
        let ToolResultBody::Content(c) = &reply.body else {
            panic!("expected content, got {:?}", reply.body);
        };
        assert_eq!(c.parts.len(), 3);
        assert!(matches!(c.parts[1], Part::Image(_)));
        assert!(matches!(c.parts[2], Part::Audio(_)));
        assert_eq!(c.structured, Some(json!({"points": 3})));
        assert_eq!(c.annotations[0].part, 0);
        assert_eq!(c.annotations[0].annotations, json!({"audience": ["user"]}));
        assert_eq!(reply.server_data, Some(json!({"raw": true})));
    }
}
