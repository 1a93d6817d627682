//! Tokens per tenant, against the in-repo test authorization server over
//! real HTTP: each tenant's first call authorizes through a URL
//! elicitation of its own call (never a line on stderr), its tokens land in
//! an owner-only directory of its own, the server sees a different token
//! per tenant and never the operator's, a tenant's later calls reuse its
//! token, and a tenant who declines ends the authorization at once with a
//! typed error.

mod common;
mod oauth_server;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{request, text};
use oauth_server::AuthServer;
use serde_json::json;
use weft_core::elicitation::{ElicitationMode, ElicitationResponse, Elicitor};
use weft_mcp::oauth::{AuthorizationPresenter, AuthorizationPrompt, Refusal, never_refused};
use weft_mcp::{McpConfig, OAuthConfig, TenantScopedToolSet, Transport};
use weft_tools::ToolSet;

/// Counts the authorizations shown outside any run (there should be none).
#[derive(Default)]
struct Stderr(Mutex<usize>);

impl AuthorizationPresenter for Stderr {
    fn present(&self, _prompt: &AuthorizationPrompt) -> Refusal {
        *self.0.lock().unwrap() += 1;
        never_refused()
    }
}

/// A person answering a run's URL questions: opens each URL in the
/// "browser" (it redirects to the callback) and accepts, or declines.
#[derive(Clone, Default)]
struct Person {
    asked: Arc<Mutex<Vec<String>>>,
    declines: bool,
}

impl Person {
    fn elicitor(&self) -> Elicitor {
        let person = self.clone();
        Elicitor::new(move |request| {
            let person = person.clone();
            Box::pin(async move {
                let ElicitationMode::Url { url, .. } = request.mode else {
                    panic!("expected a URL question, got {request:?}");
                };
                person.asked.lock().unwrap().push(url.clone());
                if person.declines {
                    return Ok(ElicitationResponse::decline());
                }
                let _ = rmcp_reqwest::get(url).await;
                Ok(ElicitationResponse::accept(None))
            })
        })
    }

    fn count(&self) -> usize {
        self.asked.lock().unwrap().len()
    }
}

async fn echo_as(
    set: &TenantScopedToolSet,
    tenant: &str,
    person: &Person,
) -> Result<String, String> {
    let mut r = request("web.echo", json!({"text": tenant}));
    r.labels.insert("weft.tenant".into(), tenant.into());
    r.elicit = person.elicitor();
    set.call_tool(r)
        .await
        .map(|r| text(&r))
        .map_err(|f| f.error.to_string())
}

fn last_token(server: &AuthServer) -> String {
    server.state.seen().last().cloned().flatten().unwrap()
}

fn token_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect(),
        Err(_) => Vec::new(),
    }
}

fn toolset(server: &AuthServer, dir: &std::path::Path, stderr: Arc<Stderr>) -> TenantScopedToolSet {
    let oauth = OAuthConfig::default()
        .with_token_dir(dir.join("oauth"))
        .with_client_name("weft-test")
        .with_presenter(stderr)
        .with_step_timeout(Duration::from_secs(10))
        .with_authorize_timeout(Duration::from_secs(30));
    TenantScopedToolSet::new(
        McpConfig::new("web", Transport::http(server.url()))
            .with_restart_backoff(common::no_backoff())
            .with_oauth(oauth),
    )
}

#[tokio::test]
async fn each_tenant_authorizes_through_its_own_run_and_keeps_its_own_token() {
    let server = AuthServer::start(3600).await;
    let dir = tempfile::tempdir().unwrap();
    let stderr = Arc::new(Stderr::default());
    let set = toolset(&server, dir.path(), stderr.clone());
    let (ada, bob) = (Person::default(), Person::default());

    assert_eq!(echo_as(&set, "ada", &ada).await.unwrap(), "ada");
    assert_eq!(ada.count(), 1, "Ada's run is asked to authorize");
    assert_eq!(bob.count(), 0);
    let ada_token = last_token(&server);

    assert_eq!(echo_as(&set, "bob", &bob).await.unwrap(), "bob");
    assert_eq!(bob.count(), 1, "Bob authorizes for himself");
    assert_eq!(ada.count(), 1, "Ada is not asked for Bob");
    let bob_token = last_token(&server);
    assert_ne!(ada_token, bob_token);

    // Ada's next call carries her token again, without a new authorization.
    assert_eq!(echo_as(&set, "ada", &ada).await.unwrap(), "ada");
    assert_eq!(ada.count(), 1);
    assert_eq!(last_token(&server), ada_token);
    assert_eq!(set.tenant_connections(), 2);

    // One owner-only directory and file per tenant; no operator token at all.
    let root = dir.path().join("oauth");
    assert!(
        token_files(&root).is_empty(),
        "the operator was never authorized"
    );
    for tenant in ["ada", "bob"] {
        let files = token_files(&root.join("tenants").join(tenant));
        assert_eq!(files.len(), 1, "{tenant}: {files:?}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&files[0]).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{tenant}");
        }
    }
    let ada_file = std::fs::read_to_string(&token_files(&root.join("tenants/ada"))[0]).unwrap();
    assert!(!ada_file.contains(bob_token.trim_start_matches("Bearer ")));
    assert_eq!(*stderr.0.lock().unwrap(), 0, "nothing shown outside a run");
    let s = &server.state;
    assert_eq!(s.count(&s.code_grants), 2);
}

#[tokio::test]
async fn a_tenant_who_declines_ends_the_authorization_with_a_typed_error() {
    let server = AuthServer::start(3600).await;
    let dir = tempfile::tempdir().unwrap();
    let set = toolset(&server, dir.path(), Arc::default());
    let carol = Person {
        declines: true,
        ..Person::default()
    };
    let error = echo_as(&set, "carol", &carol).await.unwrap_err();
    assert!(error.contains("authorization was refused"), "{error}");
    assert!(error.contains("decline"), "{error}");
    assert_eq!(carol.count(), 1);
    let s = &server.state;
    assert_eq!(s.count(&s.code_grants), 0);
    assert!(token_files(&dir.path().join("oauth/tenants/carol")).is_empty());
}

#[tokio::test]
async fn the_least_recently_used_idle_tenant_makes_room() {
    let server = AuthServer::start(3600).await;
    let dir = tempfile::tempdir().unwrap();
    let set = toolset(&server, dir.path(), Arc::default()).with_max_tenants(1);
    let (ada, bob) = (Person::default(), Person::default());
    echo_as(&set, "ada", &ada).await.unwrap();
    echo_as(&set, "bob", &bob).await.unwrap();
    assert_eq!(set.tenant_connections(), 1);
    // Ada comes back on a new connection with her stored token: no new question.
    echo_as(&set, "ada", &ada).await.unwrap();
    assert_eq!(ada.count(), 1);
    assert_eq!(set.tenant_connections(), 1);
}
