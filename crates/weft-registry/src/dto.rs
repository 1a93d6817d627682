//! The gateway's HTTP request and response bodies, shared by the gateway
//! and its client.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::catalog::{ToolSchema, ToolsetRecord};
use crate::wire::WireFieldIssue;

/// `POST /v1/toolsets`: register (or re-register) a toolset.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RegisterRequest {
    /// The toolset's unique name.
    pub name: String,
    /// What it offers.
    #[serde(default)]
    pub description: String,
    /// Its semantic version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Tags for filtering.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Its tools, with their schemas.
    pub tools: Vec<ToolSchema>,
    /// Most calls queued before `queue_full` (the gateway's default when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_queue: Option<u64>,
}

/// The answer to a registration.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RegisterResponse {
    /// When, RFC 3339.
    pub registered_at: String,
    /// The new registration token; pings carry it, older ones are ignored.
    pub registration_token: String,
}

/// `POST /v1/toolsets/{name}/pong`: a provider answers a ping.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PongRequest {
    /// The ping's id.
    pub ping_id: String,
}

/// The answer to a pong.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PongResponse {
    /// Whether it refreshed the toolset's health (false: a stale registration's ping).
    pub accepted: bool,
}

/// A toolset in lists and search results.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ToolsetInfo {
    /// Its name.
    pub name: String,
    /// What it offers.
    pub description: String,
    /// Its version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Its tags.
    pub tags: Vec<String>,
    /// How many tools it has.
    pub tool_count: usize,
    /// When it was registered.
    pub registered_at: String,
}

impl From<&ToolsetRecord> for ToolsetInfo {
    fn from(r: &ToolsetRecord) -> Self {
        Self {
            name: r.name.clone(),
            description: r.description.clone(),
            version: r.version.clone(),
            tags: r.tags.clone(),
            tool_count: r.tools.len(),
            registered_at: r.registered_at.clone(),
        }
    }
}

/// A list of toolsets.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ToolsetList {
    /// The toolsets.
    pub toolsets: Vec<ToolsetInfo>,
}

/// One toolset with its tools and its health.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ToolsetView {
    /// The toolset.
    #[serde(flatten)]
    pub toolset: ToolsetRecord,
    /// Whether a provider answered a ping recently enough.
    pub healthy: bool,
    /// Milliseconds since the last pong.
    pub pong_age_ms: i64,
}

/// Execution metadata of a call made over HTTP.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct CallMeta {
    /// The run making the call.
    pub run_id: String,
    /// Its session.
    pub session_id: String,
    /// The turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The caller's call id; becomes the `tool_use_id`.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// The parent call.
    #[serde(default)]
    pub parent_tool_call_id: Option<String>,
}

/// `POST /v1/toolsets/{name}/tools/{tool}/call`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CallRequest {
    /// The arguments; validated against the tool's schema.
    pub payload: Value,
    /// Execution metadata.
    pub meta: CallMeta,
}

/// The answer to a call: where its result will appear.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CallResponse {
    /// The call's id; its result stream is `pulse:stream:result:<tool_use_id>`.
    pub tool_use_id: String,
    /// False when the result stream already existed (a retry re-attaches).
    pub published: bool,
}

/// An error answer (`application/problem+json`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Problem {
    /// The HTTP status.
    pub status: u16,
    /// The machine-readable code: `unauthorized` (401), `forbidden` (403),
    /// `conflict` (409: another provider registered the toolset), `not_found`,
    /// `validation_error`, `service_unavailable`, `queue_full`,
    /// `payload_too_large`, `bad_request`, `internal`.
    pub code: String,
    /// What was wrong.
    pub detail: String,
    /// Per-field problems, for `validation_error`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Object>)]
    pub issues: Vec<WireFieldIssue>,
}
