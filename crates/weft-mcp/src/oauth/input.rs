//! [`FlowInput`]: what one authorization works with (the toolset, the
//! server, its settings and where the tokens go), shared by the
//! authorization-code flow and the client-credentials grant.

use super::config::OAuthConfig;
use super::store::TokenStore;

/// Who is authorizing, with what.
pub(crate) struct FlowInput<'a> {
    /// The toolset, for the prompt.
    pub toolset: &'a str,
    /// The server as shown in messages.
    pub server: &'a str,
    /// The MCP server URL (the protected resource).
    pub resource: &'a str,
    /// The OAuth settings.
    pub config: &'a OAuthConfig,
    /// Where the tokens go.
    pub store: &'a TokenStore,
}
