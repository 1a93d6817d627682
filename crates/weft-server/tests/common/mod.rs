//! Test fixture: a server over a real store (SQLite in a tempdir unless told), with
//! scripted agents and in-process tools, called through `app` or, after
//! [`Fixture::over_socket`], over HTTP on a real socket.

#![allow(dead_code)] // Each test binary uses a part of the fixture.

pub mod counting;
pub mod prompted;
pub mod scenarios;
pub mod served;
pub mod sse;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::BodyExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tower::ServiceExt;
use weft_core::AwaitItemId;
use weft_core::awaiting::{AwaitItem, Clarification, Question, QuestionOption, Questions};
use weft_core::planner::{PlanResult, ToolCallRequest};
use weft_core::session::FullStore;
use weft_core::tool::{ToolError, ToolIdent};
use weft_runtime::{Agent, AgentToolSet, Runtime, ScriptedPlanner};
use weft_server::{AppState, Tenants};
use weft_tools::FnToolSet;

pub const TOKEN_A: &str = "tok-a";
pub const TOKEN_B: &str = "tok-b";

#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    ms: u64,
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// A server's state over a store (a SQLite file that lives as long as the fixture, by default).
pub struct Fixture {
    pub state: AppState,
    _dir: Option<tempfile::TempDir>,
    /// When set, [`Fixture::call`] goes over a real socket to this server.
    socket: Option<served::Served>,
}

/// A response: status, headers and the body as JSON (`Value::Null` when empty or not JSON).
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Reply {
    pub fn content_type(&self) -> &str {
        self.headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The `field` of each entry of a problem's `errors`.
    pub fn fields(&self) -> Vec<String> {
        self.body["errors"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|e| e["field"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn agents() -> Vec<Agent> {
    let tools = Arc::new(
        FnToolSet::new("t")
            .tool("add", "Adds two integers", |args: AddArgs| async move {
                Ok::<_, ToolError>(args.a + args.b)
            })
            .tool("sleep", "Sleeps", |args: SleepArgs| async move {
                tokio::time::sleep(Duration::from_millis(args.ms)).await;
                Ok::<_, ToolError>("slept")
            }),
    );
    let slow = ScriptedPlanner::new(vec![
        PlanResult::tool_calls(vec![ToolCallRequest::new("t.sleep", json!({"ms": 60_000}))]),
        PlanResult::final_text("woke up"),
    ]);
    let nap = ScriptedPlanner::new(vec![
        PlanResult::tool_calls(vec![ToolCallRequest::new("t.sleep", json!({"ms": 300}))]),
        PlanResult::final_text("rested"),
    ]);
    let echo = ScriptedPlanner::new(vec![
        PlanResult::tool_calls(vec![ToolCallRequest::new("t.add", json!({"a": 1, "b": 2}))]),
        PlanResult::final_text("the sum is 3"),
    ]);
    let ask = ScriptedPlanner::new(vec![
        PlanResult::await_items(vec![
            AwaitItem::Questions(Questions {
                id: AwaitItemId::new("pick"),
                tool_name: ToolIdent::new("t.choose"),
                tool_call_id: "call-pick".into(),
                payload: json!({}),
                title: None,
                questions: vec![Question {
                    id: "color".into(),
                    prompt: "Which color?".into(),
                    options: vec![
                        QuestionOption {
                            id: "red".into(),
                            label: "Red".into(),
                        },
                        QuestionOption {
                            id: "blue".into(),
                            label: "Blue".into(),
                        },
                    ],
                    allow_multiple: false,
                }],
            }),
            AwaitItem::Clarification(Clarification {
                id: AwaitItemId::new("why"),
                question: "Why?".into(),
                missing_fields: Vec::new(),
                restrict_to_tool: None,
                example_input: None,
                clarifying_prompt: None,
            }),
        ]),
        PlanResult::final_text("thanks"),
    ]);
    // Its script spans a session: the second run answers with the first answer.
    let recall = ScriptedPlanner::new(vec![
        PlanResult::final_text("noted: {{input}}"),
        PlanResult::final_text("earlier I said \"{{last_answer}}\""),
    ])
    .across_session();
    // It calls `echo` twice, as an agent tool: two child runs.
    let echo_twice = || ToolCallRequest::new("agents.echo", json!({"input": "add"}));
    let team = ScriptedPlanner::new(vec![
        PlanResult::tool_calls(vec![echo_twice(), echo_twice()]),
        PlanResult::final_text("both added"),
    ]);
    vec![
        Agent::builder("team", Arc::new(team))
            .toolset(Arc::new(AgentToolSet::new("agents").agent("echo", "Adds")))
            .build(),
        Agent::builder("echo", Arc::new(echo))
            .toolset(tools.clone())
            .build(),
        Agent::builder("ask", Arc::new(ask))
            .toolset(tools.clone())
            .build(),
        Agent::builder("slow", Arc::new(slow))
            .toolset(tools.clone())
            .build(),
        Agent::builder("nap", Arc::new(nap)).toolset(tools).build(),
        Agent::builder("prompted", Arc::new(prompted::SystemEcho)).build(),
        Agent::builder("recall", Arc::new(recall)).build(),
    ]
}

impl Fixture {
    /// A fixture over a fresh SQLite store.
    pub async fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite:{}", dir.path().join("weft.db").display());
        let store = weft_store::connect(&url).await.unwrap();
        Self::over(store, Some(dir))
    }

    /// A fixture over `store` (which keeps the sessions' history and
    /// memory too), keeping `dir` alive with it.
    pub fn over(store: Arc<dyn FullStore>, dir: Option<tempfile::TempDir>) -> Self {
        let builder = Runtime::builder()
            .session_store(store.clone())
            .prompts(store.clone());
        Self::with_builder(builder, store, dir)
    }

    /// A fixture over a fresh SQLite store whose runtime reads runs through
    /// a [`counting::CountingStore`].
    pub async fn counting() -> (Self, Arc<counting::CountingStore>) {
        Self::counting_with(|b| b).await
    }

    /// Like [`Fixture::counting`], with the runtime's builder adjusted.
    pub async fn counting_with(
        adjust: impl FnOnce(weft_runtime::RuntimeBuilder) -> weft_runtime::RuntimeBuilder,
    ) -> (Self, Arc<counting::CountingStore>) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite:{}", dir.path().join("weft.db").display());
        let store = weft_store::connect(&url).await.unwrap();
        let counting = counting::CountingStore::new(store.clone());
        let builder = Runtime::builder()
            .store(counting.clone())
            .prompts(store.clone());
        (
            Self::with_builder(adjust(builder), store, Some(dir)),
            counting,
        )
    }

    fn with_builder(
        mut builder: weft_runtime::RuntimeBuilder,
        store: Arc<dyn FullStore>,
        dir: Option<tempfile::TempDir>,
    ) -> Self {
        for agent in agents() {
            builder = builder.agent(agent);
        }
        let tenants = Tenants::parse(&format!("tenant-a={TOKEN_A},tenant-b={TOKEN_B}")).unwrap();
        Self {
            state: AppState::new(builder.build(), store, tenants),
            _dir: dir,
            socket: None,
        }
    }

    /// The same fixture, its calls sent over HTTP to a server on a real
    /// socket instead of through the router.
    pub async fn over_socket(mut self) -> Self {
        self.socket = Some(served::Served::start(self.state.clone()).await);
        self
    }

    /// Sends a request through the router, or over the socket when the
    /// fixture has one.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Body>,
    ) -> Reply {
        if let Some(served) = &self.socket {
            let mut request = served.client.request(method, served.url(path));
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            if let Some(body) = body {
                let bytes = body.collect().await.unwrap().to_bytes();
                request = request
                    .header("content-type", "application/json")
                    .body(bytes);
            }
            let response = request.send().await.unwrap();
            let status = response.status();
            let headers = response.headers().clone();
            let bytes = response.bytes().await.unwrap();
            let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            return Reply {
                status,
                headers,
                body,
            };
        }
        let mut request = Request::builder().method(method).uri(path);
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if body.is_some() {
            request = request.header("content-type", "application/json");
        }
        let request = request.body(body.unwrap_or_else(Body::empty)).unwrap();
        let response = weft_server::app(self.state.clone())
            .oneshot(request)
            .await
            .unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, path: &str, token: &str) -> Reply {
        self.call(Method::GET, path, Some(token), None).await
    }

    pub async fn post(&self, path: &str, token: &str, body: Value) -> Reply {
        self.call(
            Method::POST,
            path,
            Some(token),
            Some(Body::from(body.to_string())),
        )
        .await
    }

    /// Posts `{}` to the control endpoint `action` (`pause`, `resume`,
    /// `cancel`) of tenant A's run `run`.
    pub async fn control(&self, run: &str, action: &str) -> Reply {
        self.post(&format!("/v1/runs/{run}/{action}"), TOKEN_A, json!({}))
            .await
    }

    /// Starts a run and returns its id.
    /// Creates a session for `token`'s tenant and returns its generated id.
    pub async fn session(&self, token: &str) -> String {
        let r = self.post("/v1/sessions", token, json!({})).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        r.body["session_id"].as_str().unwrap().to_owned()
    }

    pub async fn start(&self, token: &str, agent: &str, session: Option<&str>) -> String {
        let mut body = json!({"agent": agent, "input": "go"});
        if let Some(s) = session {
            body["session_id"] = json!(s);
        }
        let r = self.post("/v1/runs", token, body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        r.body["run_id"].as_str().unwrap().to_owned()
    }

    /// Polls a run until its phase is `phase`.
    pub async fn wait_phase(&self, token: &str, run_id: &str, phase: &str) {
        for _ in 0..500 {
            let r = self.get(&format!("/v1/runs/{run_id}"), token).await;
            if r.body["phase"] == phase {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("run {run_id} never reached phase {phase}");
    }

    /// Polls a run until its status is `status`.
    pub async fn wait_status(&self, token: &str, run_id: &str, status: &str) -> Value {
        for _ in 0..500 {
            let r = self.get(&format!("/v1/runs/{run_id}"), token).await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.body);
            if r.body["status"] == status {
                return r.body;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("run {run_id} never reached {status}");
    }
}

/// An answer to the clarification `item`.
pub fn clarification(item: &str, text: &str) -> Value {
    json!({"item_id": item, "answer": {"kind": "clarification", "text": text}})
}
