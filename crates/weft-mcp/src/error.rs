//! [`McpError`]: everything that can go wrong talking to an MCP server, each
//! naming the toolset (and the tool, for calls), and its mapping to a
//! [`ToolError`] with a retry hint.

use std::time::Duration;

use weft_core::tool::{RetryHint, RetryReason, ToolError, ToolErrorCode, ToolIdent};
use weft_tools::ToolFailure;

use crate::oauth::OAuthFlowError;

/// A failure of an MCP toolset.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum McpError {
    /// The server process could not be spawned (missing binary, no permission).
    #[error("toolset `{toolset}`: cannot start {server}: {message}")]
    Spawn {
        /// The toolset.
        toolset: String,
        /// The command.
        server: String,
        /// Why.
        message: String,
    },
    /// The connection or the `initialize` handshake failed.
    #[error("toolset `{toolset}`: cannot connect to {server}: {message}")]
    Connect {
        /// The toolset.
        toolset: String,
        /// The command or URL.
        server: String,
        /// Why.
        message: String,
    },
    /// Authorizing with the server over OAuth failed.
    #[error("toolset `{toolset}`: OAuth with {server} failed: {source}")]
    OAuth {
        /// The toolset.
        toolset: String,
        /// The URL.
        server: String,
        /// The failed step.
        #[source]
        source: OAuthFlowError,
    },
    /// Starting took longer than the start timeout.
    #[error("toolset `{toolset}`: {server} did not start within {} ms", after.as_millis())]
    StartTimeout {
        /// The toolset.
        toolset: String,
        /// The command or URL.
        server: String,
        /// The timeout.
        after: Duration,
    },
    /// `tools/list` failed.
    #[error("toolset `{toolset}`: listing tools failed: {message}")]
    List {
        /// The toolset.
        toolset: String,
        /// Why.
        message: String,
    },
    /// The server offers two tools under one name.
    #[error("toolset `{toolset}`: the server lists tool `{tool}` twice")]
    DuplicateTool {
        /// The toolset.
        toolset: String,
        /// The tool.
        tool: String,
    },
    /// A tool's input schema is not a usable JSON Schema; the tool is not offered.
    #[error("toolset `{toolset}`, tool `{tool}`: invalid input schema: {message}")]
    InvalidSchema {
        /// The toolset.
        toolset: String,
        /// The tool.
        tool: String,
        /// Why.
        message: String,
    },
    /// The server does not (or no longer) offer this tool.
    #[error("toolset `{toolset}` has no tool `{tool}`")]
    UnknownTool {
        /// The toolset.
        toolset: String,
        /// The tool.
        tool: String,
    },
    /// The call took longer than the call timeout; it was cancelled on the server.
    #[error("toolset `{toolset}`, tool `{tool}`: no answer within {} ms", after.as_millis())]
    CallTimeout {
        /// The toolset.
        toolset: String,
        /// The tool.
        tool: String,
        /// The timeout.
        after: Duration,
    },
    /// The server went away during the call.
    #[error(
        "toolset `{toolset}`, tool `{tool}`: the server closed the connection during the call{detail}"
    )]
    Closed {
        /// The toolset.
        toolset: String,
        /// The tool.
        tool: String,
        /// What a stdio server printed last on stderr (`; its stderr ended
        /// with: …`), or nothing.
        detail: String,
    },
    /// The server died and is waiting out its restart backoff.
    #[error("toolset `{toolset}`, tool `{tool}`: the server is down; next restart in {} ms", retry_in.as_millis())]
    Restarting {
        /// The toolset.
        toolset: String,
        /// The tool.
        tool: String,
        /// Time left before the next restart attempt.
        retry_in: Duration,
    },
    /// The server answered with something that is not a valid result.
    #[error("toolset `{toolset}`, tool `{tool}`: malformed response: {message}")]
    Malformed {
        /// The toolset.
        toolset: String,
        /// The tool.
        tool: String,
        /// What was wrong.
        message: String,
    },
    /// The server answered the call with a JSON-RPC error.
    #[error("toolset `{toolset}`, tool `{tool}`: server error {code}: {message}")]
    Remote {
        /// The toolset.
        toolset: String,
        /// The tool.
        tool: String,
        /// The JSON-RPC error code.
        code: i32,
        /// The server's message.
        message: String,
    },
    /// The tool ran and reported a failure (`isError`).
    #[error("toolset `{toolset}`, tool `{tool}` failed: {message}")]
    ToolFailed {
        /// The toolset.
        toolset: String,
        /// The tool.
        tool: String,
        /// The tool's own text.
        message: String,
    },
}

/// The error code of a call whose tool reported `isError`.
pub const TOOL_FAILED: &str = "tool_failed";
/// The error code of a malformed server answer.
pub const MALFORMED: &str = "malformed_response";
/// The error code of a JSON-RPC error answer.
pub const SERVER_ERROR: &str = "server_error";

impl McpError {
    /// The machine-readable code of the matching [`ToolError`].
    pub fn code(&self) -> ToolErrorCode {
        match self {
            McpError::Spawn { .. }
            | McpError::Connect { .. }
            | McpError::OAuth { .. }
            | McpError::StartTimeout { .. }
            | McpError::List { .. }
            | McpError::Closed { .. }
            | McpError::Restarting { .. }
            | McpError::UnknownTool { .. } => ToolError::UNAVAILABLE,
            McpError::DuplicateTool { .. } | McpError::InvalidSchema { .. } => {
                ToolError::INVALID_ARGUMENTS
            }
            McpError::CallTimeout { .. } => ToolError::TIMEOUT,
            McpError::Malformed { .. } => MALFORMED.into(),
            McpError::Remote { .. } => SERVER_ERROR.into(),
            McpError::ToolFailed { .. } => TOOL_FAILED.into(),
        }
    }

    /// The failure as a [`ToolError`].
    pub fn to_tool_error(&self) -> ToolError {
        ToolError::new(self.code(), self.to_string())
    }

    /// The failure with the retry hint a planner should get for `tool`.
    pub fn into_failure(self, tool: &ToolIdent) -> ToolFailure {
        let reason = match &self {
            McpError::CallTimeout { .. } => Some(RetryReason::Timeout),
            McpError::Malformed { .. } => Some(RetryReason::MalformedResponse),
            McpError::Spawn { .. }
            | McpError::Connect { .. }
            | McpError::OAuth { .. }
            | McpError::StartTimeout { .. }
            | McpError::List { .. }
            | McpError::Closed { .. }
            | McpError::Restarting { .. }
            | McpError::UnknownTool { .. } => Some(RetryReason::ToolUnavailable),
            McpError::Remote { .. } | McpError::ToolFailed { .. } => None,
            McpError::DuplicateTool { .. } | McpError::InvalidSchema { .. } => {
                Some(RetryReason::InvalidArguments)
            }
        };
        ToolFailure {
            error: self.to_tool_error(),
            retry_hint: reason.map(|r| RetryHint::new(r).for_tool(tool.clone())),
        }
    }
}

impl From<McpError> for ToolError {
    fn from(e: McpError) -> Self {
        e.to_tool_error()
    }
}
