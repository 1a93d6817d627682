//! SigV4 signing of Bedrock requests (`aws-sigv4`): the method, the URL,
//! the `content-type` and `accept` headers and the body's hash, scoped to
//! the region and the `bedrock` service, at the time of each attempt.

use std::time::SystemTime;

use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use weft_core::model::ModelError;

use super::credentials::Credentials;

/// The signing name of the Bedrock runtime.
pub const SERVICE: &str = "bedrock";

/// The headers of a POST of `body` to `url`: `content-type`, `accept` and
/// the signature's (`authorization`, `x-amz-date`, and
/// `x-amz-security-token` for temporary credentials).
pub(crate) fn signed_headers(
    creds: &Credentials,
    region: &str,
    url: &str,
    accept: &'static str,
    body: &[u8],
    time: SystemTime,
) -> Result<HeaderMap, ModelError> {
    let failed = |e: &dyn std::fmt::Display| ModelError::Config {
        message: format!("cannot sign the Bedrock request: {e}"),
    };
    let identity = aws_credential_types::Credentials::new(
        creds.access_key_id.clone(),
        creds.secret_access_key.clone(),
        creds.session_token.clone(),
        creds.expires,
        "weft",
    )
    .into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(SERVICE)
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| failed(&e))?
        .into();
    let plain = [("content-type", "application/json"), ("accept", accept)];
    let request = SignableRequest::new(
        "POST",
        url,
        plain.iter().copied(),
        SignableBody::Bytes(body),
    )
    .map_err(|e| failed(&e))?;
    let (instructions, _signature) = sign(request, &params).map_err(|e| failed(&e))?.into_parts();
    let mut headers = HeaderMap::new();
    for (name, value) in plain {
        headers.insert(name, HeaderValue::from_static(value));
    }
    for (name, value) in instructions.headers() {
        let mut value = HeaderValue::from_str(value).map_err(|e| failed(&e))?;
        if name != "x-amz-date" {
            value.set_sensitive(true);
        }
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| failed(&e))?;
        headers.insert(name, value);
    }
    Ok(headers)
}
