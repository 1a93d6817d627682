//! The [`ToolSet`] trait: a named group of tools with one lifecycle, and the
//! reply types a tool call produces.

use async_trait::async_trait;
use serde_json::Value;
use weft_core::tool::{Bounds, RetryHint, ToolError, ToolRequest, ToolResultBody, ToolSpec};

/// A named group of tools with one lifecycle (in-process, MCP server, registry).
#[async_trait]
pub trait ToolSet: Send + Sync + 'static {
    /// The toolset's name: the part before the dot in its tools' names.
    fn name(&self) -> &str;

    /// The tools this toolset offers, with full `toolset.tool` names.
    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError>;

    /// Calls one tool. `request.payload` has already been validated against
    /// the tool's input schema by the run.
    async fn call_tool(&self, request: ToolRequest) -> Result<ToolReply, ToolFailure>;
}

/// A successful tool call's result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReply {
    /// What the model will see (JSON or rich content).
    pub body: ToolResultBody,
    /// Data for UIs and persistence that never reaches a model.
    pub server_data: Option<Value>,
    /// How the result relates to the full data.
    pub bounds: Option<Bounds>,
}

impl ToolReply {
    /// A reply carrying a JSON value.
    pub fn json(value: Value) -> Self {
        Self {
            body: ToolResultBody::Json(value),
            server_data: None,
            bounds: None,
        }
    }
}

/// A failed tool call: the error and, when known, how the planner should react.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolFailure {
    /// What went wrong.
    pub error: ToolError,
    /// Guidance for the planner.
    pub retry_hint: Option<RetryHint>,
}

impl From<ToolError> for ToolFailure {
    fn from(error: ToolError) -> Self {
        Self {
            error,
            retry_hint: None,
        }
    }
}
