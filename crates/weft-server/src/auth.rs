//! Bearer-token authentication: the token → tenant map ([`Tenants`]), its
//! parser for `WEFT_TOKENS`-style strings, and the [`Tenant`] extractor.
//!
//! Every session and run a tenant creates carries the label
//! [`TENANT_LABEL`]; handlers compare it with the caller's tenant and answer
//! 404 for anything else, so a tenant cannot even learn that another tenant's
//! resource exists.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;
use weft_core::tool::Labels;

use crate::AppState;
use crate::error::ApiError;

/// The label that records which tenant owns a session or a run.
pub const TENANT_LABEL: &str = weft_core::session::TENANT_LABEL;

/// Which tenant each bearer token belongs to.
#[derive(Clone, Default)]
pub struct Tenants {
    tokens: HashMap<String, String>,
}

/// Why a token configuration string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokensError {
    /// The configuration names no token.
    #[error("no tenant tokens configured")]
    Empty,
    /// An entry is not `tenant=token`.
    #[error("entry {index} is not `tenant=token`")]
    NotAPair {
        /// The entry's position, from 1.
        index: usize,
    },
    /// A tenant id is empty or has characters other than letters, digits, `.`, `_`, `-`.
    #[error(
        "entry {index}: tenant id `{tenant}` must be non-empty letters, digits, `.`, `_` or `-`"
    )]
    BadTenant {
        /// The entry's position, from 1.
        index: usize,
        /// The tenant id given.
        tenant: String,
    },
    /// A token is empty or contains whitespace.
    #[error("entry {index}: the token of tenant `{tenant}` is empty or contains whitespace")]
    BadToken {
        /// The entry's position, from 1.
        index: usize,
        /// The tenant.
        tenant: String,
    },
    /// Two entries share a token (the token itself is not repeated here).
    #[error("entry {index}: the token of tenant `{tenant}` is already used by another entry")]
    DuplicateToken {
        /// The entry's position, from 1.
        index: usize,
        /// The tenant.
        tenant: String,
    },
}

impl Tenants {
    /// An empty map: every request is unauthorized.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a token for `tenant`.
    pub fn insert(&mut self, tenant: impl Into<String>, token: impl Into<String>) {
        self.tokens.insert(token.into(), tenant.into());
    }

    /// Parses `tenant-a=tok1,tenant-b=tok2`, entries separated by commas or
    /// lines (whitespace around entries is
    /// ignored; a tenant may have several tokens).
    pub fn parse(spec: &str) -> Result<Self, TokensError> {
        let mut tenants = Tenants::new();
        for (i, entry) in spec.split([',', '\n']).map(str::trim).enumerate() {
            let index = i + 1;
            if entry.is_empty() {
                continue;
            }
            let (tenant, token) = entry
                .split_once('=')
                .ok_or(TokensError::NotAPair { index })?;
            let (tenant, token) = (tenant.trim(), token.trim());
            let tenant_ok = !tenant.is_empty()
                && tenant
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
            if !tenant_ok {
                return Err(TokensError::BadTenant {
                    index,
                    tenant: tenant.to_owned(),
                });
            }
            if token.is_empty() || token.chars().any(char::is_whitespace) {
                return Err(TokensError::BadToken {
                    index,
                    tenant: tenant.to_owned(),
                });
            }
            if tenants.tokens.contains_key(token) {
                return Err(TokensError::DuplicateToken {
                    index,
                    tenant: tenant.to_owned(),
                });
            }
            tenants.insert(tenant, token);
        }
        if tenants.tokens.is_empty() {
            return Err(TokensError::Empty);
        }
        Ok(tenants)
    }

    /// The tenant a token belongs to. Compares against every configured
    /// token in constant time per token, so timing does not reveal prefixes.
    pub fn tenant_of(&self, token: &str) -> Option<&str> {
        let mut found = None;
        for (known, tenant) in &self.tokens {
            if constant_time_eq(known.as_bytes(), token.as_bytes()) {
                found = Some(tenant.as_str());
            }
        }
        found
    }

    /// How many tokens are configured.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether no token is configured.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

impl fmt::Debug for Tenants {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print tokens.
        let mut tenants: Vec<&str> = self.tokens.values().map(String::as_str).collect();
        tenants.sort_unstable();
        tenants.dedup();
        f.debug_struct("Tenants")
            .field("tenants", &tenants)
            .finish()
    }
}

impl FromStr for Tenants {
    type Err = TokensError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Tenants::parse(s)
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.ct_eq(b).into()
}

/// The authenticated caller's tenant, extracted from `Authorization: Bearer`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant(pub String);

impl Tenant {
    /// Whether `labels` mark a resource of this tenant.
    pub fn owns(&self, labels: &Labels) -> bool {
        labels.get(TENANT_LABEL) == Some(&self.0)
    }

    /// `labels` with this tenant's label set.
    pub fn label(&self, mut labels: Labels) -> Labels {
        labels.insert(TENANT_LABEL.to_owned(), self.0.clone());
        labels
    }
}

impl FromRequestParts<AppState> for Tenant {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, token) = v.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            })
            .ok_or(ApiError::Unauthorized)?;
        let tenant = state
            .tenants
            .tenant_of(token)
            .ok_or(ApiError::Unauthorized)?;
        // Past its share of requests in flight, before any body is read.
        if let Some(share) = parts.extensions.get::<crate::share::ShareSlot>() {
            share.take(tenant)?;
        }
        tracing::Span::current().record("tenant", tenant);
        if let Some(slot) = parts.extensions.get::<crate::requests::TenantSlot>() {
            slot.set(tenant);
        }
        Ok(Tenant(tenant.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pairs_and_finds_tenants() {
        let t = Tenants::parse(" tenant-a=tok1, tenant-b=tok2,tenant-a=tok3 ").unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t.tenant_of("tok1"), Some("tenant-a"));
        assert_eq!(t.tenant_of("tok3"), Some("tenant-a"));
        assert_eq!(t.tenant_of("tok2"), Some("tenant-b"));
        assert_eq!(t.tenant_of("tok"), None);
        assert!(!format!("{t:?}").contains("tok1"));
    }

    #[test]
    fn a_tokens_file_has_one_entry_per_line() {
        let t = Tenants::parse("tenant-a=tok1\ntenant-b=tok2\n\n").unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t.tenant_of("tok2"), Some("tenant-b"));
        assert_eq!(
            Tenants::parse("a=1\nb"),
            Err(TokensError::NotAPair { index: 2 })
        );
    }

    #[test]
    fn refuses_bad_configurations() {
        assert_eq!(Tenants::parse(""), Err(TokensError::Empty));
        assert_eq!(Tenants::parse(" , "), Err(TokensError::Empty));
        assert_eq!(
            Tenants::parse("a=1,b"),
            Err(TokensError::NotAPair { index: 2 })
        );
        assert!(matches!(
            Tenants::parse("=tok"),
            Err(TokensError::BadTenant { index: 1, .. })
        ));
        assert!(matches!(
            Tenants::parse("a b=tok"),
            Err(TokensError::BadTenant { .. })
        ));
        assert!(matches!(
            Tenants::parse("a="),
            Err(TokensError::BadToken { .. })
        ));
        assert_eq!(
            Tenants::parse("a=x,b=x"),
            Err(TokensError::DuplicateToken {
                index: 2,
                tenant: "b".into()
            })
        );
    }

    impl PartialEq for Tenants {
        fn eq(&self, other: &Self) -> bool {
            self.tokens == other.tokens
        }
    }
}
