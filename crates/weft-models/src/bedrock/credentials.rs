//! AWS credentials and region from the standard chain, as the AWS SDKs
//! look for them, first found wins:
//!
//! 1. The environment: `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`
//!    (and `AWS_SESSION_TOKEN`).
//! 2. The shared files' profile (`AWS_PROFILE`, else `default`): keys in
//!    `~/.aws/credentials` (`AWS_SHARED_CREDENTIALS_FILE`) or
//!    `~/.aws/config` (`AWS_CONFIG_FILE`), or a role to assume with a web
//!    identity token (`role_arn` with `web_identity_token_file`).
//! 3. Web identity from the environment: `AWS_WEB_IDENTITY_TOKEN_FILE` and
//!    `AWS_ROLE_ARN` (`AWS_ROLE_SESSION_NAME`), exchanged for temporary
//!    credentials with STS `AssumeRoleWithWebIdentity` ([`super::sts`]) when
//!    first needed and again before they expire ([`super::chain`]).
//!
//! The region is `AWS_REGION`, else `AWS_DEFAULT_REGION`, else the
//! profile's `region`. Secrets never appear in `Debug` output or errors.

use std::fmt;
use std::path::PathBuf;
use std::time::SystemTime;

use weft_core::model::ModelError;

use super::profile::{self, Profile};

/// One set of AWS credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The access key id (`AKIA...`, `ASIA...`).
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: String,
    /// The session token of temporary credentials.
    pub session_token: Option<String>,
    /// When temporary credentials expire.
    pub expires: Option<SystemTime>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .field("expires", &self.expires)
            .finish()
    }
}

/// Where credentials come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSource {
    /// Keys given outright (the environment, a profile).
    Static(Credentials),
    /// A role assumed with a web identity token.
    WebIdentity(WebIdentity),
}

/// What `AssumeRoleWithWebIdentity` needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebIdentity {
    /// The file holding the OIDC token (read anew for every exchange).
    pub token_file: PathBuf,
    /// The role to assume.
    pub role_arn: String,
    /// The session's name.
    pub session_name: String,
    /// The STS endpoint (`https://sts.<region>.amazonaws.com`, or
    /// `AWS_ENDPOINT_URL_STS`).
    pub sts_url: String,
}

/// Finds the credential source and the region through `env`.
pub fn resolve(
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(CredentialSource, String), ModelError> {
    let var = |name: &str| env(name).filter(|v| !v.is_empty());
    let profile = profile::load(&var)?;
    let region = var("AWS_REGION")
        .or_else(|| var("AWS_DEFAULT_REGION"))
        .or_else(|| profile.as_ref().and_then(|p| p.get("region")))
        .ok_or_else(|| ModelError::Config {
            message: "no AWS region for Bedrock: set AWS_REGION (or AWS_DEFAULT_REGION), \
                      or `region` in the AWS profile"
                .into(),
        })?;
    let sts_url = var("AWS_ENDPOINT_URL_STS")
        .unwrap_or_else(|| format!("https://sts.{region}.amazonaws.com"));
    let source = source(&var, profile.as_ref(), sts_url)?;
    Ok((source, region))
}

fn source(
    var: &dyn Fn(&str) -> Option<String>,
    profile: Option<&Profile>,
    sts_url: String,
) -> Result<CredentialSource, ModelError> {
    if let (Some(id), Some(secret)) = (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
        return Ok(CredentialSource::Static(Credentials {
            access_key_id: id,
            secret_access_key: secret,
            session_token: var("AWS_SESSION_TOKEN"),
            expires: None,
        }));
    }
    let session_name = || {
        var("AWS_ROLE_SESSION_NAME").unwrap_or_else(|| {
            let now = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default();
            format!("weft-{}", now.as_millis())
        })
    };
    if let Some(p) = profile {
        if let (Some(id), Some(secret)) =
            (p.get("aws_access_key_id"), p.get("aws_secret_access_key"))
        {
            return Ok(CredentialSource::Static(Credentials {
                access_key_id: id,
                secret_access_key: secret,
                session_token: p.get("aws_session_token"),
                expires: None,
            }));
        }
        if let (Some(file), Some(role)) = (p.get("web_identity_token_file"), p.get("role_arn")) {
            return Ok(CredentialSource::WebIdentity(WebIdentity {
                token_file: file.into(),
                role_arn: role,
                session_name: p.get("role_session_name").unwrap_or_else(session_name),
                sts_url,
            }));
        }
    }
    if let (Some(file), Some(role)) = (var("AWS_WEB_IDENTITY_TOKEN_FILE"), var("AWS_ROLE_ARN")) {
        return Ok(CredentialSource::WebIdentity(WebIdentity {
            token_file: file.into(),
            role_arn: role,
            session_name: session_name(),
            sts_url,
        }));
    }
    let unsupported = profile.and_then(|p| {
        [
            "source_profile",
            "credential_process",
            "sso_session",
            "sso_start_url",
        ]
        .into_iter()
        .find(|k| p.get(k).is_some())
        .map(|k| {
            format!(
                " (profile `{}` uses `{k}`, which weft does not read)",
                p.name
            )
        })
    });
    Err(ModelError::Config {
        message: format!(
            "no AWS credentials for Bedrock{}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, \
             put keys in a profile of ~/.aws/credentials (AWS_PROFILE), or set \
             AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN",
            unsupported.unwrap_or_default()
        ),
    })
}
