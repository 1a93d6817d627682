//! The OAuth 2.1 authorization of one MCP server, on rmcp's
//! [`AuthorizationManager`]: protected-resource metadata (RFC 9728) from the
//! server's 401 challenge, authorization-server metadata (RFC 8414), dynamic
//! client registration (RFC 7591) unless a client id is configured, the
//! authorization code with PKCE (S256)
//! and the `resource` indicator (RFC 8707) through the loopback callback,
//! then the token, saved in the server's [`TokenStore`]; or, without a user,
//! the client-credentials grant (see `super::credentials`). Servers of the
//! 2025-03-26 layout are found through `super::legacy`. Also the manager a
//! stored token is refreshed with.

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationMetadataSource,
    OAuthClientConfig,
};
use rmcp_reqwest::Url;

use super::callback::CallbackListener;
use super::config::AuthorizationPrompt;
use super::credentials::client_credentials;
use super::error::OAuthFlowError;
use super::identity::Grant;
pub(crate) use super::input::FlowInput;
use super::legacy;
use super::store::{Context, TokenStore};
use crate::tls::install_crypto_provider;

/// Runs the full authorization from the server's `WWW-Authenticate`
/// `challenge` (or well-known discovery without one), asking for `scopes`
/// (`None` for the configured ones, else the ones the server suggests). On
/// success the token is stored and the returned manager can refresh it.
pub(crate) async fn authorize(
    input: &FlowInput<'_>,
    challenge: Option<&str>,
    scopes: Option<&[String]>,
) -> Result<AuthorizationManager, OAuthFlowError> {
    let config = input.config;
    config.identity.validate()?;
    let step = config.step_timeout;
    let (mut manager, metadata) = discover(input, challenge).await?;
    let scopes = match scopes {
        Some(scopes) => scopes.to_vec(),
        None if config.scopes.is_empty() => manager.select_initial_scopes(&[]).await,
        None => config.scopes.clone(),
    };
    if config.identity.grant == Grant::ClientCredentials {
        client_credentials(input, &mut manager, &metadata, &scopes).await?;
        tracing::info!(toolset = %input.toolset, server = %input.server, "OAuth client credentials granted");
        return Ok(manager);
    }

    let listener = CallbackListener::bind(config.redirect_port).await?;
    let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
    let redirect_uri = listener.redirect_uri().to_owned();
    match &config.identity.client_id {
        Some(client_id) => {
            let mut client = OAuthClientConfig::new(client_id, &redirect_uri)
                .with_scopes(scopes.iter().map(|s| (*s).to_owned()).collect());
            if let Some(secret) = &config.identity.secret {
                client = client.with_client_secret(secret.read()?);
            }
            manager
                .configure_client(client)
                .map_err(|e| OAuthFlowError::credentials(e.to_string()))?;
        }
        None => {
            OAuthFlowError::timed("client registration", step, async {
                manager
                    .register_client(&config.client_name, &redirect_uri, &scopes)
                    .await
                    .map_err(registration_error)
            })
            .await?;
        }
    }

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
    let refusal = config.open.present(&AuthorizationPrompt {
        toolset: input.toolset.to_owned(),
        server: input.server.to_owned(),
        url,
    });
    // The question (if the presenter asked one) goes once the code is in.
    let code = tokio::select! {
        code = listener.code(&state, config.authorize_timeout) => code?,
        action = refusal => return Err(OAuthFlowError::Refused { action }),
    };

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

/// A manager with the authorization server's metadata, found from the
/// `challenge` (RFC 9728, RFC 8414) and kept in the store's context.
async fn discover(
    input: &FlowInput<'_>,
    challenge: Option<&str>,
) -> Result<(AuthorizationManager, AuthorizationMetadata), OAuthFlowError> {
    let mut manager = new_manager(input.resource, input.store).await?;
    let step = input.config.step_timeout;
    let resolved = OAuthFlowError::timed("metadata discovery", step, async {
        Ok(manager.resolve_metadata_from_challenge(challenge).await)
    })
    .await?;
    let unusable = || {
        OAuthFlowError::metadata(
            "the server publishes no usable protected-resource or authorization-server metadata",
        )
    };
    let metadata = match resolved {
        Ok(found) if found.source != AuthorizationMetadataSource::LegacyEndpointFallback => {
            found.metadata
        }
        // No metadata at all: the 2025-03-26 default endpoints, unless
        // something is published that did not parse.
        Ok(fallback) => {
            let published = OAuthFlowError::timed("metadata discovery", step, async {
                Ok(
                    legacy::publishes_resource_metadata(input.resource, step).await?
                        || legacy::origin_metadata(input.resource, step)
                            .await?
                            .is_some(),
                )
            })
            .await?;
            if published {
                return Err(unusable());
            }
            tracing::info!(toolset = %input.toolset, "no OAuth metadata; using the default endpoints");
            fallback.metadata
        }
        // The 2025-03-26 layout: metadata at the server's origin, its issuer under a path there.
        Err(e @ AuthError::AuthorizationServerMismatch { .. }) => {
            OAuthFlowError::timed("metadata discovery", step, async {
                if legacy::publishes_resource_metadata(input.resource, step).await? {
                    return Err(OAuthFlowError::metadata(e.to_string()));
                }
                legacy::origin_metadata(input.resource, step)
                    .await?
                    .ok_or_else(|| OAuthFlowError::metadata(e.to_string()))
            })
            .await?
        }
        Err(e) => return Err(OAuthFlowError::metadata(e.to_string())),
    };
    manager.set_metadata(metadata.clone());
    input.store.set_context(Context {
        challenge: challenge.map(str::to_owned),
        metadata: Some(metadata.clone()),
    });
    Ok((manager, metadata))
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
    let identity = &input.config.identity;
    match &identity.secret {
        // A pre-registered confidential client authenticates its refreshes too.
        Some(secret) if identity.client_id.as_deref() == Some(client_id) => {
            let client = OAuthClientConfig::new(client_id, input.resource)
                .with_client_secret(secret.read()?);
            manager.configure_client(client)
        }
        _ => manager.configure_client_id(client_id),
    }
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
