//! OAuth 2.1 against the in-repo test authorization server over real HTTP:
//! the whole flow (discovery, registration, PKCE, token, a call), the token
//! file (owner-only, reused by a second toolset), refresh before expiry, a
//! new authorization after a refused refresh, tokens kept to their own
//! server, and typed errors for a wrong `state`, malformed metadata, a
//! refused registration and a refused code; scope step-up on a 403
//! `insufficient_scope`, a pre-registered client with its secret, and the
//! client-credentials grant with a secret or a private key; servers of the
//! 2025-03-26 layout (issuer under a path, no metadata at all).

mod common;
mod oauth_server;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{no_backoff, request, text};
use oauth_server::{AuthServer, Preregistered};
use serde_json::json;
use weft_mcp::oauth::{
    AuthorizationPresenter, AuthorizationPrompt, Clock, Grant, OAuthSession, PrivateKey, Refusal,
    SecretSource, never_refused,
};
use weft_mcp::{McpConfig, McpToolSet, OAuthConfig, OAuthFlowError, Transport};
use weft_tools::ToolSet;

/// The "browser": follows each authorization URL, which redirects to the callback.
#[derive(Default)]
struct Browser {
    prompts: Mutex<Vec<AuthorizationPrompt>>,
}

impl Browser {
    fn count(&self) -> usize {
        self.prompts.lock().unwrap().len()
    }
}

impl AuthorizationPresenter for Browser {
    fn present(&self, prompt: &AuthorizationPrompt) -> Refusal {
        self.prompts.lock().unwrap().push(prompt.clone());
        let url = prompt.url.clone();
        tokio::spawn(async move {
            let _ = rmcp_reqwest::get(url).await;
        });
        never_refused()
    }
}

/// The system clock moved forward by a settable offset.
#[derive(Default)]
struct TestClock {
    ahead_secs: AtomicU64,
}

impl TestClock {
    fn advance(&self, secs: u64) {
        self.ahead_secs.fetch_add(secs, Ordering::SeqCst);
    }
}

impl Clock for TestClock {
    fn now(&self) -> weft_core::Timestamp {
        let ahead = Duration::from_secs(self.ahead_secs.load(Ordering::SeqCst));
        weft_core::time::SystemClock.now().saturating_add(ahead)
    }
}

struct Fixture {
    dir: tempfile::TempDir,
    browser: Arc<Browser>,
    clock: Arc<TestClock>,
}

impl Fixture {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
            browser: Arc::default(),
            clock: Arc::default(),
        }
    }

    fn oauth(&self) -> OAuthConfig {
        OAuthConfig::default()
            .with_token_dir(self.dir.path().join("oauth"))
            .with_client_name("weft-test")
            .with_presenter(self.browser.clone())
            .with_clock(self.clock.clone())
            .with_step_timeout(Duration::from_secs(10))
            .with_authorize_timeout(Duration::from_secs(10))
    }

    fn toolset(&self, url: &str) -> McpToolSet {
        self.toolset_with(url, self.oauth())
    }

    fn toolset_with(&self, url: &str, oauth: OAuthConfig) -> McpToolSet {
        McpToolSet::new(
            McpConfig::new("web", Transport::http(url))
                .with_restart_backoff(no_backoff())
                .with_oauth(oauth),
        )
    }

    /// `text` in an owner-only file of the fixture's directory.
    fn secret_file(&self, name: &str, text: &str) -> std::path::PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn session(&self, url: &str) -> OAuthSession {
        OAuthSession::new("web", url, url, self.oauth()).unwrap()
    }
}

async fn echo(set: &McpToolSet, text_in: &str) -> Result<String, weft_tools::ToolFailure> {
    set.call_tool(request("web.echo", json!({"text": text_in})))
        .await
        .map(|r| text(&r))
}

/// The bearer token the server saw last.
fn last_token(server: &AuthServer) -> String {
    let seen = server.state.seen();
    let last = seen.last().cloned().flatten().unwrap();
    last.strip_prefix("Bearer ").unwrap().to_owned()
}

#[tokio::test]
async fn discovery_registration_pkce_and_token_then_a_call_works() {
    let server = AuthServer::start(3600).await;
    let fx = Fixture::new();
    let set = fx.toolset(&server.url());
    assert_eq!(echo(&set, "hello").await.unwrap(), "hello");
    let s = &server.state;
    assert_eq!(s.count(&s.registrations), 1);
    assert_eq!(s.count(&s.authorizations), 1);
    assert_eq!(s.count(&s.code_grants), 1);
    assert_eq!(fx.browser.count(), 1);
    let prompt = fx.browser.prompts.lock().unwrap()[0].clone();
    assert!(
        prompt.url.contains("code_challenge_method=S256"),
        "{}",
        prompt.url
    );
    assert!(prompt.url.contains("resource="), "{}", prompt.url);
    // The first request went out without a token and got the challenge.
    assert_eq!(s.seen().first(), Some(&None));
    let token = last_token(&server);
    let session = fx.session(&server.url());
    let shown = format!(
        "{:?}{session:?}{:?}",
        set.config(),
        session.bearer().await.unwrap()
    );
    assert!(!shown.contains(&token), "{shown}");
}

#[cfg(unix)]
#[tokio::test]
async fn the_token_file_is_owner_only_and_reused_by_a_second_toolset() {
    use std::os::unix::fs::PermissionsExt;
    let server = AuthServer::start(3600).await;
    let fx = Fixture::new();
    echo(&fx.toolset(&server.url()), "first").await.unwrap();
    let path = fx.session(&server.url()).token_path().to_path_buf();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "no temporary files stay: {leftovers:?}");

    let second = fx.toolset(&server.url());
    assert_eq!(echo(&second, "second").await.unwrap(), "second");
    let s = &server.state;
    assert_eq!(fx.browser.count(), 1, "no new authorization");
    assert_eq!(s.count(&s.registrations), 1);
    assert_eq!(s.count(&s.code_grants), 1);
}

#[tokio::test]
async fn an_expiring_token_is_refreshed_before_the_call() {
    let server = AuthServer::start(600).await;
    let fx = Fixture::new();
    let set = fx.toolset(&server.url());
    echo(&set, "one").await.unwrap();
    let first = last_token(&server);
    fx.clock.advance(300);
    echo(&set, "two").await.unwrap();
    assert_eq!(
        server.state.count(&server.state.refreshes),
        0,
        "not due yet"
    );
    fx.clock.advance(250); // 50 s left: less than the margin
    assert_eq!(echo(&set, "three").await.unwrap(), "three");
    let s = &server.state;
    assert_eq!(s.count(&s.refreshes), 1);
    assert_ne!(last_token(&server), first, "the call carried the new token");
    assert_eq!(fx.browser.count(), 1);
}

#[tokio::test]
async fn a_refused_refresh_asks_for_a_new_authorization() {
    let server = AuthServer::start(600).await;
    let fx = Fixture::new();
    let set = fx.toolset(&server.url());
    echo(&set, "one").await.unwrap();
    let s = &server.state;
    s.set(&s.refuse_refresh, true);
    fx.clock.advance(590);
    assert_eq!(echo(&set, "two").await.unwrap(), "two");
    assert_eq!(s.count(&s.refused_refreshes), 1);
    assert_eq!(fx.browser.count(), 2, "the URL was presented again");
    assert_eq!(s.count(&s.code_grants), 2);
}

#[tokio::test]
async fn a_refused_refresh_is_a_typed_error_without_the_token() {
    let server = AuthServer::start(600).await;
    let fx = Fixture::new();
    let session = fx.session(&server.url());
    session.authorize(None).await.unwrap();
    let token = session.bearer().await.unwrap().unwrap();
    let s = &server.state;
    s.set(&s.refuse_refresh, true);
    let err = session.refresh().await.unwrap_err();
    assert!(
        matches!(err, OAuthFlowError::RefreshRejected { .. }),
        "{err:?}"
    );
    assert!(!err.to_string().contains(&token.access_token));
    assert!(!format!("{token:?}{session:?}").contains(&token.access_token));
    assert!(
        session.bearer().await.unwrap().is_none(),
        "the refused tokens are gone"
    );
}

#[tokio::test]
async fn a_token_is_never_sent_to_another_server() {
    let protected = AuthServer::start(3600).await;
    let other = AuthServer::open().await;
    let fx = Fixture::new();
    echo(&fx.toolset(&protected.url()), "mine").await.unwrap();
    // The first server's token file lands where the other server's would be.
    let ours = fx.session(&protected.url()).token_path().to_path_buf();
    let theirs = fx.session(&other.url()).token_path().to_path_buf();
    std::fs::copy(&ours, &theirs).unwrap();
    let session = fx.session(&protected.url());
    assert!(session.allows(&protected.url()));
    assert!(!session.allows(&other.url()));

    let set = fx.toolset(&other.url());
    assert_eq!(echo(&set, "yours").await.unwrap(), "yours");
    let seen = other.state.seen();
    assert!(!seen.is_empty());
    assert!(seen.iter().all(Option::is_none), "{seen:?}");
    assert_eq!(fx.browser.count(), 1);
}

#[tokio::test]
async fn a_wrong_state_is_a_typed_error() {
    let server = AuthServer::start(3600).await;
    let s = &server.state;
    s.set(&s.wrong_state, true);
    let fx = Fixture::new();
    let err = fx.session(&server.url()).authorize(None).await.unwrap_err();
    assert_eq!(err, OAuthFlowError::StateMismatch);
    assert_eq!(s.count(&s.code_grants), 0, "the code was not redeemed");

    let failure = echo(&fx.toolset(&server.url()), "x").await.unwrap_err();
    let message = failure.error.message;
    assert!(message.contains("toolset `web`"), "{message}");
    assert!(message.contains(&server.url()), "{message}");
    assert!(message.contains("wrong `state`"), "{message}");
}

#[tokio::test]
async fn malformed_metadata_is_a_typed_error() {
    let server = AuthServer::start(3600).await;
    let s = &server.state;
    s.set(&s.broken_metadata, true);
    let fx = Fixture::new();
    let err = fx.session(&server.url()).authorize(None).await.unwrap_err();
    assert!(matches!(err, OAuthFlowError::Metadata { .. }), "{err:?}");
    let failure = echo(&fx.toolset(&server.url()), "x").await.unwrap_err();
    assert!(
        failure.error.message.contains("toolset `web`"),
        "{failure:?}"
    );
    assert!(failure.error.message.contains("metadata"), "{failure:?}");
    assert_eq!(fx.browser.count(), 0);
}

#[tokio::test]
async fn a_refused_registration_and_a_refused_code_are_typed_errors() {
    let server = AuthServer::start(3600).await;
    let s = &server.state;
    let fx = Fixture::new();
    s.set(&s.refuse_registration, true);
    let err = fx.session(&server.url()).authorize(None).await.unwrap_err();
    assert!(
        matches!(err, OAuthFlowError::Registration { .. }),
        "{err:?}"
    );
    s.set(&s.refuse_registration, false);
    s.set(&s.refuse_code, true);
    let err = fx.session(&server.url()).authorize(None).await.unwrap_err();
    assert!(
        matches!(err, OAuthFlowError::TokenExchange { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("invalid_grant"), "{err}");
}

#[tokio::test]
async fn a_403_insufficient_scope_authorizes_again_with_more_scopes_and_retries() {
    let server = AuthServer::start(3600).await;
    let s = &server.state;
    s.require_for_calls(&["tools", "write"]);
    let fx = Fixture::new();
    let set = fx.toolset(&server.url());
    assert_eq!(echo(&set, "more").await.unwrap(), "more");
    assert_eq!(fx.browser.count(), 2, "one step-up");
    let asked = s.requested_scopes();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[0], "tools");
    let second: Vec<&str> = asked[1].split(' ').collect();
    assert!(
        second.contains(&"tools") && second.contains(&"write"),
        "{asked:?}"
    );
    // The stepped-up token serves the next call without asking again.
    assert_eq!(echo(&set, "again").await.unwrap(), "again");
    assert_eq!(fx.browser.count(), 2);
}

#[tokio::test]
async fn a_second_403_is_a_typed_error_naming_the_scopes() {
    let server = AuthServer::start(3600).await;
    let s = &server.state;
    s.require_for_calls(&["tools", "admin"]);
    s.set(&s.never_enough, true);
    let fx = Fixture::new();
    let failure = echo(&fx.toolset(&server.url()), "x").await.unwrap_err();
    let message = failure.error.message;
    assert!(message.contains("toolset `web`"), "{message}");
    assert!(message.contains("`tools admin`"), "{message}");
    assert!(!message.contains("closed the connection"), "{message}");
    assert_eq!(fx.browser.count(), 2, "one step-up, not a loop");
}

#[tokio::test]
async fn a_preregistered_client_authenticates_with_its_secret_and_does_not_register() {
    let server = AuthServer::start(3600).await;
    let s = &server.state;
    s.preregister(Preregistered {
        client_id: "weft-pre".into(),
        secret: Some("s3cret:&=".into()),
        public_key_pem: None,
    });
    let fx = Fixture::new();
    let secret = fx.secret_file("client-secret", "s3cret:&=\n");
    let oauth = fx
        .oauth()
        .with_client_id("weft-pre")
        .with_client_secret(SecretSource::File(secret));
    let set = fx.toolset_with(&server.url(), oauth.clone());
    assert_eq!(echo(&set, "pre").await.unwrap(), "pre");
    assert_eq!(s.count(&s.registrations), 0);
    assert_eq!(s.count(&s.code_grants), 1);
    assert_eq!(s.count(&s.basic_auths), 1, "client_secret_basic");
    assert!(!format!("{oauth:?}{:?}", set.config()).contains("s3cret"));

    // A wrong secret is refused, and the error says so without the secret.
    let wrong = fx.secret_file("wrong-secret", "not-it");
    let fx2 = Fixture::new();
    let oauth = fx2
        .oauth()
        .with_client_id("weft-pre")
        .with_client_secret(SecretSource::File(wrong));
    let failure = echo(&fx2.toolset_with(&server.url(), oauth), "x")
        .await
        .unwrap_err();
    assert!(
        failure.error.message.contains("invalid_client"),
        "{failure:?}"
    );
    assert!(!failure.error.message.contains("not-it"), "{failure:?}");
}

#[tokio::test]
async fn client_credentials_with_a_secret_need_no_browser() {
    let server = AuthServer::start(3600).await;
    let s = &server.state;
    s.preregister(Preregistered {
        client_id: "weft-machine".into(),
        secret: Some("machine-secret".into()),
        public_key_pem: None,
    });
    let fx = Fixture::new();
    let oauth = fx
        .oauth()
        .with_grant(Grant::ClientCredentials)
        .with_client_id("weft-machine")
        .with_client_secret(SecretSource::File(
            fx.secret_file("secret", "machine-secret"),
        ));
    let set = fx.toolset_with(&server.url(), oauth);
    assert_eq!(echo(&set, "m2m").await.unwrap(), "m2m");
    assert_eq!(s.count(&s.client_credentials), 1);
    assert_eq!(s.count(&s.basic_auths), 1);
    assert_eq!(s.count(&s.authorizations), 0);
    assert_eq!(s.count(&s.registrations), 0);
    assert_eq!(fx.browser.count(), 0);
}

#[tokio::test]
async fn client_credentials_with_a_private_key_send_a_signed_assertion() {
    let server = AuthServer::start(3600).await;
    let s = &server.state;
    let key = rcgen::KeyPair::generate().unwrap();
    s.preregister(Preregistered {
        client_id: "weft-signer".into(),
        secret: None,
        public_key_pem: Some(key.public_key_pem()),
    });
    let fx = Fixture::new();
    let oauth = fx
        .oauth()
        .with_grant(Grant::ClientCredentials)
        .with_client_id("weft-signer")
        .with_private_key(PrivateKey {
            file: fx.secret_file("key.pem", &key.serialize_pem()),
            algorithm: None,
        });
    let set = fx.toolset_with(&server.url(), oauth.clone());
    assert_eq!(echo(&set, "signed").await.unwrap(), "signed");
    assert_eq!(s.count(&s.assertions), 1);
    assert_eq!(s.count(&s.client_credentials), 1);
    assert_eq!(fx.browser.count(), 0);

    // An algorithm the server does not list is a typed error before any request.
    let other = Fixture::new();
    let mut oauth = oauth.with_token_dir(other.dir.path().join("oauth"));
    if let Some(key) = &mut oauth.identity.private_key {
        key.algorithm = Some("RS256".into());
    }
    let err = OAuthSession::new("web", "srv", &server.url(), oauth)
        .unwrap()
        .authorize(None)
        .await
        .unwrap_err();
    assert!(matches!(err, OAuthFlowError::Credentials { .. }), "{err:?}");
    assert!(err.to_string().contains("RS256"), "{err}");
    assert_eq!(s.count(&s.client_credentials), 1);
}

#[tokio::test]
async fn the_2025_03_26_layouts_are_found_on_the_servers_origin() {
    for legacy in ["issuer under a path", "no metadata"] {
        let server = AuthServer::start(3600).await;
        let s = &server.state;
        match legacy {
            "issuer under a path" => s.set(&s.legacy_issuer, true),
            _ => s.set(&s.no_metadata, true),
        }
        let fx = Fixture::new();
        let set = fx.toolset(&server.url());
        assert_eq!(echo(&set, legacy).await.unwrap(), legacy, "{legacy}");
        assert_eq!(s.count(&s.registrations), 1, "{legacy}");
        assert_eq!(s.count(&s.code_grants), 1, "{legacy}");
    }
}
