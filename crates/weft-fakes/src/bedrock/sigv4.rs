//! SigV4 as the Bedrock fake checks it: the request's signature recomputed
//! with `aws-sigv4` from the fake's one known key ([`ACCESS_KEY_ID`],
//! [`SECRET_ACCESS_KEY`], AWS's documented example key), over the headers
//! the request says it signed, its URL, its body and its `x-amz-date`;
//! any difference is refused with the 403 AWS answers.

use std::time::{Duration, SystemTime};

use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use axum::http::{HeaderMap, Uri};

use super::error;
use crate::Rejection;

/// The access key id the fake knows.
pub const ACCESS_KEY_ID: &str = "AKIDEXAMPLE";
/// Its secret.
pub const SECRET_ACCESS_KEY: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
/// The session token of the fake's temporary credentials (the same keys).
pub const SESSION_TOKEN: &str = "FwoGZXIvYXdzEFAKESESSIONTOKEN";
/// The region the fake serves.
pub const REGION: &str = "us-east-1";

/// The headers a client adds to sign a POST of `body` to `url` carrying
/// `headers`, at `time`, with the fake's key (and `token`, for temporary
/// credentials): `authorization`, `x-amz-date` (and `x-amz-security-token`).
pub fn sign_request(
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    time: SystemTime,
    secret: &str,
    token: Option<&str>,
) -> Vec<(String, String)> {
    let identity = aws_credential_types::Credentials::new(
        ACCESS_KEY_ID,
        secret,
        token.map(str::to_owned),
        None,
        "fake",
    )
    .into();
    let Ok(params) = v4::SigningParams::builder()
        .identity(&identity)
        .region(REGION)
        .name("bedrock")
        .time(time)
        .settings(SigningSettings::default())
        .build()
    else {
        return Vec::new();
    };
    let params = params.into();
    let Ok(request) = SignableRequest::new(
        "POST",
        url,
        headers.iter().copied(),
        SignableBody::Bytes(body),
    ) else {
        return Vec::new();
    };
    match sign(request, &params) {
        Ok(out) => out
            .output()
            .headers()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        Err(_) => Vec::new(),
    }
}

fn forbidden(kind: &'static str, message: &str) -> Rejection {
    error(403, kind, message)
}

/// Checks the request's SigV4 signature.
pub(crate) fn verify(headers: &HeaderMap, uri: &Uri, body: &[u8]) -> Result<(), Rejection> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let auth = get("authorization").ok_or_else(|| {
        forbidden(
            "MissingAuthenticationTokenException",
            "Missing Authentication Token",
        )
    })?;
    let incomplete = || {
        forbidden(
            "IncompleteSignatureException",
            &format!(
                "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters. Authorization={auth}"
            ),
        )
    };
    let fields = auth
        .strip_prefix("AWS4-HMAC-SHA256 ")
        .ok_or_else(incomplete)?;
    let field = |name: &str| {
        fields
            .split(',')
            .map(str::trim)
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
    };
    let (credential, signed, given) = match (
        field("Credential"),
        field("SignedHeaders"),
        field("Signature"),
    ) {
        (Some(c), Some(s), Some(g)) => (c, s, g),
        _ => return Err(incomplete()),
    };
    let scope: Vec<&str> = credential.split('/').collect();
    if scope.len() != 5 || scope[0] != ACCESS_KEY_ID {
        return Err(forbidden(
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
        ));
    }
    if scope[2] != REGION {
        return Err(forbidden(
            "InvalidSignatureException",
            &format!(
                "Credential should be scoped to a valid region, not '{}'. ",
                scope[2]
            ),
        ));
    }
    if scope[3] != "bedrock" {
        return Err(forbidden(
            "InvalidSignatureException",
            "Credential should be scoped to correct service: 'bedrock'. ",
        ));
    }
    let token = get("x-amz-security-token");
    if token.is_some_and(|t| t != SESSION_TOKEN) {
        return Err(forbidden(
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
        ));
    }
    let time = get("x-amz-date").and_then(parse_amz_date).ok_or_else(|| {
        forbidden(
            "IncompleteSignatureException",
            "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.",
        )
    })?;
    let host = get("host").unwrap_or_default();
    let url = format!(
        "http://{host}{}",
        uri.path_and_query().map_or("/", |p| p.as_str())
    );
    let signed_headers: Vec<(&str, &str)> = signed
        .split(';')
        .filter(|h| !matches!(*h, "x-amz-date" | "x-amz-security-token"))
        .map(|h| (h, get(h).unwrap_or_default()))
        .collect();
    let expected = sign_request(&url, &signed_headers, body, time, SECRET_ACCESS_KEY, token);
    let ours = expected
        .iter()
        .find(|(k, _)| k == "authorization")
        .and_then(|(_, v)| v.rsplit("Signature=").next());
    if ours != Some(given) {
        return Err(forbidden(
            "InvalidSignatureException",
            "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.",
        ));
    }
    Ok(())
}

/// `20150830T123600Z` as a time.
fn parse_amz_date(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (n(0..4)?, n(4..6)?, n(6..8)?);
    let (h, min, sec) = (n(9..11)?, n(11..13)?, n(13..15)?);
    // Days from the civil date (proleptic Gregorian).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    let secs = u64::try_from(days * 86_400 + h * 3600 + min * 60 + sec).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}
