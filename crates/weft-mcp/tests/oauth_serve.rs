//! End to end over real HTTP: two tenants' runs on one `weft serve` call
//! the same OAuth MCP server. The tools are listed with the operator's
//! identity (authorized once, outside any run); each tenant's first call
//! asks its own run to authorize — a URL elicitation in the run's await,
//! not a line on the server's stderr — and the question is withdrawn once
//! the browser is done; each tenant then calls with its own token, never
//! the operator's, and a tenant who declines gets the refusal as the
//! tool's error without waiting out the authorization timeout.

mod common;
mod oauth_server;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use oauth_server::AuthServer;
use serde_json::{Value, json};
use weft_core::planner::{PlanResult, ToolCallRequest};
use weft_mcp::oauth::{AuthorizationPresenter, AuthorizationPrompt, Refusal, never_refused};
use weft_mcp::{McpConfig, OAuthConfig, TenantScopedToolSet, Transport};

/// The operator's browser: follows each URL shown outside a run.
#[derive(Default)]
struct Operator(AtomicUsize);

impl AuthorizationPresenter for Operator {
    fn present(&self, prompt: &AuthorizationPrompt) -> Refusal {
        self.0.fetch_add(1, Ordering::SeqCst);
        let url = prompt.url.clone();
        tokio::spawn(async move {
            let _ = rmcp_reqwest::get(url).await;
        });
        never_refused()
    }
}
use weft_runtime::{Agent, Runtime, ScriptedPlanner};
use weft_server::{AppState, Tenants};

struct Api {
    base: String,
    http: reqwest::Client,
}

impl Api {
    async fn call(&self, token: &str, req: reqwest::RequestBuilder) -> (u16, Value) {
        let r = req.bearer_auth(token).send().await.unwrap();
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn start(&self, token: &str) -> String {
        let req = self
            .http
            .post(format!("{}/v1/runs", self.base))
            .json(&json!({"agent": "greeter", "input": "hi"}));
        let (status, body) = self.call(token, req).await;
        assert_eq!(status, 201, "{body}");
        body["run_id"].as_str().unwrap().to_owned()
    }

    async fn run(&self, token: &str, id: &str) -> Value {
        let req = self.http.get(format!("{}/v1/runs/{id}", self.base));
        let (status, body) = self.call(token, req).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    async fn wait(&self, token: &str, id: &str, done: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..1500 {
            let run = self.run(token, id).await;
            if done(&run) {
                return run;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("run {id} never got there");
    }

    async fn events(&self, token: &str, id: &str) -> String {
        let req = self.http.get(format!("{}/v1/runs/{id}/events", self.base));
        let (_, body) = self.call(token, req).await;
        body.as_str().unwrap_or_default().to_owned()
    }
}

/// A server whose agent calls `web.echo` once on the OAuth MCP server.
async fn serve(mcp: &AuthServer, dir: &std::path::Path, operator: Arc<Operator>) -> Api {
    let store = weft_store::connect(&format!("sqlite:{}", dir.join("weft.db").display()))
        .await
        .unwrap();
    let planner = ScriptedPlanner::new(vec![
        PlanResult::tool_calls(vec![ToolCallRequest::new(
            "web.echo",
            json!({"text": "hi"}),
        )]),
        PlanResult::final_text("greeted"),
    ]);
    let oauth = OAuthConfig::default()
        .with_token_dir(dir.join("oauth"))
        .with_client_name("weft-test")
        .with_presenter(operator)
        .with_step_timeout(Duration::from_secs(10))
        .with_authorize_timeout(Duration::from_secs(60));
    let toolset = TenantScopedToolSet::new(
        McpConfig::new("web", Transport::http(mcp.url()))
            .with_restart_backoff(common::no_backoff())
            .with_oauth(oauth),
    );
    let agent = Agent::builder("greeter", Arc::new(planner))
        .toolset(Arc::new(toolset))
        .build();
    let runtime = Runtime::builder().store(store.clone()).agent(agent).build();
    let tenants = Tenants::parse("ada=ada-tok,bob=bob-tok,carol=carol-tok").unwrap();
    let state = AppState::new(runtime, store, tenants);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(weft_server::serve(listener, state));
    Api {
        base: format!("http://{addr}"),
        http: reqwest::Client::new(),
    }
}

/// The URL question a run shows; its item.
async fn url_question(api: &Api, token: &str, id: &str) -> Value {
    let run = api
        .wait(token, id, |r| r["await"]["items"][0].is_object())
        .await;
    let item = run["await"]["items"][0].clone();
    assert_eq!(item["kind"], "elicitation", "{item}");
    assert_eq!(item["mode"], "url", "{item}");
    assert_eq!(item["tool"], "web.echo", "{item}");
    assert!(
        item["message"]
            .as_str()
            .unwrap()
            .contains("needs your authorization"),
        "{item}"
    );
    item
}

/// The bearer token of the MCP server's last `tools/call`.
fn last_call_token(server: &AuthServer) -> String {
    server.state.calls().last().cloned().flatten().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tenant_is_asked_on_its_own_run_and_calls_with_its_own_token() {
    let mcp = AuthServer::start(3600).await;
    let dir = tempfile::tempdir().unwrap();
    let operator = Arc::new(Operator::default());
    let api = serve(&mcp, dir.path(), operator.clone()).await;

    let mut tokens = Vec::new();
    for token in ["ada-tok", "bob-tok"] {
        let id = api.start(token).await;
        let item = url_question(&api, token, &id).await;
        // The person opens the URL; the authorization server sends the
        // browser back to weft's callback, and the call goes on.
        let url = item["url"].as_str().unwrap().to_owned();
        rmcp_reqwest::get(url).await.unwrap();
        let done = api.wait(token, &id, |r| r["status"] == "completed").await;
        assert!(done.get("await").is_none(), "{done}");
        let events = api.events(token, &id).await;
        let withdrawn = format!("\"item_id\":\"{}\"", item["id"].as_str().unwrap());
        assert!(
            events
                .lines()
                .any(|l| l.contains("\"await_withdrawn\"") && l.contains(&withdrawn)),
            "the question goes once the browser is done: {events}"
        );
        assert!(events.contains("\"tool_finished\""), "{events}");
        tokens.push(last_call_token(&mcp));
    }
    assert_ne!(tokens[0], tokens[1], "one token per tenant");
    // The operator authorized once, to list the tools; no call carried its token.
    assert_eq!(operator.0.load(Ordering::SeqCst), 1);
    let s = &mcp.state;
    assert_eq!(s.count(&s.code_grants), 3);
    let calls: Vec<String> = s.calls().into_iter().flatten().collect();
    assert!(!calls.is_empty());
    assert!(
        calls.iter().all(|t| tokens.contains(t)),
        "{calls:?} {tokens:?}"
    );

    // Ada's next run calls with her token at once: nothing to ask.
    let id = api.start("ada-tok").await;
    let done = api
        .wait("ada-tok", &id, |r| r["status"] == "completed")
        .await;
    assert!(done.get("await").is_none(), "{done}");
    assert!(!api.events("ada-tok", &id).await.contains("await_requested"));
    assert_eq!(last_call_token(&mcp), tokens[0]);
    assert_eq!(s.count(&s.code_grants), 3);
    let tenants = dir.path().join("oauth").join("tenants");
    assert!(tenants.join("ada").is_dir() && tenants.join("bob").is_dir());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_authorization_is_the_tools_error_at_once() {
    let mcp = AuthServer::start(3600).await;
    let dir = tempfile::tempdir().unwrap();
    let api = serve(&mcp, dir.path(), Arc::default()).await;
    let id = api.start("carol-tok").await;
    let item = url_question(&api, "carol-tok", &id).await;
    let answer = json!({"item_id": item["id"],
        "answer": {"kind": "elicitation", "action": "decline"}});
    let req = api
        .http
        .post(format!("{}/v1/runs/{id}/answers", api.base))
        .json(&answer);
    let (status, body) = api.call("carol-tok", req).await;
    assert_eq!(status, 200, "{body}");
    api.wait("carol-tok", &id, |r| r["status"] == "completed")
        .await;
    let events = api.events("carol-tok", &id).await;
    let finished = events
        .lines()
        .find(|l| l.contains("\"tool_finished\""))
        .unwrap_or_default();
    assert!(finished.contains("authorization was refused"), "{events}");
    let s = &mcp.state;
    assert_eq!(s.count(&s.code_grants), 1, "the operator's only");
}
