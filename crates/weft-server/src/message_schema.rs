//! OpenAPI schemas of weft-core's messages and of a run's input. They
//! document weft-core's serde shapes (which derive no schemas) and are never
//! built.

#![allow(dead_code)] // These types exist for their schemas only.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// A run's input: one user text, or a list of `user` messages.
#[derive(Serialize, ToSchema)]
#[schema(as = RunInput)]
#[serde(untagged)]
pub(crate) enum RunInputSchema {
    /// One user message with this text.
    Text(String),
    /// Messages; clients send only `user` messages of `text`, `image` and
    /// `audio` parts.
    Messages(Vec<MessageSchema>),
}

/// One message of a conversation.
#[derive(Serialize, ToSchema)]
#[schema(as = Message)]
pub(crate) struct MessageSchema {
    /// Who speaks.
    role: RoleSchema,
    /// What is said, in order.
    parts: Vec<PartSchema>,
}

/// Who speaks a message.
#[derive(Serialize, ToSchema)]
#[schema(as = Role)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RoleSchema {
    /// Instructions to the model (from agent files only).
    System,
    /// The human or calling program.
    User,
    /// The model.
    Assistant,
    /// Tool results fed back to the model.
    Tool,
}

/// One part of a message, tagged by `type`.
#[derive(Serialize, ToSchema)]
#[schema(as = Part)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum PartSchema {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// The IANA media type, e.g. `image/png`.
        media_type: String,
        /// Where the bytes are.
        source: MediaSourceSchema,
    },
    /// An audio clip.
    Audio {
        /// The IANA media type, e.g. `audio/wav`.
        media_type: String,
        /// Where the bytes are.
        source: MediaSourceSchema,
    },
    /// Model reasoning (`kind`: `text` with `text` and `signature`,
    /// `redacted` with `data`, or `open_ai_reasoning` with `item`).
    Thinking {
        /// `text`, `redacted` or `open_ai_reasoning`.
        kind: String,
        /// The reasoning text, for `text`.
        text: Option<String>,
        /// The provider's signature, for `text`.
        signature: Option<String>,
        /// The opaque data, for `redacted`.
        data: Option<String>,
        /// The provider's item as JSON text, for `open_ai_reasoning`.
        item: Option<String>,
    },
    /// A tool invocation requested by the model.
    ToolUse {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
        /// The call's arguments.
        input: Value,
    },
    /// The result of a tool invocation.
    ToolResult {
        /// The id of the tool use this answers.
        tool_use_id: String,
        /// The result's content (parts).
        #[schema(no_recursion)]
        content: Vec<PartSchema>,
        /// Whether the result reports a failure.
        is_error: bool,
    },
    /// A resource a tool pointed at or embedded (MCP's resource links and
    /// embedded resources); models read a text rendering of it.
    Resource {
        /// The resource's URI.
        uri: String,
        /// Its IANA media type, when known.
        mime_type: Option<String>,
        /// MCP's annotations (`audience`, `priority`, `lastModified`), as given.
        #[schema(value_type = Option<Object>)]
        annotations: Option<Value>,
        /// A link, or the contents.
        body: ResourceBodySchema,
    },
}

/// What a resource part holds, tagged by `kind`.
#[derive(Serialize, ToSchema)]
#[schema(as = ResourceBody)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum ResourceBodySchema {
    /// A link: the contents stay with the server.
    Link {
        /// The resource's programmatic name.
        name: String,
        /// A human-readable title.
        title: Option<String>,
        /// What the resource is.
        description: Option<String>,
        /// Its size in bytes, when known.
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
    /// Embedded binary contents left out: over the payload budget.
    Omitted {
        /// Their size in bytes.
        size: u64,
    },
}

/// Where media bytes live: `{"kind": "base64" | "url", "value": "..."}`.
#[derive(Serialize, ToSchema)]
#[schema(as = MediaSource)]
pub(crate) struct MediaSourceSchema {
    /// `base64` or `url`.
    kind: MediaKindSchema,
    /// The base64 data, or the URL.
    value: String,
}

/// How media bytes are given.
#[derive(Serialize, ToSchema)]
#[schema(as = MediaKind)]
#[serde(rename_all = "snake_case")]
pub(crate) enum MediaKindSchema {
    /// Inline, base64-encoded.
    Base64,
    /// At a URL.
    Url,
}
