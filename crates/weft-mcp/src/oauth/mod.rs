//! OAuth 2.1 for remote (streamable HTTP) MCP servers: discovery from the
//! server's 401 (RFC 9728, RFC 8414), dynamic client registration
//! (RFC 7591), the authorization code with PKCE and resource indicators
//! (RFC 8707) through a loopback callback, durable owner-only token files,
//! refresh before expiry, and a new authorization when a refresh is refused.
//!
//! - [`config`]: [`OAuthConfig`], the presenter of the authorization URL, the clock.
//! - [`error`]: [`OAuthFlowError`], one variant per step.
//! - `store`: the token file of one server.
//! - `callback`: the loopback listener receiving `code` and `state`.
//! - `flow`: the authorization itself, on rmcp's `AuthorizationManager`.
//! - [`session`]: [`OAuthSession`], one toolset's tokens and their refresh.
//! - [`http`]: [`BearerClient`], the MCP HTTP client signing requests.

mod callback;
pub mod config;
pub mod error;
mod flow;
pub mod http;
pub mod session;
mod store;

pub use config::{
    AuthorizationPresenter, AuthorizationPrompt, Clock, OAuthConfig, StderrPresenter, SystemClock,
};
pub use error::OAuthFlowError;
pub use http::BearerClient;
pub use session::OAuthSession;
