//! Optional toolset capabilities (lifecycle, instructions, public description,
//! tool-list changes, elicitation, OAuth) and the lookup that finds them
//! through wrapper layers.
//!
//! A toolset advertises a capability by overriding the matching provided
//! method of [`ToolSet`](crate::ToolSet) (for example [`ToolSet::lifecycle`](crate::ToolSet::lifecycle)). A wrapper
//! toolset exposes the toolset it wraps through [`ToolSet::inner`](crate::ToolSet::inner); the
//! lookup functions ([`find_capability`], [`find_lifecycle`], ...) ask the
//! outermost layer first and then walk inwards, like Go's `errors.As`. A
//! wrapper that wants to intercept a capability simply answers for it.

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use tokio::sync::watch;
pub use weft_core::elicitation::{ElicitationRequest, ElicitationResponse};
use weft_core::tool::ToolError;

/// How many wrapper layers the lookup walks before giving up; guards against
/// a wrapper that (wrongly) names itself as its own inner toolset.
pub const MAX_WRAPPER_DEPTH: usize = 64;

/// Start/stop lifecycle of a toolset (connect to an MCP server, spawn a process, ...).
#[async_trait]
pub trait Lifecycle: Send + Sync {
    /// Brings the toolset up; called before its first use and again after a failed start.
    async fn start(&self) -> Result<(), ToolError>;

    /// Shuts the toolset down; a later use starts it again.
    async fn stop(&self) -> Result<(), ToolError>;
}

/// Text a toolset wants in the system prompt (how to use its tools).
pub trait Instructions: Send + Sync {
    /// The instructions, as prompt text.
    fn instructions_text(&self) -> String;
}

/// A description of a toolset that is safe to show users: no secrets, tokens or URLs with credentials.
pub trait PublicDescription: Send + Sync {
    /// The description, for UIs and logs.
    fn public_description_text(&self) -> String;
}

/// Notifies subscribers when a toolset's list of tools changes.
pub trait ToolListChanges: Send + Sync {
    /// A receiver whose value (a change counter) moves each time the tool list changes.
    fn subscribe_tool_list(&self) -> watch::Receiver<u64>;
}

/// Installs the handler a toolset calls when one of its tools needs input
/// from the user mid-call and the call's own [`weft_core::tool::Elicitor`]
/// (attached by the runtime to every request) is detached.
pub trait ElicitationSupport: Send + Sync {
    /// Sets (or replaces) the handler; `None` removes it, and elicitations are then declined.
    fn set_elicitation_handler(&self, handler: Option<Arc<dyn ElicitationHandler>>);
}

/// Obtains and refreshes an OAuth access token for a toolset's backend.
#[async_trait]
pub trait OAuthTokenSource: Send + Sync {
    /// A currently valid token, obtaining one if needed.
    async fn token(&self) -> Result<OAuthToken, OAuthError>;

    /// Forces a refresh (for example after the backend answered 401).
    async fn refresh(&self) -> Result<OAuthToken, OAuthError>;
}

/// Answers a tool's request for input from the user (implemented by the runtime).
#[async_trait]
pub trait ElicitationHandler: Send + Sync {
    /// Asks the user; resolves when they answer, decline or cancel.
    async fn elicit(&self, request: ElicitationRequest) -> Result<ElicitationResponse, ToolError>;
}

/// An OAuth access token. Its `Debug` output hides the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct OAuthToken {
    /// The bearer token.
    pub access_token: String,
    /// When the token stops being valid, when known.
    pub expires_at: Option<SystemTime>,
    /// The scopes granted.
    pub scopes: Vec<String>,
}

impl fmt::Debug for OAuthToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthToken")
            .field("access_token", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .finish()
    }
}

/// Why a token could not be obtained.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthError {
    /// A human has to authorize first, at this URL.
    #[error("authorization required at {authorization_url}")]
    AuthorizationRequired {
        /// Where the user authorizes access.
        authorization_url: String,
    },
    /// The refresh token was rejected or has expired.
    #[error("the refresh token was rejected: {0}")]
    RefreshRejected(String),
    /// The authorization server could not be reached or answered badly.
    #[error("authorization server error: {0}")]
    Server(String),
}

/// A small helper that implements [`ToolListChanges`] for toolsets: call
/// [`ToolListNotifier::notify`] when the tool list changed.
#[derive(Debug)]
pub struct ToolListNotifier {
    sender: watch::Sender<u64>,
}

impl ToolListNotifier {
    /// A notifier whose counter starts at zero.
    pub fn new() -> Self {
        Self {
            sender: watch::Sender::new(0),
        }
    }

    /// Tells every subscriber that the tool list changed.
    pub fn notify(&self) {
        self.sender.send_modify(|n| *n = n.wrapping_add(1));
    }
}

impl Default for ToolListNotifier {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolListChanges for ToolListNotifier {
    fn subscribe_tool_list(&self) -> watch::Receiver<u64> {
        self.sender.subscribe()
    }
}

mod lookup;

pub use lookup::{
    find_capability, find_elicitation, find_instructions, find_lifecycle, find_oauth,
    find_public_description, find_tool_list_changes,
};

#[cfg(test)]
mod tests;
