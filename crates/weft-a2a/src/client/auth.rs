//! What an A2A toolset sends to authenticate: the card's security
//! requirements (1.0's `securityRequirements` or 0.3's `security`, each a
//! set of alternatives) resolved against the schemes it declares
//! (`securitySchemes`) and the secrets the agent file names: an HTTP bearer
//! token (`token_env` / `token_file`) or an API key in a header or the
//! query (`api_key_env` / `api_key_file`). A secret never appears in
//! `Debug` output or errors.

use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

/// The largest secret file read (64 KiB).
const MAX_SECRET: u64 = 64 << 10;

/// Where a secret is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    /// An environment variable, by name.
    Env(String),
    /// A file, by path (surrounding whitespace is trimmed).
    File(PathBuf),
}

/// The secrets an A2A toolset may send.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    /// The HTTP bearer token.
    pub token: Option<SecretSource>,
    /// The API key.
    pub api_key: Option<SecretSource>,
}

/// A secret's value; its `Debug` shows no value.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// One credential a request carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// `Authorization: Bearer <token>`.
    Bearer(Secret),
    /// An API key in the named header.
    Header(String, Secret),
    /// An API key in the named query parameter.
    Query(String, Secret),
}

impl Credential {
    /// `request` carrying this credential.
    pub fn apply(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self {
            Credential::Bearer(s) => request.bearer_auth(&s.0),
            Credential::Header(name, s) => request.header(name.as_str(), &s.0),
            Credential::Query(name, s) => request.query(&[(name.as_str(), &s.0)]),
        }
    }
}

/// Why the card's security cannot be met.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// The card asks for a scheme whose secret the agent file does not name.
    #[error(
        "the card requires security scheme `{scheme}` ({kind}), and no {setting} is configured"
    )]
    NoSecret {
        /// The scheme's name in the card.
        scheme: String,
        /// What it is (`HTTP bearer`, `API key in header X`, ...).
        kind: String,
        /// The settings that would give its secret.
        setting: &'static str,
    },
    /// The card asks for a scheme weft does not send.
    #[error("the card requires security scheme `{scheme}` ({kind}), which weft does not support")]
    Unsupported {
        /// The scheme's name in the card.
        scheme: String,
        /// What it is.
        kind: String,
    },
    /// The card names a scheme it does not declare.
    #[error("the card requires security scheme `{0}`, which its `securitySchemes` do not declare")]
    Undeclared(String),
    /// A configured secret cannot be read.
    #[error("the secret for security scheme `{scheme}` cannot be read: {why}")]
    Unreadable {
        /// The scheme's name in the card.
        scheme: String,
        /// Why (the variable or file, never the value).
        why: String,
    },
}

impl SecretSource {
    fn read(&self) -> Result<Secret, String> {
        let text = match self {
            SecretSource::Env(name) => std::env::var(name)
                .map_err(|_| format!("environment variable `{name}` is not set"))?,
            SecretSource::File(path) => {
                let len = std::fs::metadata(path)
                    .map_err(|e| format!("file `{}`: {e}", path.display()))?
                    .len();
                if len > MAX_SECRET {
                    return Err(format!(
                        "file `{}` is over {MAX_SECRET} bytes",
                        path.display()
                    ));
                }
                std::fs::read_to_string(path)
                    .map_err(|e| format!("file `{}`: {e}", path.display()))?
            }
        };
        let text = text.trim();
        if text.is_empty() {
            return Err(match self {
                SecretSource::Env(name) => format!("environment variable `{name}` is empty"),
                SecretSource::File(path) => format!("file `{}` is empty", path.display()),
            });
        }
        Ok(Secret(text.to_owned()))
    }
}

/// The credentials `card` asks for: the first of its alternatives whose
/// every scheme has a secret; a card without requirements asks for none.
pub fn credentials(card: &Value, secrets: &Secrets) -> Result<Vec<Credential>, AuthError> {
    let alternatives = requirements(card);
    let mut first_error = None;
    for names in &alternatives {
        match names
            .iter()
            .map(|n| credential(card, n, secrets))
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(found) => return Ok(found),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(Vec::new()), Err)
}

/// The card's alternatives, each the names of the schemes it needs together.
fn requirements(card: &Value) -> Vec<Vec<String>> {
    let names = |o: &serde_json::Map<String, Value>| o.keys().cloned().collect::<Vec<_>>();
    let v10 = card["securityRequirements"].as_array().map(|list| {
        list.iter()
            .filter_map(|r| r["schemes"].as_object().map(names))
            .collect::<Vec<_>>()
    });
    let v03 = card["security"].as_array().map(|list| {
        list.iter()
            .filter_map(|r| r.as_object().map(names))
            .collect()
    });
    v10.filter(|l| !l.is_empty())
        .or(v03)
        .unwrap_or_default()
        .into_iter()
        .filter(|alternative| !alternative.is_empty())
        .collect()
}

/// The credential for scheme `name` of `card`.
fn credential(card: &Value, name: &str, secrets: &Secrets) -> Result<Credential, AuthError> {
    let scheme = &card["securitySchemes"][name];
    if scheme.is_null() {
        return Err(AuthError::Undeclared(name.to_owned()));
    }
    let http = scheme
        .get("httpAuthSecurityScheme")
        .or_else(|| (scheme["type"] == "http").then_some(scheme));
    let api_key = scheme
        .get("apiKeySecurityScheme")
        .or_else(|| (scheme["type"] == "apiKey").then_some(scheme));
    let secret = |source: &Option<SecretSource>, kind: String, setting| match source {
        None => Err(AuthError::NoSecret {
            scheme: name.to_owned(),
            kind,
            setting,
        }),
        Some(s) => s.read().map_err(|why| AuthError::Unreadable {
            scheme: name.to_owned(),
            why,
        }),
    };
    if let Some(http) = http {
        let kind = http["scheme"].as_str().unwrap_or_default();
        if kind.eq_ignore_ascii_case("bearer") {
            let token = secret(
                &secrets.token,
                "HTTP bearer".to_owned(),
                "`token_env` or `token_file`",
            )?;
            return Ok(Credential::Bearer(token));
        }
        return Err(AuthError::Unsupported {
            scheme: name.to_owned(),
            kind: format!("HTTP {kind}"),
        });
    }
    if let Some(key) = api_key {
        let location = key["location"]
            .as_str()
            .or(key["in"].as_str())
            .unwrap_or_default();
        let field = key["name"].as_str().unwrap_or_default().to_owned();
        let kind = format!("API key in {location} `{field}`");
        let setting = "`api_key_env` or `api_key_file`";
        return match location {
            "header" if !field.is_empty() => Ok(Credential::Header(
                field,
                secret(&secrets.api_key, kind, setting)?,
            )),
            "query" if !field.is_empty() => Ok(Credential::Query(
                field,
                secret(&secrets.api_key, kind, setting)?,
            )),
            _ => Err(AuthError::Unsupported {
                scheme: name.to_owned(),
                kind,
            }),
        };
    }
    let kind = scheme
        .as_object()
        .and_then(|o| {
            o.get("type")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| o.keys().next().cloned())
        })
        .unwrap_or_default();
    Err(AuthError::Unsupported {
        scheme: name.to_owned(),
        kind,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_bearer_requirement_needs_a_token_and_never_shows_it() {
        let card = json!({
            "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
            "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
        });
        let e = credentials(&card, &Secrets::default()).unwrap_err();
        assert!(
            matches!(&e, AuthError::NoSecret { scheme, .. } if scheme == "bearer"),
            "{e}"
        );
        assert!(e.to_string().contains("token_env"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "s3cret\n").unwrap();
        let secrets = Secrets {
            token: Some(SecretSource::File(file)),
            api_key: None,
        };
        let found = credentials(&card, &secrets).unwrap();
        assert_eq!(found, vec![Credential::Bearer(Secret("s3cret".to_owned()))]);
        assert!(!format!("{found:?}").contains("s3cret"));
    }

    #[test]
    fn an_api_key_of_a_03_card_goes_where_it_says_and_unknown_schemes_are_named() {
        let card = json!({
            "securitySchemes": {
                "key": {"type": "apiKey", "in": "query", "name": "k"},
                "oidc": {"type": "openIdConnect"},
            },
            "security": [{"oidc": []}, {"key": []}],
        });
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("key");
        std::fs::write(&file, "abc").unwrap();
        let secrets = Secrets {
            token: None,
            api_key: Some(SecretSource::File(file)),
        };
        let found = credentials(&card, &secrets).unwrap();
        assert_eq!(
            found,
            vec![Credential::Query("k".to_owned(), Secret("abc".to_owned()))]
        );
        let e = credentials(&card, &Secrets::default()).unwrap_err();
        assert!(
            matches!(&e, AuthError::Unsupported { scheme, .. } if scheme == "oidc"),
            "{e}"
        );
        assert_eq!(credentials(&json!({}), &Secrets::default()), Ok(Vec::new()));
    }
}
