//! Model request, response and stream chunk types, and model errors.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Usage;
use crate::ids::ToolCallId;
use crate::message::{Message, Thinking};
use crate::tool::ToolSpec;

/// One request to a model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// Whether and which tools the model must call.
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// Output token limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Nucleus sampling mass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    /// Sampling seed, for models that honour one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Sequences that end generation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Token budget for extended thinking / reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<u32>,
}

/// Whether the model may or must call tools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", content = "tool", rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// The model must not call tools.
    None,
    /// The model must call some tool.
    Required,
    /// The model must call this tool.
    Tool(String),
}

/// Why a model stopped producing output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// A natural end of the answer.
    EndTurn,
    /// The model wants tool results.
    ToolUse,
    /// The output token limit was reached.
    MaxTokens,
    /// A stop sequence was produced.
    StopSequence,
    /// The provider filtered the output.
    ContentFilter,
    /// The model refused.
    Refusal,
    /// A reason this crate does not know, verbatim.
    Other(String),
}

/// One piece of a streamed model answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamChunk {
    /// Assistant text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// Reasoning text.
    ThinkingDelta {
        /// The text.
        text: String,
    },
    /// The signature closing the current thinking block.
    ThinkingSignature {
        /// The signature, verbatim.
        signature: String,
    },
    /// A complete thinking block that arrived whole (redacted or provider items).
    ThinkingBlock {
        /// The block.
        thinking: Thinking,
    },
    /// A tool call begins.
    ToolCallStart {
        /// Position of the call in this answer; deltas refer to it.
        index: u32,
        /// The call's id.
        id: ToolCallId,
        /// The tool's name.
        name: String,
    },
    /// A fragment of a tool call's JSON arguments.
    ToolCallArgsDelta {
        /// The call's position.
        index: u32,
        /// The fragment.
        delta: String,
    },
    /// A tool call's arguments are complete.
    ToolCallEnd {
        /// The call's position.
        index: u32,
    },
    /// Token usage; later chunks override earlier fields they carry.
    Usage {
        /// The usage so far.
        usage: Usage,
    },
    /// Why the model stopped.
    Stop {
        /// The reason.
        reason: StopReason,
    },
}

/// A tool call assembled from a model answer; arguments are the raw JSON text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelToolCall {
    /// The call's id.
    pub id: ToolCallId,
    /// The tool's name as the model wrote it.
    pub name: String,
    /// The arguments exactly as the model produced them.
    pub arguments: String,
}

/// A whole model answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelSummary {
    /// Assistant text.
    pub text: String,
    /// Reasoning blocks, in order, to be carried back verbatim.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thinking: Vec<Thinking>,
    /// Tool calls, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ModelToolCall>,
    /// Token usage.
    pub usage: Usage,
    /// Why the model stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
}

/// Why a model call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ModelError {
    /// Configuration is missing or wrong (e.g. no API key).
    #[error("model configuration: {message}")]
    Config {
        /// What to fix.
        message: String,
    },
    /// The provider answered with an HTTP error.
    #[error("provider returned HTTP {status}: {message}")]
    Http {
        /// HTTP status.
        status: u16,
        /// The provider's error type, when it gave one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_type: Option<String>,
        /// The provider's message.
        message: String,
        /// Whether retrying may succeed.
        retryable: bool,
        /// How long the provider asked to wait.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after: Option<Duration>,
    },
    /// The provider reported an error inside a stream.
    #[error("provider stream error {error_type}: {message}")]
    Stream {
        /// The provider's error type, e.g. `overloaded_error`.
        error_type: String,
        /// The provider's message.
        message: String,
        /// Whether retrying may succeed.
        retryable: bool,
    },
    /// The stream ended before its terminal event.
    #[error("stream truncated: {message}")]
    Truncated {
        /// What was missing.
        message: String,
    },
    /// A line or body could not be decoded.
    #[error("malformed response: {message} (in `{line}`)")]
    Malformed {
        /// The offending line, possibly shortened.
        line: String,
        /// What was wrong with it.
        message: String,
    },
    /// The model has as many requests waiting as it accepts (a local
    /// model's bounded queue); retry later.
    #[error("model overloaded: {message}")]
    Overloaded {
        /// What is full.
        message: String,
    },
    /// A timeout elapsed.
    #[error("model {phase} timeout after {after:?}")]
    Timeout {
        /// Which phase: connect, first byte, idle.
        phase: String,
        /// The timeout.
        after: Duration,
    },
    /// The connection failed.
    #[error("connection failed: {message}")]
    Connection {
        /// What failed.
        message: String,
    },
    /// Anything else.
    #[error("model error: {message}")]
    Other {
        /// What failed.
        message: String,
    },
}

impl ModelError {
    /// Whether retrying the same request may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            ModelError::Http { retryable, .. } | ModelError::Stream { retryable, .. } => *retryable,
            ModelError::Connection { .. }
            | ModelError::Timeout { .. }
            | ModelError::Truncated { .. }
            | ModelError::Overloaded { .. } => true,
            ModelError::Config { .. } | ModelError::Malformed { .. } | ModelError::Other { .. } => {
                false
            }
        }
    }
}

/// Arbitrary provider-specific options, kept opaque by the core.
pub type ProviderOptions = serde_json::Map<String, Value>;
