//! OAuth 2.1 for remote (streamable HTTP) MCP servers: discovery from the
//! server's 401 (RFC 9728, RFC 8414), dynamic client registration
//! (RFC 7591), the authorization code with PKCE and resource indicators
//! (RFC 8707) through a loopback callback, pre-registered clients, the
//! client-credentials grant (with `private_key_jwt`, RFC 7523), scope
//! step-up on a 403 `insufficient_scope`, durable owner-only token files,
//! refresh before expiry, and a new authorization when a refresh is refused.
//!
//! - [`config`]: [`OAuthConfig`], the presenter of the authorization URL, the clock.
//! - [`ask`]: [`CallPresenter`], the URL asked of the run whose call needs it.
//! - [`error`]: [`OAuthFlowError`], one variant per step.
//! - [`identity`]: the grant, a pre-registered client id, its secret or key.
//! - `credentials`: the client-credentials grant and `private_key_jwt`.
//! - `store`: the token file of one server.
//! - `callback`: the loopback listener receiving `code` and `state`.
//! - `input`: what one authorization works with.
//! - `flow`: the authorization itself, on rmcp's `AuthorizationManager`.
//! - `legacy`: discovery for servers of the 2025-03-26 layout.
//! - [`session`]: [`OAuthSession`], one toolset's tokens and their refresh.
//! - [`http`]: [`BearerClient`], the MCP HTTP client signing requests.

pub mod ask;
mod callback;
pub mod config;
mod credentials;
pub mod error;
mod flow;
pub mod http;
pub mod identity;
mod input;
mod legacy;
pub mod session;
mod store;

pub use ask::CallPresenter;
pub use config::{
    AuthorizationPresenter, AuthorizationPrompt, OAuthConfig, Refusal, StderrPresenter,
    never_refused,
};
pub use error::OAuthFlowError;
pub use http::BearerClient;
pub use identity::{ClientIdentity, Grant, PrivateKey, SecretSource};
pub use session::OAuthSession;
/// Token expiry reads weft's one clock.
pub use weft_core::time::{Clock, SystemClock};
