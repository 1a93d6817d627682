//! The [`ToolSet`] trait: a named group of tools with one lifecycle, and the
//! reply types a tool call produces.

use async_trait::async_trait;
use serde_json::Value;
use weft_core::tool::{Bounds, RetryHint, ToolError, ToolRequest, ToolResultBody, ToolSpec};

use crate::capability::{
    ElicitationSupport, Instructions, Lifecycle, OAuthTokenSource, PublicDescription,
    ToolListChanges,
};

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

    /// The toolset this one wraps, for wrapper layers; capability lookups
    /// ([`crate::capability::find_capability`]) continue there.
    fn inner(&self) -> Option<&dyn ToolSet> {
        None
    }

    /// This layer's start/stop lifecycle, if it has one.
    fn lifecycle(&self) -> Option<&dyn Lifecycle> {
        None
    }

    /// This layer's system-prompt instructions, if it has any.
    fn instructions(&self) -> Option<&dyn Instructions> {
        None
    }

    /// This layer's user-safe description, if it has one.
    fn public_description(&self) -> Option<&dyn PublicDescription> {
        None
    }

    /// This layer's tool-list change notifications, if it sends any.
    fn tool_list_changes(&self) -> Option<&dyn ToolListChanges> {
        None
    }

    /// This layer's elicitation support, if its tools can ask the user for input.
    fn elicitation(&self) -> Option<&dyn ElicitationSupport> {
        None
    }

    /// Whether this toolset's calls may run as long as the run's time
    /// budget allows, instead of the agent's per-call tool timeout (agents
    /// called as tools, whose child runs have caps of their own and may wait
    /// on humans).
    fn bounded_by_run_budget(&self) -> bool {
        false
    }

    /// This layer's OAuth token source, if its backend needs one.
    fn oauth(&self) -> Option<&dyn OAuthTokenSource> {
        None
    }
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
