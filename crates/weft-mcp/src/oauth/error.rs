//! [`OAuthFlowError`]: why authorizing with an MCP server failed, one variant
//! per step. Messages carry the server's reason, never a token.

use std::time::Duration;

/// A failed OAuth step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthFlowError {
    /// Protected-resource or authorization-server metadata is missing, malformed or unusable.
    #[error("unusable OAuth metadata: {message}")]
    Metadata {
        /// What was wrong.
        message: String,
    },
    /// Dynamic client registration was refused or answered badly.
    #[error("client registration refused: {message}")]
    Registration {
        /// The server's reason.
        message: String,
    },
    /// The authorization request could not be built (for example no PKCE S256 support).
    #[error("cannot start authorization: {message}")]
    Authorization {
        /// Why.
        message: String,
    },
    /// The loopback callback could not be served.
    #[error("authorization callback: {message}")]
    Callback {
        /// Why.
        message: String,
    },
    /// The callback's `state` is not the one sent; the response is not ours.
    #[error("the authorization callback carried a wrong `state`")]
    StateMismatch,
    /// The authorization server redirected back with an error (the human refused, ...).
    #[error("authorization denied: {error}")]
    Denied {
        /// The `error` (and description) of the redirect.
        error: String,
    },
    /// The human refused to authorize when asked (declined or cancelled).
    #[error(
        "the authorization was refused: the human chose `{action}` when asked to open the authorization URL"
    )]
    Refused {
        /// How they refused.
        action: weft_core::elicitation::ElicitationAction,
    },
    /// The token endpoint refused the authorization code or answered badly.
    #[error("token request failed: {message}")]
    TokenExchange {
        /// The server's reason.
        message: String,
    },
    /// The refresh token was refused; a new authorization is needed.
    #[error("token refresh refused: {message}")]
    RefreshRejected {
        /// The server's reason.
        message: String,
    },
    /// Refreshing failed for a reason that may pass (network, server error).
    #[error("token refresh failed: {message}")]
    Refresh {
        /// Why.
        message: String,
    },
    /// The token file could not be read or written.
    #[error("token store: {message}")]
    Store {
        /// Why.
        message: String,
    },
    /// The client id, secret or private key is missing, unreadable or refused.
    #[error("client credentials: {message}")]
    Credentials {
        /// What was wrong.
        message: String,
    },
    /// The server still answers 403 `insufficient_scope` after authorizing
    /// again with the scopes it asked for.
    #[error("the server requires the scopes `{}`, and the token granted for them is still refused", scopes.join(" "))]
    InsufficientScope {
        /// The scopes the server's last challenge names.
        scopes: Vec<String>,
    },
    /// A step took longer than its timeout.
    #[error("{step} did not finish within {} ms", after.as_millis())]
    Timeout {
        /// The step.
        step: String,
        /// The timeout.
        after: Duration,
    },
}

impl OAuthFlowError {
    /// A metadata error.
    pub(crate) fn metadata(message: impl ToString) -> Self {
        Self::Metadata {
            message: message.to_string(),
        }
    }

    /// A credentials error.
    pub(crate) fn credentials(message: impl ToString) -> Self {
        Self::Credentials {
            message: message.to_string(),
        }
    }

    /// A store error.
    pub(crate) fn store(message: impl ToString) -> Self {
        Self::Store {
            message: message.to_string(),
        }
    }

    /// Runs `step` under `after`, naming it on timeout.
    pub(crate) async fn timed<T>(
        step: &str,
        after: Duration,
        work: impl Future<Output = Result<T, Self>>,
    ) -> Result<T, Self> {
        tokio::time::timeout(after, work)
            .await
            .map_err(|_| Self::Timeout {
                step: step.to_owned(),
                after,
            })?
    }
}
