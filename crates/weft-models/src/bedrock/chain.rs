//! A credential source with the temporary credentials it last fetched:
//! static keys as they are, a web identity's exchanged with STS when first
//! needed and again [`REFRESH_BEFORE`] they expire.

use std::time::{Duration, SystemTime};

use weft_core::model::ModelError;

use super::credentials::{CredentialSource, Credentials};

/// Temporary credentials are fetched again this long before they expire.
pub const REFRESH_BEFORE: Duration = Duration::from_secs(300);

/// A credential source with the temporary credentials it last fetched.
#[derive(Debug)]
pub(crate) struct Chain {
    source: CredentialSource,
    cached: tokio::sync::Mutex<Option<Credentials>>,
}

impl Chain {
    pub(crate) fn new(source: CredentialSource) -> Self {
        Self {
            source,
            cached: tokio::sync::Mutex::new(None),
        }
    }

    /// Credentials valid for a while yet: static ones as they are, a
    /// web identity's fetched when none are cached or they expire soon.
    pub(crate) async fn get(&self, http: &reqwest::Client) -> Result<Credentials, ModelError> {
        let web = match &self.source {
            CredentialSource::Static(c) => return Ok(c.clone()),
            CredentialSource::WebIdentity(w) => w,
        };
        let mut cached = self.cached.lock().await;
        if let Some(c) = cached.as_ref().filter(|c| fresh(c, SystemTime::now())) {
            return Ok(c.clone());
        }
        let fetched = super::sts::assume_role_with_web_identity(http, web).await?;
        *cached = Some(fetched.clone());
        Ok(fetched)
    }
}

/// Whether `c` is good for a while after `now`.
pub(crate) fn fresh(c: &Credentials, now: SystemTime) -> bool {
    c.expires.is_none_or(|at| now + REFRESH_BEFORE < at)
}

#[cfg(test)]
#[path = "credentials_tests.rs"]
mod tests;
