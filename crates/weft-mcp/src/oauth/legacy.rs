//! The 2025-03-26 MCP authorization layout, for servers that publish no
//! protected-resource metadata (RFC 9728): the authorization server's
//! metadata at the MCP server's origin, whose issuer may sit under a path
//! there; and, with no metadata at all, the default `/authorize`, `/token`
//! and `/register` endpoints at that origin. Used only when no
//! protected-resource metadata is published, and only with an authorization
//! server on the MCP server's own origin. Also the plain HTTP client the
//! OAuth steps weft makes itself use.

use std::time::Duration;

use rmcp::transport::auth::AuthorizationMetadata;
use rmcp_reqwest::Url;

use super::error::OAuthFlowError;

/// The largest metadata document read.
const MAX_METADATA_BYTES: usize = 256 * 1024;

/// An HTTP client for one OAuth step: no redirects, bounded by `step`.
pub(crate) fn http_client(step: Duration) -> Result<rmcp_reqwest::Client, OAuthFlowError> {
    crate::tls::install_crypto_provider();
    rmcp_reqwest::Client::builder()
        .redirect(rmcp_reqwest::redirect::Policy::none())
        .timeout(step)
        .build()
        .map_err(|e| OAuthFlowError::metadata(format!("HTTP client: {e}")))
}

/// Whether the MCP server at `resource` publishes protected-resource
/// metadata (or anything at its well-known locations).
pub(crate) async fn publishes_resource_metadata(
    resource: &str,
    step: Duration,
) -> Result<bool, OAuthFlowError> {
    let url = parse(resource)?;
    let path = url.path().trim_end_matches('/');
    let mut candidates = vec![well_known(&url, "/.well-known/oauth-protected-resource")];
    if !path.is_empty() {
        candidates.push(well_known(
            &url,
            &format!("/.well-known/oauth-protected-resource{path}"),
        ));
    }
    let http = http_client(step)?;
    for candidate in candidates {
        if fetch(&http, &candidate).await?.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The authorization server metadata at the origin of `resource`, when
/// published there; its issuer and endpoints must be on that origin.
pub(crate) async fn origin_metadata(
    resource: &str,
    step: Duration,
) -> Result<Option<AuthorizationMetadata>, OAuthFlowError> {
    let url = parse(resource)?;
    let location = well_known(&url, "/.well-known/oauth-authorization-server");
    let Some(body) = fetch(&http_client(step)?, &location).await? else {
        return Ok(None);
    };
    let metadata: AuthorizationMetadata = serde_json::from_slice(&body)
        .map_err(|e| OAuthFlowError::metadata(format!("{location}: {e}")))?;
    let issuer = metadata.issuer.as_deref().unwrap_or_default();
    let on_origin = [
        issuer,
        &metadata.authorization_endpoint,
        &metadata.token_endpoint,
    ]
    .into_iter()
    .chain(metadata.registration_endpoint.as_deref())
    .all(|u| Url::parse(u).is_ok_and(|u| u.origin() == url.origin()));
    if !on_origin {
        return Err(OAuthFlowError::metadata(format!(
            "{location} names an issuer or endpoints off the MCP server's origin"
        )));
    }
    Ok(Some(metadata))
}

fn parse(resource: &str) -> Result<Url, OAuthFlowError> {
    Url::parse(resource).map_err(|e| OAuthFlowError::metadata(format!("the server URL: {e}")))
}

fn well_known(url: &Url, path: &str) -> String {
    let mut url = url.clone();
    url.set_path(path);
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}

/// The body of a 200 answer to GET `url`; `None` for any other status.
async fn fetch(http: &rmcp_reqwest::Client, url: &str) -> Result<Option<Vec<u8>>, OAuthFlowError> {
    let response = http
        .get(url)
        .header("accept", "application/json")
        .send()
        .await
        .map_err(|e| OAuthFlowError::metadata(format!("{url}: {e}")))?;
    if response.status() != rmcp_reqwest::StatusCode::OK {
        return Ok(None);
    }
    let body = response
        .bytes()
        .await
        .map_err(|e| OAuthFlowError::metadata(format!("{url}: {e}")))?;
    Ok(Some(body[..body.len().min(MAX_METADATA_BYTES)].to_vec()))
}
