//! The toolset's OAuth link: the [`OAuthSession`] and the [`BearerClient`]
//! built from an HTTP config's `oauth` section, the step that gets a
//! connection ready (refresh, or a new authorization), and the OAuth
//! failure behind a failed request.

use std::sync::Arc;

use crate::config::{McpConfig, Transport};
use crate::error::McpError;
use crate::oauth::{BearerClient, OAuthFlowError, OAuthSession};
use crate::tls::install_crypto_provider;

/// An OAuth-enabled toolset's session and HTTP client.
pub(crate) struct OAuthLink {
    pub session: Arc<OAuthSession>,
    pub client: BearerClient,
}

/// The link for `config`: none without an `oauth` section or for a stdio server.
pub(crate) fn link(config: &McpConfig) -> Result<Option<OAuthLink>, McpError> {
    let (Some(oauth), Transport::Http { url, .. }) = (&config.oauth, &config.transport) else {
        return Ok(None);
    };
    let server = config.transport.describe();
    let error = |source| oauth_error(config, source);
    let session = OAuthSession::new(&config.name, &server, url, oauth.clone()).map_err(error)?;
    install_crypto_provider();
    // The token never follows a redirect, and a dead server does not hold a connect forever.
    let http = rmcp_reqwest::Client::builder()
        .redirect(rmcp_reqwest::redirect::Policy::none())
        .connect_timeout(oauth.step_timeout)
        .build()
        .map_err(|e| {
            error(OAuthFlowError::Authorization {
                message: format!("HTTP client: {e}"),
            })
        })?;
    let session = Arc::new(session);
    Ok(Some(OAuthLink {
        client: BearerClient::new(http, session.clone()),
        session,
    }))
}

/// `source` as the toolset's error.
pub(crate) fn oauth_error(config: &McpConfig, source: OAuthFlowError) -> McpError {
    McpError::OAuth {
        toolset: config.name.clone(),
        server: config.transport.describe(),
        source,
    }
}

impl super::McpToolSet {
    /// `error`, or the OAuth failure behind it: a scope step-up that failed
    /// ends the request with a transport error, which says less.
    pub(crate) fn oauth_failure(&self, error: McpError) -> McpError {
        match &self.oauth {
            Ok(Some(link)) => match link.client.take_failure() {
                Some(failure) => oauth_error(&self.config, failure),
                None => error,
            },
            _ => error,
        }
    }
}
