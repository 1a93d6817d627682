//! The wire protocol shared with loom-mcp's `toolregistry`: stream names,
//! event names, consumer groups and the three JSON messages, with field
//! names, order and omit-when-empty rules exactly as loom-mcp writes them.
//! See `docs/registry-protocol.md`.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::go_json;

/// Message type of a tool call on a toolset request stream.
pub const TYPE_CALL: &str = "call";
/// Message type of a health ping on a toolset request stream.
pub const TYPE_PING: &str = "ping";
/// Event written by whoever creates a result stream, before any result.
pub const EVENT_INIT: &str = "init";
/// Event carrying a [`ToolOutputDeltaMessage`].
pub const EVENT_OUTPUT_DELTA: &str = "output_delta";
/// Event carrying a [`ToolResultMessage`].
pub const EVENT_RESULT: &str = "result";
/// Consumer group of providers on a toolset request stream.
pub const GROUP_PROVIDER: &str = "provider";
/// Consumer group of executors on a result stream.
pub const GROUP_AGENT: &str = "agent";

/// Now, in Unix milliseconds (the clock of [`ToolCallMessage::deadline_ms`]).
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A deadline `after` from now, in Unix milliseconds.
pub fn deadline_in(after: std::time::Duration) -> u64 {
    unix_ms().saturating_add(u64::try_from(after.as_millis()).unwrap_or(u64::MAX))
}

/// The Pulse stream name of a toolset's request stream.
pub fn toolset_stream(toolset: &str) -> String {
    format!("toolset:{toolset}:requests")
}

/// The Pulse stream name of one call's result stream.
pub fn result_stream(tool_use_id: &str) -> String {
    format!("result:{tool_use_id}")
}

/// Execution metadata sent with a call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallMeta {
    /// The run making the call (always present).
    #[serde(default)]
    pub run_id: String,
    /// The run's session (always present).
    #[serde(default)]
    pub session_id: String,
    /// The turn that requested the call.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub turn_id: String,
    /// The runtime's id of the call.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_call_id: String,
    /// The parent call, for nested runs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub parent_tool_call_id: String,
}

/// A message on a toolset request stream: a tool call or a health ping.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ToolCallMessage {
    /// `call` or `ping`.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// The call's transport id; its result stream is `result:<tool_use_id>`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_use_id: String,
    /// The ping's id, for pings: `<registration token>/<uuid>`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ping_id: String,
    /// The tool's full name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool: String,
    /// The arguments, as JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Box<RawValue>>,
    /// Execution metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ToolCallMeta>,
    /// W3C `traceparent` of the caller's span.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub traceparent: String,
    /// W3C `tracestate`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tracestate: String,
    /// W3C `baggage`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub baggage: String,
    /// weft's own field: when the caller stops waiting, in Unix
    /// milliseconds. A provider does not start a call read past it (it
    /// expired in the queue). Absent in loom-mcp's messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
}

impl PartialEq for ToolCallMessage {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
            && self.tool_use_id == other.tool_use_id
            && self.ping_id == other.ping_id
            && self.tool == other.tool
            && raw_eq(&self.payload, &other.payload)
            && self.meta == other.meta
            && self.traceparent == other.traceparent
            && self.tracestate == other.tracestate
            && self.baggage == other.baggage
            && self.deadline_ms == other.deadline_ms
    }
}

/// How a result was bounded; Go field names, as loom-mcp's `agent.Bounds`
/// has no JSON tags (lower-case names are accepted when decoding).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireBounds {
    /// Items returned.
    #[serde(rename = "Returned", alias = "returned", default)]
    pub returned: i64,
    /// Items in total, when known.
    #[serde(rename = "Total", alias = "total", default)]
    pub total: Option<i64>,
    /// Whether the result was truncated.
    #[serde(rename = "Truncated", alias = "truncated", default)]
    pub truncated: bool,
    /// Cursor for the next page.
    #[serde(rename = "NextCursor", alias = "next_cursor", default)]
    pub next_cursor: Option<String>,
    /// How to narrow the request.
    #[serde(rename = "RefinementHint", alias = "refinement_hint", default)]
    pub refinement_hint: String,
}

/// Server-only output published with a result; never sent to a model.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerDataItem {
    /// What the data is.
    #[serde(default)]
    pub kind: String,
    /// Who it is for (`timeline`, `internal`, `evidence`, ...).
    #[serde(default)]
    pub audience: String,
    /// The data, as JSON text (`null` when absent).
    pub data: Option<Box<RawValue>>,
}

impl PartialEq for ServerDataItem {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
            && self.audience == other.audience
            && raw_eq(&self.data, &other.data)
    }
}

/// One problem with one payload field; Go field names, as loom-mcp's
/// `tools.FieldIssue` has no JSON tags (lower-case names are accepted).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireFieldIssue {
    /// The field (`a`, `items[0].name`).
    #[serde(rename = "Field", alias = "field", default)]
    pub field: String,
    /// The violated constraint: `missing_field`, `invalid_field_type`,
    /// `invalid_enum_value`, `invalid_format`, `invalid_pattern`,
    /// `invalid_range`, `invalid_length`.
    #[serde(rename = "Constraint", alias = "constraint", default)]
    pub constraint: String,
    /// The allowed values, for enums.
    #[serde(rename = "Allowed", alias = "allowed", default)]
    pub allowed: Option<Vec<String>>,
    /// The shortest allowed length.
    #[serde(rename = "MinLen", alias = "min_len", default)]
    pub min_len: Option<i64>,
    /// The longest allowed length.
    #[serde(rename = "MaxLen", alias = "max_len", default)]
    pub max_len: Option<i64>,
    /// The pattern the value must match.
    #[serde(rename = "Pattern", alias = "pattern", default)]
    pub pattern: String,
    /// The format the value must have.
    #[serde(rename = "Format", alias = "format", default)]
    pub format: String,
}

/// A structured tool failure on the wire.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireToolError {
    /// Machine-readable code (`invalid_arguments`, `timeout`, ...).
    #[serde(default)]
    pub code: String,
    /// What went wrong.
    #[serde(default)]
    pub message: String,
    /// Field-level validation issues.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<WireFieldIssue>,
}

/// The final message of a call on its result stream.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ToolResultMessage {
    /// The call this answers.
    #[serde(default)]
    pub tool_use_id: String,
    /// The result, as JSON text.
    #[serde(
        rename = "result_json",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub result: Option<Box<RawValue>>,
    /// How the result was bounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<WireBounds>,
    /// Server-only data.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_data: Vec<ServerDataItem>,
    /// The failure, when the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<WireToolError>,
}

impl PartialEq for ToolResultMessage {
    fn eq(&self, other: &Self) -> bool {
        self.tool_use_id == other.tool_use_id
            && raw_eq(&self.result, &other.result)
            && self.bounds == other.bounds
            && self.server_data == other.server_data
            && self.error == other.error
    }
}

/// A fragment of a running tool's output on its result stream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolOutputDeltaMessage {
    /// The call.
    #[serde(default)]
    pub tool_use_id: String,
    /// The output channel (`stdout`, `stderr`, `log`, `progress`).
    #[serde(default)]
    pub stream: String,
    /// The fragment.
    #[serde(default)]
    pub delta: String,
}

/// Encodes a wire message as loom-mcp does (compact, Go escaping).
pub fn encode<T: Serialize>(msg: &T) -> Vec<u8> {
    // The wire types hold only strings, integers, booleans and valid raw
    // JSON, so serialization cannot fail; keep a valid fallback anyway.
    go_json::to_vec(msg).unwrap_or_else(|_| b"{}".to_vec())
}

/// Decodes a wire message.
pub fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, serde_json::Error> {
    serde_json::from_slice(bytes)
}

/// Wraps a JSON value as raw JSON text.
pub fn raw(value: &serde_json::Value) -> Box<RawValue> {
    // A `Value` always serializes; `null` is a valid fallback.
    serde_json::value::to_raw_value(value)
        .unwrap_or_else(|_| RawValue::from_string("null".to_owned()).unwrap_or_default())
}

fn raw_eq(a: &Option<Box<RawValue>>, b: &Option<Box<RawValue>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.get() == b.get(),
        _ => false,
    }
}
