//! End to end: a run whose scripted planner calls the test server's
//! `ask_name` over stdio is served over real HTTP; the server's elicitation
//! shows as the run's await, a malformed answer is a problem naming the
//! field and changes nothing, and the accepted answer reaches the tool.
//!
//! It lives here, not in weft-server's tests, because only this crate's
//! tests know where cargo built the test server (`CARGO_BIN_EXE_…`).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::stdio_config;
use serde_json::{Value, json};
use weft_core::planner::{PlanResult, ToolCallRequest};
use weft_mcp::McpToolSet;
use weft_runtime::{Agent, Runtime, ScriptedPlanner};
use weft_server::{AppState, Tenants};

const TOKEN: &str = "tok";

/// A server on a local socket over the SQLite store at `url`; its base URL.
async fn serve(url: &str) -> String {
    let store = weft_store::connect(url).await.unwrap();
    let planner = ScriptedPlanner::new(vec![
        PlanResult::tool_calls(vec![ToolCallRequest::new("mcp.ask_name", json!({}))]),
        PlanResult::final_text("greeted"),
    ]);
    let agent = Agent::builder("greeter", Arc::new(planner))
        .toolset(Arc::new(McpToolSet::new(stdio_config("mcp", &[]))))
        .build();
    let runtime = Runtime::builder().store(store.clone()).agent(agent).build();
    let tenants = Tenants::parse(&format!("tenant={TOKEN}")).unwrap();
    let state = AppState::new(runtime, store, tenants);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(weft_server::serve(listener, state));
    format!("http://{addr}")
}

struct Api {
    base: String,
    http: reqwest::Client,
}

impl Api {
    async fn send(&self, req: reqwest::RequestBuilder) -> (u16, String, Value) {
        let r = req.bearer_auth(TOKEN).send().await.unwrap();
        let status = r.status().as_u16();
        let kind = r
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let text = r.text().await.unwrap();
        (
            status,
            kind,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn get(&self, path: &str) -> Value {
        let (status, _, body) = self
            .send(self.http.get(format!("{}{path}", self.base)))
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    async fn post(&self, path: &str, body: Value) -> (u16, String, Value) {
        let req = self.http.post(format!("{}{path}", self.base)).json(&body);
        self.send(req).await
    }

    /// Polls run `id` until `done` holds for its view.
    async fn wait(&self, id: &str, done: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..1000 {
            let run = self.get(&format!("/v1/runs/{id}")).await;
            if done(&run) {
                return run;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("run {id} never got there");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_is_answered_over_http_and_reaches_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("weft.db").display());
    let api = Api {
        base: serve(&url).await,
        http: reqwest::Client::new(),
    };
    let (status, _, started) = api
        .post("/v1/runs", json!({"agent": "greeter", "input": "hi"}))
        .await;
    assert_eq!(status, 201, "{started}");
    let id = started["run_id"].as_str().unwrap().to_owned();

    // The server asks while the call runs: the run shows the question.
    let run = api.wait(&id, |r| r["await"]["items"][0].is_object()).await;
    assert_eq!(run["status"], "running");
    assert_eq!(run["phase"], "executing");
    let item = &run["await"]["items"][0];
    assert_eq!(item["kind"], "elicitation");
    assert_eq!(item["tool"], "mcp.ask_name");
    assert_eq!(item["message"], "What is your name?");
    assert_eq!(item["mode"], "form");
    assert_eq!(item["requested_schema"]["required"], json!(["name"]));
    let item_id = item["id"].as_str().unwrap().to_owned();
    let answers = format!("/v1/runs/{id}/answers");

    // A malformed answer names the field and changes nothing.
    let bad = json!({"item_id": item_id,
        "answer": {"kind": "elicitation", "action": "accept", "content": {}}});
    let (status, kind, problem) = api.post(&answers, bad).await;
    assert_eq!(status, 400, "{problem}");
    assert_eq!(kind, "application/problem+json");
    assert_eq!(problem["errors"][0]["field"], "answer.content.name");
    assert_eq!(problem["errors"][0]["code"], "missing_elicitation_field");
    let wrong_kind = json!({"item_id": item_id, "answer": {"kind": "clarification", "text": "x"}});
    assert_eq!(api.post(&answers, wrong_kind).await.0, 400);
    let still = api.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(still["await"]["items"][0]["id"], item_id.as_str());
    assert_eq!(still["event_seq"], run["event_seq"]);

    // Another process over the same store takes the answer: checked there
    // against the stored question, handed to the driving process through
    // the store; a second answer to the same question is refused.
    let elsewhere = Api {
        base: serve(&url).await,
        http: reqwest::Client::new(),
    };
    let good = json!({"item_id": item_id,
        "answer": {"kind": "elicitation", "action": "accept", "content": {"name": "Ada"}}});
    let (status, _, problem) = elsewhere
        .post(
            &answers,
            json!({"item_id": item_id,
            "answer": {"kind": "elicitation", "action": "accept", "content": {}}}),
        )
        .await;
    assert_eq!(status, 400, "{problem}");
    let (status, _, accepted) = elsewhere.post(&answers, good.clone()).await;
    assert_eq!(status, 200, "{accepted}");
    assert_eq!(accepted, json!({"remaining": 0, "satisfied": true}));
    // The driving process finishes the run with it; the question is gone.
    let done = api.wait(&id, |r| r["status"] == "completed").await;
    assert!(done.get("await").is_none(), "{done}");
    let (status, _, again) = api.post(&answers, good).await;
    assert!(status == 400 || status == 409, "{status} {again}");

    // The log tells it in order: asked, answered, then the tool's result.
    let (_, _, events) = api
        .send(api.http.get(format!("{}/v1/runs/{id}/events", api.base)))
        .await;
    let events = events.as_str().unwrap_or_default().to_owned();
    let at = |what: &str| {
        events
            .find(what)
            .unwrap_or_else(|| panic!("no {what} in {events}"))
    };
    assert!(at("\"await_requested\"") < at("\"await_satisfied\""));
    assert!(at("\"await_satisfied\"") < at("\"tool_finished\""));
    let finished = events.lines().find(|l| l.contains("\"tool_finished\""));
    assert!(
        finished.is_some_and(|l| l.contains("hello Ada")),
        "{events}"
    );
}
