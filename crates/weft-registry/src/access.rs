//! Who may do what at the gateway: the bearer tokens it accepts
//! ([`RegistryTokens`], parsed from `WEFT_REGISTRY_TOKENS`-style strings),
//! the identity a token stands for ([`Principal`]) and the [`BearerToken`]
//! a client sends. Tokens are compared in constant time and never printed.
//!
//! Three roles:
//! - `caller`: lists, searches and reads toolsets, calls tools;
//! - `provider`: registers, pongs and unregisters the toolsets of its scope,
//!   and only those it registered itself (the registering provider's name is
//!   kept with the registration);
//! - `admin`: reads toolsets and deletes any of them.

use std::collections::BTreeSet;
use std::fmt;

/// A bearer token a client sends; printed as `<redacted>`.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken(String);

impl BearerToken {
    /// A token; `None` when `token` is empty or blank.
    pub fn new(token: impl Into<String>) -> Option<Self> {
        let token = token.into().trim().to_owned();
        (!token.is_empty()).then_some(Self(token))
    }

    /// The token itself, for the `Authorization` header.
    pub fn secret(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

/// What a token allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Discovery and calls.
    Caller,
    /// Registration, pongs and unregistration of its toolsets.
    Provider,
    /// Discovery and deletion of any toolset.
    Admin,
    /// Everything: a gateway started with `--insecure-no-auth`.
    Open,
}

/// The toolsets a provider token may register.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Scope {
    Any,
    Only(BTreeSet<String>),
}

/// The identity behind a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The name the token configuration gives it.
    pub name: String,
    /// Its role.
    pub role: Role,
    scope: Scope,
}

impl Principal {
    /// The principal of every request to a gateway without authentication.
    pub fn open() -> Self {
        Self {
            name: "anonymous".into(),
            role: Role::Open,
            scope: Scope::Any,
        }
    }

    /// Whether it may list, search and read toolsets.
    pub fn may_discover(&self) -> bool {
        matches!(self.role, Role::Caller | Role::Admin | Role::Open)
    }

    /// Whether it may call tools.
    pub fn may_call(&self) -> bool {
        matches!(self.role, Role::Caller | Role::Open)
    }

    /// Whether it may register, pong and unregister `toolset`.
    pub fn may_provide(&self, toolset: &str) -> bool {
        match (&self.role, &self.scope) {
            (Role::Open, _) | (Role::Provider, Scope::Any) => true,
            (Role::Provider, Scope::Only(names)) => names.contains(toolset),
            _ => false,
        }
    }

    /// Whether it may delete any toolset.
    pub fn is_admin(&self) -> bool {
        matches!(self.role, Role::Admin | Role::Open)
    }

    /// The identity recorded with a registration it makes and checked on
    /// its pongs and unregistrations; empty (no check) for an open gateway
    /// and an admin.
    pub fn owner(&self) -> &str {
        match self.role {
            Role::Provider => &self.name,
            _ => "",
        }
    }
}

/// Why a token configuration was refused (never quoting a token).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokensError {
    /// No token configured.
    #[error("no registry tokens configured")]
    Empty,
    /// An entry is not `role:name=token[:scope]`.
    #[error(
        "entry {index} is not `caller:NAME=TOKEN`, `provider:NAME=TOKEN:TOOLSET|TOOLSET` or `admin:NAME=TOKEN`"
    )]
    Malformed {
        /// The entry's position, from 1.
        index: usize,
    },
    /// The role is not `caller`, `provider` or `admin`.
    #[error("entry {index}: unknown role `{role}` (caller, provider or admin)")]
    BadRole {
        /// The entry's position, from 1.
        index: usize,
        /// The role given.
        role: String,
    },
    /// A name is empty or has characters other than letters, digits, `.`, `_`, `-`.
    #[error("entry {index}: name `{name}` must be non-empty letters, digits, `.`, `_` or `-`")]
    BadName {
        /// The entry's position, from 1.
        index: usize,
        /// The name given.
        name: String,
    },
    /// A token is empty or contains whitespace.
    #[error("entry {index}: the token of `{name}` is empty or contains whitespace")]
    BadToken {
        /// The entry's position, from 1.
        index: usize,
        /// Whose token.
        name: String,
    },
    /// A provider entry names no toolset, or a caller or admin entry has a scope.
    #[error(
        "entry {index}: {name}: a provider token needs its toolsets (`:a|b`, or `:*` for any); only provider tokens take them"
    )]
    BadScope {
        /// The entry's position, from 1.
        index: usize,
        /// Whose scope.
        name: String,
    },
    /// Two entries share a token.
    #[error("entry {index}: the token of `{name}` is already used by another entry")]
    DuplicateToken {
        /// The entry's position, from 1.
        index: usize,
        /// Whose token.
        name: String,
    },
}

/// The tokens a gateway accepts.
#[derive(Clone, Default)]
pub struct RegistryTokens {
    entries: Vec<(String, Principal)>,
}

impl RegistryTokens {
    /// Parses entries separated by commas or lines:
    /// `caller:NAME=TOKEN`, `provider:NAME=TOKEN:TOOLSET|TOOLSET` (or `:*`
    /// for any toolset), `admin:NAME=TOKEN`. Blank entries and lines
    /// starting with `#` are skipped; a name may have several tokens.
    pub fn parse(spec: &str) -> Result<Self, TokensError> {
        let mut out = Self::default();
        for (i, entry) in spec.split([',', '\n']).map(str::trim).enumerate() {
            let index = i + 1;
            if entry.is_empty() || entry.starts_with('#') {
                continue;
            }
            let (head, rest) = entry
                .split_once('=')
                .ok_or(TokensError::Malformed { index })?;
            let (role, name) = head
                .split_once(':')
                .ok_or(TokensError::Malformed { index })?;
            let (role, name) = (role.trim(), name.trim().to_owned());
            let role = match role {
                "caller" => Role::Caller,
                "provider" => Role::Provider,
                "admin" => Role::Admin,
                other => {
                    return Err(TokensError::BadRole {
                        index,
                        role: other.to_owned(),
                    });
                }
            };
            let name_ok = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
            if !name_ok {
                return Err(TokensError::BadName { index, name });
            }
            let (token, scope) = match rest.split_once(':') {
                Some((t, s)) => (t.trim(), Some(s.trim())),
                None => (rest.trim(), None),
            };
            if token.is_empty() || token.chars().any(char::is_whitespace) {
                return Err(TokensError::BadToken { index, name });
            }
            let scope = match (role, scope) {
                (Role::Provider, Some("*")) => Scope::Any,
                (Role::Provider, Some(s)) => {
                    let names: BTreeSet<String> = s
                        .split('|')
                        .map(str::trim)
                        .filter(|n| !n.is_empty())
                        .map(str::to_owned)
                        .collect();
                    if names.is_empty() {
                        return Err(TokensError::BadScope { index, name });
                    }
                    Scope::Only(names)
                }
                (Role::Provider, None) | (_, Some(_)) => {
                    return Err(TokensError::BadScope { index, name });
                }
                (_, None) => Scope::Any,
            };
            if out.entries.iter().any(|(t, _)| t == token) {
                return Err(TokensError::DuplicateToken { index, name });
            }
            out.entries
                .push((token.to_owned(), Principal { name, role, scope }));
        }
        if out.entries.is_empty() {
            return Err(TokensError::Empty);
        }
        Ok(out)
    }

    /// The principal `token` stands for. Every configured token is compared,
    /// each in constant time, so timing reveals neither prefixes nor which
    /// entry matched.
    pub fn principal(&self, token: &str) -> Option<&Principal> {
        use subtle::ConstantTimeEq;
        let mut found = None;
        for (known, principal) in &self.entries {
            if bool::from(known.as_bytes().ct_eq(token.as_bytes())) {
                found = Some(principal);
            }
        }
        found
    }

    /// How many tokens are configured.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no token is configured.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl fmt::Debug for RegistryTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print tokens: names and roles only.
        let who: Vec<String> = self
            .entries
            .iter()
            .map(|(_, p)| format!("{:?}:{}", p.role, p.name))
            .collect();
        f.debug_struct("RegistryTokens").field("who", &who).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_roles_and_scopes() {
        let t = RegistryTokens::parse(
            "caller:agents=c1, provider:calc-host=p1:calc|text\nadmin:ops=a1\nprovider:any=p2:*\n# a comment\n",
        )
        .unwrap();
        assert_eq!(t.len(), 4);
        let c = t.principal("c1").unwrap();
        assert!(c.may_call() && c.may_discover() && !c.may_provide("calc") && !c.is_admin());
        let p = t.principal("p1").unwrap();
        assert!(p.may_provide("calc") && p.may_provide("text") && !p.may_provide("journal"));
        assert!(!p.may_call() && !p.may_discover() && !p.is_admin());
        assert_eq!(p.owner(), "calc-host");
        assert!(t.principal("p2").unwrap().may_provide("journal"));
        let a = t.principal("a1").unwrap();
        assert!(a.is_admin() && a.may_discover() && !a.may_call() && !a.may_provide("calc"));
        assert_eq!(a.owner(), "");
        assert!(t.principal("c").is_none() && t.principal("").is_none());
        let shown = format!("{t:?}");
        assert!(!shown.contains("c1") && !shown.contains("p1") && shown.contains("calc-host"));
        assert_eq!(
            format!("{:?}", BearerToken::new("s3cret")),
            "Some(BearerToken(<redacted>))"
        );
    }

    #[test]
    fn refuses_bad_configurations() {
        use TokensError::*;
        assert_eq!(RegistryTokens::parse(" , \n").err(), Some(Empty));
        assert_eq!(
            RegistryTokens::parse("agents=c1").err(),
            Some(Malformed { index: 1 })
        );
        assert!(matches!(
            RegistryTokens::parse("root:x=1"),
            Err(BadRole { .. })
        ));
        assert!(matches!(
            RegistryTokens::parse("caller:a b=1"),
            Err(BadName { .. })
        ));
        assert!(matches!(
            RegistryTokens::parse("caller:a="),
            Err(BadToken { .. })
        ));
        assert!(matches!(
            RegistryTokens::parse("provider:p=1"),
            Err(BadScope { .. })
        ));
        assert!(matches!(
            RegistryTokens::parse("provider:p=1:"),
            Err(BadScope { .. })
        ));
        assert!(matches!(
            RegistryTokens::parse("caller:c=1:calc"),
            Err(BadScope { .. })
        ));
        let dup = RegistryTokens::parse("caller:a=same,admin:b=same").unwrap_err();
        assert!(matches!(dup, DuplicateToken { index: 2, .. }));
        assert!(!dup.to_string().contains("same"));
    }
}
