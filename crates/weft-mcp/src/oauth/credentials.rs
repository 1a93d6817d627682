//! The client-credentials grant (OAuth 2.1 §4.2, the MCP client-credentials
//! extension): no user, the client authenticates as itself. With a client
//! secret, rmcp's exchange (`client_secret_basic` or `client_secret_post`,
//! as the server's metadata allows); with a private key, `private_key_jwt`:
//! an RFC 7523 client assertion signed here and sent in a token request
//! built here. Either way the token lands in the server's token store.

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use oauth2::TokenResponse;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, ClientCredentialsConfig,
    OAuthTokenResponse, StoredCredentials,
};

use super::error::OAuthFlowError;
use super::identity::PrivateKey;
use super::input::FlowInput;

/// The `client_assertion_type` of a JWT client assertion (RFC 7523 §2.2).
const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// How long an assertion is valid, in seconds.
const ASSERTION_LIFETIME_SECS: u64 = 300;
/// The largest token response read.
const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// Gets a token for the configured client (it has an id and a secret or key:
/// see [`super::identity::ClientIdentity::validate`]) and stores it.
pub(crate) async fn client_credentials(
    input: &FlowInput<'_>,
    manager: &mut AuthorizationManager,
    metadata: &AuthorizationMetadata,
    scopes: &[String],
) -> Result<(), OAuthFlowError> {
    let identity = &input.config.identity;
    let client_id = identity.client_id.clone().ok_or_else(|| {
        OAuthFlowError::credentials("the client_credentials grant needs a `client_id`")
    })?;
    let step = input.config.step_timeout;
    if let Some(key) = &identity.private_key {
        let token = OAuthFlowError::timed(
            "token request",
            step,
            jwt_exchange(input, metadata, &client_id, key, scopes),
        )
        .await?;
        let granted = token
            .scopes()
            .map(|s| s.iter().map(|s| s.to_string()).collect())
            .unwrap_or_else(|| scopes.to_vec());
        let credentials = StoredCredentials::new(client_id, Some(token), granted, None);
        return input.store.write(credentials).await;
    }
    let secret = identity
        .secret
        .as_ref()
        .ok_or_else(|| OAuthFlowError::credentials("no client secret or private key"))?;
    let config = ClientCredentialsConfig::ClientSecret {
        client_id,
        client_secret: secret.read()?,
        scopes: scopes.to_vec(),
        resource: Some(input.resource.to_owned()),
    };
    manager
        .validate_client_credentials_metadata(&config)
        .and_then(|()| manager.configure_client_credentials(&config))
        .map_err(|e| OAuthFlowError::credentials(e.to_string()))?;
    OAuthFlowError::timed("token request", step, async {
        manager
            .exchange_client_credentials(&config)
            .await
            .map(drop)
            .map_err(|e| match e {
                AuthError::CredentialStoreError(message) => OAuthFlowError::Store { message },
                other => OAuthFlowError::TokenExchange {
                    message: other.to_string(),
                },
            })
    })
    .await
}

/// The token request of `private_key_jwt`: the client is identified by the
/// assertion alone (RFC 7523 §3), so the body carries no `client_id`.
async fn jwt_exchange(
    input: &FlowInput<'_>,
    metadata: &AuthorizationMetadata,
    client_id: &str,
    key: &PrivateKey,
    scopes: &[String],
) -> Result<OAuthTokenResponse, OAuthFlowError> {
    let assertion = assertion(input, metadata, client_id, key)?;
    let mut form = vec![
        ("grant_type", "client_credentials".to_owned()),
        ("client_assertion_type", JWT_BEARER.to_owned()),
        ("client_assertion", assertion),
        ("resource", input.resource.to_owned()),
    ];
    if !scopes.is_empty() {
        form.push(("scope", scopes.join(" ")));
    }
    let exchange_error = |message: String| OAuthFlowError::TokenExchange { message };
    let http = super::legacy::http_client(input.config.step_timeout)?;
    let body = form_body(&form);
    let response = http
        .post(&metadata.token_endpoint)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| exchange_error(e.to_string()))?;
    let status = response.status();
    let bytes = response
        .bytes()
        .await
        .map_err(|e| exchange_error(e.to_string()))?;
    let bytes = &bytes[..bytes.len().min(MAX_RESPONSE_BYTES)];
    if !status.is_success() {
        let reason = serde_json::from_slice::<serde_json::Value>(bytes)
            .ok()
            .and_then(|v| {
                let error = v.get("error")?.as_str()?.to_owned();
                Some(match v.get("error_description").and_then(|d| d.as_str()) {
                    Some(description) => format!("{error}: {description}"),
                    None => error,
                })
            })
            .unwrap_or_else(|| format!("HTTP {status}"));
        return Err(exchange_error(reason));
    }
    serde_json::from_slice(bytes).map_err(|e| exchange_error(format!("the token response: {e}")))
}

/// The signed client assertion: `iss` and `sub` the client id, `aud` the
/// authorization server's issuer (else its token endpoint), a short life
/// and a random `jti`.
fn assertion(
    input: &FlowInput<'_>,
    metadata: &AuthorizationMetadata,
    client_id: &str,
    key: &PrivateKey,
) -> Result<String, OAuthFlowError> {
    let algorithm = signing_algorithm(key, metadata)?;
    let pem = key.read_pem()?;
    let bad_key = |e: jsonwebtoken::errors::Error| {
        OAuthFlowError::credentials(format!(
            "private key {} for {algorithm:?}: {e}",
            key.file.display()
        ))
    };
    let encoding_key = match algorithm {
        Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem.as_bytes()),
        Algorithm::EdDSA => EncodingKey::from_ed_pem(pem.as_bytes()),
        _ => EncodingKey::from_rsa_pem(pem.as_bytes()),
    }
    .map_err(bad_key)?;
    let now = input.config.clock.now().as_millis() / 1_000;
    let audience = metadata
        .issuer
        .as_deref()
        .unwrap_or(&metadata.token_endpoint);
    let claims = serde_json::json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + ASSERTION_LIFETIME_SECS,
        "jti": oauth2::CsrfToken::new_random().secret(),
    });
    install_jwt_provider();
    jsonwebtoken::encode(&Header::new(algorithm), &claims, &encoding_key).map_err(bad_key)
}

/// The configured algorithm, else the first the server lists that weft
/// signs with, else ES256; one the server does not list is an error.
fn signing_algorithm(
    key: &PrivateKey,
    metadata: &AuthorizationMetadata,
) -> Result<Algorithm, OAuthFlowError> {
    let listed: Option<Vec<String>> = metadata
        .additional_fields
        .get("token_endpoint_auth_signing_alg_values_supported")
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        });
    let asymmetric = |name: &str| name.parse::<Algorithm>().ok().filter(|a| !is_hmac(*a));
    let name = match (&key.algorithm, &listed) {
        (Some(name), _) => name.clone(),
        (None, Some(listed)) => listed
            .iter()
            .find(|n| asymmetric(n).is_some())
            .cloned()
            .ok_or_else(|| {
                OAuthFlowError::credentials(format!(
                    "the server lists no signing algorithm weft supports: {listed:?}"
                ))
            })?,
        (None, None) => "ES256".to_owned(),
    };
    let algorithm = asymmetric(&name).ok_or_else(|| {
        OAuthFlowError::credentials(format!("unsupported signing algorithm `{name}`"))
    })?;
    if let Some(listed) = listed
        && !listed.contains(&name)
    {
        return Err(OAuthFlowError::credentials(format!(
            "the server does not accept `{name}` assertions (it lists {listed:?})"
        )));
    }
    Ok(algorithm)
}

fn is_hmac(algorithm: Algorithm) -> bool {
    matches!(
        algorithm,
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
    )
}

/// Makes the pure-Rust backend the JWT signer, unless one is installed.
fn install_jwt_provider() {
    if jsonwebtoken::crypto::CryptoProvider::try_get_default().is_none() {
        let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
    }
}

/// `application/x-www-form-urlencoded` of `pairs`.
fn form_body(pairs: &[(&str, String)]) -> String {
    oauth2::url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())))
        .finish()
}
