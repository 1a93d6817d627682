//! End to end: a run whose scripted planner calls the test server's
//! `ask_name` over stdio is served over real HTTP; the server's elicitation
//! shows as the run's await, a malformed answer is a problem naming the
//! field and changes nothing, and the accepted answer reaches the tool.
//! With `order`, whose form carries constraints and defaults: the defaults
//! show in the question, an answer out of range is refused and never
//! reaches the server, and the fields left out arrive with their defaults.
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

/// A server on a local socket over the SQLite store at `url`, whose agent
/// calls `tool` of the test server once; its base URL.
async fn serve_calling(url: &str, tool: &str) -> String {
    let store = weft_store::connect(url).await.unwrap();
    let planner = ScriptedPlanner::new(vec![
        PlanResult::tool_calls(vec![ToolCallRequest::new(tool, json!({}))]),
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

async fn serve(url: &str) -> String {
    serve_calling(url, "mcp.ask_name").await
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

/// Every string inside `v`, depth first.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
        Value::Object(fields) => fields.values().for_each(|f| strings(f, out)),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_out_of_range_never_reaches_the_server_and_defaults_do() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("weft.db").display());
    let api = Api {
        base: serve_calling(&url, "mcp.order").await,
        http: reqwest::Client::new(),
    };
    let (status, _, started) = api
        .post("/v1/runs", json!({"agent": "greeter", "input": "order"}))
        .await;
    assert_eq!(status, 201, "{started}");
    let id = started["run_id"].as_str().unwrap().to_owned();

    // The question shows the constraints and the defaults.
    let run = api.wait(&id, |r| r["await"]["items"][0].is_object()).await;
    let item = &run["await"]["items"][0];
    assert_eq!(item["tool"], "mcp.order");
    let properties = &item["requested_schema"]["properties"];
    assert_eq!(properties["quantity"]["maximum"], 100);
    assert_eq!(properties["size"]["default"], "m");
    assert_eq!(properties["gift"]["default"], false);
    let item_id = item["id"].as_str().unwrap().to_owned();
    let answers = format!("/v1/runs/{id}/answers");
    let answer = |content: Value| {
        json!({"item_id": item_id,
            "answer": {"kind": "elicitation", "action": "accept", "content": content}})
    };

    // Out of range (every required field given), not an email, not
    // offered: each a problem naming the field, and nothing changes.
    for (content, field, code) in [
        (
            json!({"quantity": 500, "size": "s"}),
            "quantity",
            "elicitation_constraint",
        ),
        (
            json!({"quantity": 0, "size": "s"}),
            "quantity",
            "elicitation_constraint",
        ),
        (
            json!({"quantity": 5, "email": "nope"}),
            "email",
            "elicitation_constraint",
        ),
        (
            json!({"quantity": 5, "size": "xl"}),
            "size",
            "elicitation_value_not_offered",
        ),
    ] {
        let (status, kind, problem) = api.post(&answers, answer(content.clone())).await;
        assert_eq!(status, 400, "{content}: {problem}");
        assert_eq!(kind, "application/problem+json");
        assert_eq!(
            problem["errors"][0]["field"],
            format!("answer.content.{field}")
        );
        assert_eq!(problem["errors"][0]["code"], code, "{problem}");
    }
    let (_, _, problem) = api
        .post(&answers, answer(json!({"quantity": 500, "size": "s"})))
        .await;
    let message = problem["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("at most 100"), "{problem}");
    let still = api.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(still["await"]["items"][0]["id"], item_id.as_str());
    assert_eq!(still["event_seq"], run["event_seq"]);

    // A valid answer that leaves out the defaulted fields.
    let (status, _, accepted) = api.post(&answers, answer(json!({"quantity": 7}))).await;
    assert_eq!(status, 200, "{accepted}");
    api.wait(&id, |r| r["status"] == "completed").await;

    // The server got exactly one answer, the valid one, with the defaults.
    let (_, _, events) = api
        .send(api.http.get(format!("{}/v1/runs/{id}/events", api.base)))
        .await;
    let events = events.as_str().unwrap_or_default().to_owned();
    let finished = events
        .lines()
        .filter(|l| l.contains("\"tool_finished\""))
        .map(|l| l.trim_start_matches("data:").trim())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect::<Vec<_>>();
    assert_eq!(finished.len(), 1, "{events}");
    let mut texts = Vec::new();
    strings(&finished[0], &mut texts);
    let received: Vec<Value> = texts
        .iter()
        .filter_map(|t| serde_json::from_str::<Value>(t).ok())
        .filter(Value::is_object)
        .collect();
    assert_eq!(
        received,
        vec![json!({"quantity": 7, "size": "m", "gift": false})],
        "{events}"
    );
    // The log records the answer as the server got it.
    let satisfied = events.lines().find(|l| l.contains("\"await_satisfied\""));
    assert!(
        satisfied.is_some_and(|l| l.contains("\"size\":\"m\"")),
        "{events}"
    );
}
