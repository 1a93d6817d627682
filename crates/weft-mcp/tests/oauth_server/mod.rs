//! A test OAuth 2.1 authorization server and the MCP server it protects, in
//! one axum app on 127.0.0.1: protected-resource and authorization-server
//! metadata, dynamic registration, an `/authorize` that approves at once
//! (redirecting to the loopback callback), a `/token` that checks PKCE and
//! the `resource` indicator, refreshes, authenticates confidential clients
//! (RFC 6749 §2.3.1, RFC 7523) and grants client credentials, and `/mcp`,
//! which answers 401 with a `WWW-Authenticate` challenge unless the bearer
//! token is valid, and 403 `insufficient_scope` (RFC 6750 §3.1) to a
//! `tools/call` whose token lacks the scopes calls need.
//! Switches make each step misbehave; counters and the `Authorization`
//! headers seen let tests check what happened.

#![allow(dead_code)]

mod clients;
mod mcp;
mod routes;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What a code was issued for.
pub struct Grant {
    pub client_id: String,
    pub redirect_uri: String,
    pub challenge: String,
    /// The scopes asked for.
    pub scopes: Vec<String>,
}

/// A client registered beforehand (no dynamic registration then).
#[derive(Clone, Default)]
pub struct Preregistered {
    pub client_id: String,
    /// `client_secret_basic`, when set.
    pub secret: Option<String>,
    /// The public key (PEM) of `private_key_jwt` assertions, when set.
    pub public_key_pem: Option<String>,
}

/// The server's state.
#[derive(Default)]
pub struct AuthState {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Whether `/mcp` wants a token.
    pub protected: bool,
    /// The lifetime of access tokens, in seconds.
    pub expires_in: u64,
    pub clients: Mutex<HashMap<String, Vec<String>>>,
    pub codes: Mutex<HashMap<String, Grant>>,
    /// Valid access tokens and their scopes.
    pub access: Mutex<HashMap<String, Vec<String>>>,
    pub refresh: Mutex<HashSet<String>>,
    /// `Authorization` headers `/mcp` saw, in order.
    pub seen: Mutex<Vec<Option<String>>>,
    /// The `Authorization` header of each `tools/call`.
    pub calls: Mutex<Vec<Option<String>>>,
    pub registrations: AtomicUsize,
    pub authorizations: AtomicUsize,
    pub code_grants: AtomicUsize,
    pub refreshes: AtomicUsize,
    pub refused_refreshes: AtomicUsize,
    pub refuse_refresh: AtomicBool,
    pub refuse_registration: AtomicBool,
    pub refuse_code: AtomicBool,
    pub broken_metadata: AtomicBool,
    pub wrong_state: AtomicBool,
    /// The 2025-03-26 layout: no protected-resource metadata, and the
    /// authorization server's issuer under `/oauth` on the same origin.
    pub legacy_issuer: AtomicBool,
    /// No metadata at all (the 2025-03-26 default endpoints).
    pub no_metadata: AtomicBool,
    /// The scopes a `tools/call` needs; empty for none.
    pub call_scopes: Mutex<Vec<String>>,
    /// `tools/call` is refused (403) whatever the token's scopes.
    pub never_enough: AtomicBool,
    /// The `scope` of each authorization request, in order.
    pub requested_scopes: Mutex<Vec<String>>,
    /// A client registered beforehand; with one there is no registration endpoint.
    pub preregistered: Mutex<Option<Preregistered>>,
    /// Token requests whose client authenticated with HTTP Basic.
    pub basic_auths: AtomicUsize,
    /// Verified `private_key_jwt` assertions.
    pub assertions: AtomicUsize,
    /// Tokens granted with `client_credentials`.
    pub client_credentials: AtomicUsize,
    counter: AtomicUsize,
}

impl AuthState {
    /// The protected resource.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    /// A fresh opaque value.
    pub fn fresh(&self, kind: &str) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let random = std::hash::BuildHasher::hash_one(&std::hash::RandomState::new(), n);
        format!("{kind}-{n}-{random:016x}")
    }

    /// The `Authorization` headers `/mcp` saw.
    pub fn calls(&self) -> Vec<Option<String>> {
        self.calls.lock().unwrap().clone()
    }

    pub fn seen(&self) -> Vec<Option<String>> {
        self.seen.lock().unwrap().clone()
    }

    pub fn count(&self, counter: &AtomicUsize) -> usize {
        counter.load(Ordering::SeqCst)
    }

    pub fn set(&self, switch: &AtomicBool, on: bool) {
        switch.store(on, Ordering::SeqCst);
    }

    /// Registers `client` beforehand and turns dynamic registration off.
    pub fn preregister(&self, client: Preregistered) {
        *self.preregistered.lock().unwrap() = Some(client);
    }

    /// Makes `tools/call` need `scopes`.
    pub fn require_for_calls(&self, scopes: &[&str]) {
        *self.call_scopes.lock().unwrap() = scopes.iter().map(|s| (*s).to_owned()).collect();
    }

    /// The `scope` of each authorization request.
    pub fn requested_scopes(&self) -> Vec<String> {
        self.requested_scopes.lock().unwrap().clone()
    }
}

/// A running test server; stops when dropped.
pub struct AuthServer {
    pub state: Arc<AuthState>,
    task: tokio::task::JoinHandle<()>,
}

impl AuthServer {
    /// An authorization server protecting its `/mcp`, tokens living `expires_in` seconds.
    pub async fn start(expires_in: u64) -> Self {
        Self::start_with(true, expires_in).await
    }

    /// An MCP server without OAuth that records the `Authorization` headers it gets.
    pub async fn open() -> Self {
        Self::start_with(false, 0).await
    }

    async fn start_with(protected: bool, expires_in: u64) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(AuthState {
            base: format!("http://{addr}"),
            protected,
            expires_in,
            ..AuthState::default()
        });
        let app = routes::router(state.clone()).merge(mcp::router(state.clone()));
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { state, task }
    }

    pub fn url(&self) -> String {
        self.state.mcp_url()
    }
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
