//! The OAuth 2.1 authorization of one MCP server, on rmcp's
//! [`AuthorizationManager`]: protected-resource metadata (RFC 9728) from the
//! server's 401 challenge, authorization-server metadata (RFC 8414), dynamic
//! client registration (RFC 7591), the authorization code with PKCE (S256)
//! and the `resource` indicator (RFC 8707) through the loopback callback,
//! then the token, saved in the server's [`TokenStore`]. Also the manager a
//! stored token is refreshed with.

use rmcp::transport::auth::{AuthError, AuthorizationManager, AuthorizationMetadataSource};
use rmcp_reqwest::Url;

use super::callback::CallbackListener;
use super::config::{AuthorizationPrompt, OAuthConfig};
use super::error::OAuthFlowError;
use super::store::{Context, TokenStore};
use crate::tls::install_crypto_provider;

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

/// Runs the full authorization from the server's `WWW-Authenticate`
/// `challenge` (or well-known discovery without one). On success the token
/// is stored and the returned manager can refresh it.
pub(crate) async fn authorize(
    input: &FlowInput<'_>,
    challenge: Option<&str>,
) -> Result<AuthorizationManager, OAuthFlowError> {
    let config = input.config;
    let step = config.step_timeout;
    let mut manager = new_manager(input.resource, input.store).await?;

    let resolution = OAuthFlowError::timed("metadata discovery", step, async {
        manager
            .resolve_metadata_from_challenge(challenge)
            .await
            .map_err(|e| OAuthFlowError::metadata(e.to_string()))
    })
    .await?;
    if resolution.source == AuthorizationMetadataSource::LegacyEndpointFallback {
        return Err(OAuthFlowError::metadata(
            "the server publishes no usable protected-resource or authorization-server metadata",
        ));
    }
    manager.set_metadata(resolution.metadata.clone());
    input.store.set_context(Context {
        challenge: challenge.map(str::to_owned),
        metadata: Some(resolution.metadata),
    });

    let listener = CallbackListener::bind(config.redirect_port).await?;
    let scopes = if config.scopes.is_empty() {
        manager.select_initial_scopes(&[]).await
    } else {
        config.scopes.clone()
    };
    let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
    let redirect_uri = listener.redirect_uri().to_owned();
    OAuthFlowError::timed("client registration", step, async {
        manager
            .register_client(&config.client_name, &redirect_uri, &scopes)
            .await
            .map_err(registration_error)
    })
    .await?;

    let url = manager.get_authorization_url(&scopes).await.map_err(|e| {
        OAuthFlowError::Authorization {
            message: e.to_string(),
        }
    })?;
    let state = Url::parse(&url)
        .ok()
        .and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == "state")
                .map(|(_, v)| v.into_owned())
        })
        .ok_or_else(|| OAuthFlowError::Authorization {
            message: "the authorization URL carries no `state`".to_owned(),
        })?;
    config.open.present(&AuthorizationPrompt {
        toolset: input.toolset.to_owned(),
        server: input.server.to_owned(),
        url,
    });
    let code = listener.code(&state, config.authorize_timeout).await?;

    OAuthFlowError::timed("token request", step, async {
        manager
            .exchange_code_for_token(&code, &state)
            .await
            .map_err(|e| match e {
                AuthError::CredentialStoreError(message) => OAuthFlowError::Store { message },
                other => OAuthFlowError::TokenExchange {
                    message: other.to_string(),
                },
            })
    })
    .await?;
    tracing::info!(toolset = %input.toolset, server = %input.server, "OAuth authorization complete");
    Ok(manager)
}

/// A manager for refreshing the stored token of `client_id`, with the stored metadata.
pub(crate) async fn resume(
    input: &FlowInput<'_>,
    client_id: &str,
) -> Result<AuthorizationManager, OAuthFlowError> {
    let mut manager = new_manager(input.resource, input.store).await?;
    let metadata = input.store.context().metadata.ok_or_else(|| {
        OAuthFlowError::metadata("the token file keeps no authorization-server metadata")
    })?;
    manager.set_metadata(metadata);
    manager
        .configure_client_id(client_id)
        .map_err(|e| OAuthFlowError::metadata(e.to_string()))?;
    Ok(manager)
}

async fn new_manager(
    resource: &str,
    store: &TokenStore,
) -> Result<AuthorizationManager, OAuthFlowError> {
    install_crypto_provider();
    let mut manager = AuthorizationManager::new(resource)
        .await
        .map_err(|e| OAuthFlowError::metadata(e.to_string()))?;
    manager.set_credential_store(store.clone());
    Ok(manager)
}

fn registration_error(e: AuthError) -> OAuthFlowError {
    match e {
        AuthError::PkceUnsupported | AuthError::InvalidScope(_) => OAuthFlowError::Authorization {
            message: e.to_string(),
        },
        other => OAuthFlowError::Registration {
            message: other.to_string(),
        },
    }
}
