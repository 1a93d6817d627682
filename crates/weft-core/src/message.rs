//! Conversation messages: a role and an ordered list of typed parts;
//! resource parts are in [`resource`].

mod resource;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use resource::{Resource, ResourceBody, base64_len};

use crate::ids::ToolCallId;

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions to the model.
    System,
    /// The human (or calling program).
    User,
    /// The model.
    Assistant,
    /// Tool results fed back to the model.
    Tool,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// What is said, in order.
    pub parts: Vec<Part>,
}

impl Message {
    /// A message with one text part.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self {
            role,
            parts: vec![Part::Text { text: text.into() }],
        }
    }

    /// A user message with one text part.
    pub fn user(text: impl Into<String>) -> Self {
        Self::text(Role::User, text)
    }

    /// A system message with one text part.
    pub fn system(text: impl Into<String>) -> Self {
        Self::text(Role::System, text)
    }

    /// An assistant message with one text part.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::text(Role::Assistant, text)
    }

    /// The concatenation of this message's text parts.
    pub fn joined_text(&self) -> String {
        let mut out = String::new();
        for part in &self.parts {
            if let Part::Text { text } = part {
                out.push_str(text);
            }
        }
        out
    }
}

/// One part of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// Model reasoning, carried back verbatim on the next request.
    Thinking(Thinking),
    /// A tool invocation requested by the model.
    ToolUse {
        /// The call's id, echoed by the matching result.
        id: ToolCallId,
        /// The tool's name.
        name: String,
        /// The call's arguments, shared with the call itself.
        input: std::sync::Arc<Value>,
    },
    /// The result of a tool invocation.
    ToolResult {
        /// The id of the tool use this answers.
        tool_use_id: ToolCallId,
        /// The result's content.
        content: Vec<Part>,
        /// Whether the result reports a failure.
        is_error: bool,
    },
    /// An image.
    Image(Media),
    /// An audio clip.
    Audio(Media),
    /// A resource: a link to one, or its contents (text or a blob).
    Resource(Resource),
}

impl Part {
    /// The part as text for a model: a text part's text, a resource's
    /// rendering ([`Resource::model_text`]); `None` for the other kinds.
    pub fn model_text(&self) -> Option<Cow<'_, str>> {
        match self {
            Part::Text { text } => Some(Cow::Borrowed(text)),
            Part::Resource(r) => Some(Cow::Owned(r.model_text())),
            _ => None,
        }
    }
}

/// The text a model reading only text sees for `parts`: text parts joined
/// as they are, each resource's rendering on lines of its own.
pub fn joined_model_text(parts: &[Part]) -> String {
    let mut out = String::new();
    let mut after_resource = false;
    for part in parts {
        match part {
            Part::Text { text } => {
                if after_resource && !text.is_empty() && !text.starts_with('\n') {
                    out.push('\n');
                }
                out.push_str(text);
                after_resource = false;
            }
            Part::Resource(r) => {
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(&r.model_text());
                after_resource = true;
            }
            _ => {}
        }
    }
    out
}

/// Model reasoning: visible text with the provider's signature, or a redacted blob.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Thinking {
    /// Reasoning text with the provider's signature over it.
    Text {
        /// The reasoning text.
        text: String,
        /// The provider's signature, kept byte for byte.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Reasoning the provider returned encrypted; kept byte for byte.
    Redacted {
        /// The opaque data.
        data: String,
    },
    /// An OpenAI Responses `reasoning` output item (summary and encrypted
    /// content), kept as its raw JSON text byte for byte and sent back as the
    /// next request's input item, since with `store: false` the server cannot
    /// look it up.
    OpenAiReasoning {
        /// The item's JSON text, exactly as the provider sent it.
        item: String,
    },
}

/// Image or audio content: a media type plus inline data or a URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Media {
    /// The IANA media type, e.g. `image/png`.
    pub media_type: String,
    /// Where the bytes are.
    pub source: MediaSource,
}

/// Where media bytes live.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum MediaSource {
    /// Inline, base64-encoded.
    Base64(String),
    /// At a URL.
    Url(String),
}
