//! STS `AssumeRoleWithWebIdentity`: a web identity token (an OIDC token in
//! a file) exchanged for temporary AWS credentials. The call is unsigned: a
//! form-encoded POST to the STS endpoint, answered in XML, which is read
//! with a small bounded parser (the few elements needed, entities
//! unescaped) rather than an XML library.

use std::time::{Duration, SystemTime};

use weft_core::model::ModelError;

use super::credentials::{Credentials, WebIdentity};
use crate::http::one_line;

/// The largest STS answer read.
const MAX_BODY: usize = 64 * 1024;
/// The largest token file read.
const MAX_TOKEN: u64 = 64 * 1024;
/// How long the exchange may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Exchanges the token in `web.token_file` for credentials of `web.role_arn`.
pub(crate) async fn assume_role_with_web_identity(
    http: &reqwest::Client,
    web: &WebIdentity,
) -> Result<Credentials, ModelError> {
    let token = read_token(web)?;
    let mut form = reqwest::Url::parse("http://form.invalid/").map_err(|e| ModelError::Other {
        message: e.to_string(),
    })?;
    form.query_pairs_mut()
        .append_pair("Action", "AssumeRoleWithWebIdentity")
        .append_pair("Version", "2011-06-15")
        .append_pair("RoleArn", &web.role_arn)
        .append_pair("RoleSessionName", &web.session_name)
        .append_pair("WebIdentityToken", &token);
    let body = form.query().unwrap_or_default().to_owned();
    let url = format!("{}/", web.sts_url.trim_end_matches('/'));
    let send = http
        .post(&url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send();
    let failed = |message: String| ModelError::Connection {
        message: format!("AssumeRoleWithWebIdentity at {url}: {message}"),
    };
    let resp = tokio::time::timeout(TIMEOUT, send)
        .await
        .map_err(|_| failed(format!("no answer within {TIMEOUT:?}")))?
        .map_err(|e| failed(e.without_url().to_string()))?;
    let status = resp.status().as_u16();
    let text = tokio::time::timeout(TIMEOUT, read_bounded(resp))
        .await
        .map_err(|_| failed(format!("the answer took over {TIMEOUT:?}")))??;
    parse_response(status, &text)
}

fn read_token(web: &WebIdentity) -> Result<String, ModelError> {
    let unreadable = |e: &dyn std::fmt::Display| ModelError::Config {
        message: format!(
            "cannot read the web identity token file {}: {e}",
            web.token_file.display()
        ),
    };
    let meta = std::fs::metadata(&web.token_file).map_err(|e| unreadable(&e))?;
    if meta.len() > MAX_TOKEN {
        return Err(unreadable(&format!("larger than {MAX_TOKEN} bytes")));
    }
    let token = std::fs::read_to_string(&web.token_file).map_err(|e| unreadable(&e))?;
    let token = token.trim();
    if token.is_empty() {
        return Err(unreadable(&"it is empty"));
    }
    Ok(token.to_owned())
}

async fn read_bounded(mut resp: reqwest::Response) -> Result<String, ModelError> {
    let mut buf = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| ModelError::Truncated {
        message: format!("the STS answer was cut: {}", e.without_url()),
    })? {
        if buf.len() + chunk.len() > MAX_BODY {
            return Err(ModelError::Malformed {
                line: String::new(),
                message: format!("the STS answer is larger than {MAX_BODY} bytes"),
            });
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The credentials in an STS answer, or its error typed.
pub(crate) fn parse_response(status: u16, xml: &str) -> Result<Credentials, ModelError> {
    if !(200..300).contains(&status) {
        let code = element(xml, "Code").unwrap_or_default();
        let message = element(xml, "Message").unwrap_or_else(|| one_line(xml));
        return Err(ModelError::Http {
            status,
            retryable: status >= 500
                || matches!(code.as_str(), "IDPCommunicationError" | "Throttling"),
            error_type: (!code.is_empty()).then_some(code),
            message: format!("AssumeRoleWithWebIdentity: {message}"),
            retry_after: None,
        });
    }
    let need = |name: &str| {
        element(xml, name).ok_or_else(|| ModelError::Malformed {
            line: one_line(xml),
            message: format!("the AssumeRoleWithWebIdentity answer has no <{name}>"),
        })
    };
    let expiration = need("Expiration")?;
    Ok(Credentials {
        access_key_id: need("AccessKeyId")?,
        secret_access_key: need("SecretAccessKey")?,
        session_token: Some(need("SessionToken")?),
        expires: Some(parse_utc(&expiration).ok_or_else(|| ModelError::Malformed {
            line: expiration.clone(),
            message: "the credentials' Expiration is not an ISO 8601 UTC time".into(),
        })?),
    })
}

/// The text of the first `<name>` element of `xml` (no attributes),
/// with the predefined entities unescaped.
pub(crate) fn element(xml: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let start = xml.find(&open)? + open.len();
    let end = start + xml[start..].find(&format!("</{name}>"))?;
    let raw = xml[start..end].trim();
    Some(
        raw.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&"),
    )
}

/// An RFC 3339 time (STS's `Expiration`, `YYYY-MM-DDTHH:MM:SS[.fff]Z`).
pub(crate) fn parse_utc(s: &str) -> Option<SystemTime> {
    let at = chrono::DateTime::parse_from_rfc3339(s).ok()?;
    let secs = u64::try_from(at.timestamp()).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}
