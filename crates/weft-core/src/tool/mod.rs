//! Tools as the contract sees them: specs, requests, outputs, retry hints;
//! errors and their codes are in [`error`], retry hints in [`retry`].

pub mod child;
mod error;
mod retry;

pub use error::{FieldIssue, FieldIssueKind, ToolError, ToolErrorCode};
pub use retry::{RetryHint, RetryHintProvider, RetryReason};

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::elicitation::Elicitor;
use crate::ids::{RunId, SessionId, ToolCallId, TurnId};
use crate::message::Part;
pub use crate::tool_output::OutputSink;

/// Free-form key/value labels attached to runs, requests and planner thoughts.
pub type Labels = BTreeMap<String, String>;

/// A tool's full name, `toolset.tool`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ToolIdent(Arc<str>);

impl ToolIdent {
    /// Wraps a full `toolset.tool` name (a name without a dot has an empty toolset).
    pub fn new(name: impl Into<Arc<str>>) -> Self {
        Self(name.into())
    }

    /// Joins a toolset name and a tool name.
    pub fn from_parts(toolset: &str, tool: &str) -> Self {
        Self(format!("{toolset}.{tool}").into())
    }

    /// The full name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The toolset part (before the first dot), empty when there is none.
    pub fn toolset(&self) -> &str {
        self.0.split_once('.').map_or("", |(set, _)| set)
    }

    /// The tool part (after the first dot), the whole name when there is no dot.
    pub fn tool(&self) -> &str {
        self.0.split_once('.').map_or(&self.0, |(_, tool)| tool)
    }
}

impl fmt::Debug for ToolIdent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for ToolIdent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ToolIdent {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

impl std::borrow::Borrow<str> for ToolIdent {
    fn borrow(&self) -> &str {
        &self.0
    }
}

/// What a planner and a model know about a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's full name.
    pub name: ToolIdent,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// JSON Schema of the result, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behavioural hints.
    #[serde(default)]
    pub annotations: ToolAnnotations,
    /// Free-form tags for filtering.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// Behavioural hints about a tool, as in MCP's tool annotations; on the wire
/// they carry MCP's names (`readOnlyHint`, ...), and the older snake_case
/// names are still read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolAnnotations {
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment.
    #[serde(default, rename = "readOnlyHint", alias = "read_only")]
    pub read_only: bool,
    /// The tool may destroy data.
    #[serde(default, rename = "destructiveHint", alias = "destructive")]
    pub destructive: bool,
    /// Calling it twice with the same arguments has no extra effect; a call
    /// interrupted by a crash may be executed again.
    #[serde(default, rename = "idempotentHint", alias = "idempotent")]
    pub idempotent: bool,
    /// The tool talks to the open world (network, third parties).
    #[serde(default, rename = "openWorldHint", alias = "open_world")]
    pub open_world: bool,
}

/// One tool invocation as handed to a toolset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRequest {
    /// The tool to call.
    pub name: ToolIdent,
    /// The call's arguments, shared with the call's events and output: a
    /// toolset that changes them takes its own copy (`Arc::make_mut`).
    pub payload: Arc<Value>,
    /// The run making the call.
    pub run_id: RunId,
    /// The run's session.
    pub session_id: SessionId,
    /// The turn that requested the call.
    pub turn_id: TurnId,
    /// The call's id.
    pub tool_call_id: ToolCallId,
    /// The parent call, for calls made by nested runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<ToolCallId>,
    /// Labels of the run.
    #[serde(default, skip_serializing_if = "Labels::is_empty")]
    pub labels: Labels,
    /// Where the tool may publish live output while it runs; never serialized.
    #[serde(skip)]
    pub output: OutputSink,
    /// Where the tool may ask the human for input while it runs; never
    /// serialized. The runtime attaches one only for toolsets that answer
    /// the elicitation capability; for the others it is detached.
    #[serde(skip)]
    pub elicit: Elicitor,
    /// Where the tool may start child runs (an agent called as a tool);
    /// never serialized. Detached outside a runtime.
    #[serde(skip)]
    pub children: child::Children,
}

/// The outcome of one tool call, as recorded in the run and shown to planners.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The call this answers.
    pub tool_call_id: ToolCallId,
    /// The tool that was called.
    pub name: ToolIdent,
    /// The arguments the tool was called with (shared with the call and its events).
    pub payload: Arc<Value>,
    /// The result, or why there is none.
    pub result: ToolResultBody,
    /// Data for UIs and persistence that never reaches a model (boxed, as
    /// are the bounds: most outputs have neither, and a run keeps every
    /// output it made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_data: Option<Box<Value>>,
    /// Size of the serialized result in bytes, before any omission.
    #[serde(default)]
    pub result_bytes: u64,
    /// How the result relates to the full data, when it was truncated or paged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<Box<Bounds>>,
    /// Guidance for the planner after a failure (boxed: most outputs have
    /// none, and a run keeps every output it made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_hint: Option<Box<RetryHint>>,
    /// How the call went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<Telemetry>,
    /// Whether this output spends one of the uses a run may make of its
    /// tool (the advisor's per-run budget); the run machine counts them
    /// ([`RunMachine::uses_of`](crate::run::RunMachine::uses_of)).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub charged: bool,
}

impl ToolOutput {
    /// A successful output carrying a JSON result.
    pub fn ok(
        tool_call_id: ToolCallId,
        name: ToolIdent,
        payload: impl Into<Arc<Value>>,
        result: Value,
    ) -> Self {
        Self::with_body(tool_call_id, name, payload, ToolResultBody::Json(result))
    }

    /// A failed output carrying `error`.
    pub fn error(
        tool_call_id: ToolCallId,
        name: ToolIdent,
        payload: impl Into<Arc<Value>>,
        error: ToolError,
    ) -> Self {
        Self::with_body(tool_call_id, name, payload, ToolResultBody::Error(error))
    }

    /// Attaches a retry hint.
    pub fn with_retry_hint(mut self, hint: Option<RetryHint>) -> Self {
        self.retry_hint = hint.map(Box::new);
        self
    }

    /// An output with the given body and no extras.
    pub fn with_body(
        tool_call_id: ToolCallId,
        name: ToolIdent,
        payload: impl Into<Arc<Value>>,
        result: ToolResultBody,
    ) -> Self {
        Self {
            tool_call_id,
            name,
            payload: payload.into(),
            result,
            server_data: None,
            result_bytes: 0,
            bounds: None,
            retry_hint: None,
            telemetry: None,
            charged: false,
        }
    }

    /// Marks the output as spending one of the run's uses of its tool.
    pub fn charged(mut self) -> Self {
        self.charged = true;
        self
    }

    /// Whether the call failed.
    pub fn is_error(&self) -> bool {
        matches!(self.result, ToolResultBody::Error(_))
    }
}

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum ToolResultBody {
    /// A JSON result.
    Json(Value),
    /// Rich content: text, images, audio and optional structured JSON.
    Content(ToolContent),
    /// The result was withheld from the model; the reason says why.
    Omitted(Omission),
    /// The call failed.
    Error(ToolError),
}

/// Rich tool result content, as MCP tools return it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolContent {
    /// Content parts (text, image, audio, resource).
    pub parts: Vec<Part>,
    /// Structured JSON content, when the tool has an output schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    /// Annotations of text, image and audio parts, by position (a resource
    /// part carries its own), kept beside the parts so that those stay the
    /// plain parts every conversation holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotations: Vec<PartAnnotations>,
}

/// The annotations of one part of a [`ToolContent`] (MCP's `audience`,
/// `priority`, `lastModified`), kept as given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartAnnotations {
    /// The part's index in [`ToolContent::parts`].
    pub part: usize,
    /// The annotations.
    pub annotations: Value,
}

/// Why a result was withheld from the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Omission {
    /// The result exceeded the payload budget.
    TooLarge {
        /// Size of the serialized result.
        bytes: u64,
        /// The budget it exceeded.
        limit: u64,
    },
    /// The tool asked for its result to be kept from the model.
    ToolRequested {
        /// The tool's explanation.
        message: String,
    },
}

impl Omission {
    /// The marker text a model sees in place of the result.
    pub fn marker(&self) -> String {
        match self {
            Omission::TooLarge { bytes, limit } => format!(
                "[result omitted: {bytes} bytes exceeds the {limit}-byte budget; narrow the request]"
            ),
            Omission::ToolRequested { message } => format!("[result omitted: {message}]"),
        }
    }
}

/// How a returned result relates to the full data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bounds {
    /// Items returned.
    pub returned: u64,
    /// Items in total, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether the result was truncated.
    pub truncated: bool,
    /// Cursor for the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How to narrow the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refinement_hint: Option<String>,
}

/// How a tool call went.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Telemetry {
    /// Wall time in milliseconds.
    pub duration_ms: u64,
    /// Tokens used, for tools backed by a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// The model used, for tools backed by a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn annotations_use_mcp_names_on_the_wire_and_read_the_old_ones() {
        let a = ToolAnnotations {
            title: Some("Delete".into()),
            read_only: false,
            destructive: true,
            idempotent: true,
            open_world: false,
        };
        let wire = serde_json::to_value(&a).unwrap();
        assert_eq!(
            wire,
            json!({"title": "Delete", "readOnlyHint": false, "destructiveHint": true,
                   "idempotentHint": true, "openWorldHint": false})
        );
        assert_eq!(serde_json::from_value::<ToolAnnotations>(wire).unwrap(), a);
        let old = json!({"title": "Delete", "destructive": true, "idempotent": true});
        assert_eq!(serde_json::from_value::<ToolAnnotations>(old).unwrap(), a);
    }
}
