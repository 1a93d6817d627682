//! The advisor tool end to end: a scripted planner asks it, a fake model
//! answers (recording the exact prompt); advice streams as `advice` deltas,
//! failures and empty answers refund the use, a spent budget is
//! `limit_reached`, a mixed batch runs nothing, and the budget survives a
//! restart on SQLite and PostgreSQL.

use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures_util::StreamExt as _;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use sqlx::{Connection, PgConnection};
use weft_core::AwaitItemId;
use weft_core::awaiting::{AwaitAnswer, AwaitItem, Clarification};
use weft_core::event::{EventKind, RunEvent};
use weft_core::message::Message;
use weft_core::model::{
    ChunkStream, ModelClient, ModelError, ModelRequest, ModelSummary, StopReason, StreamChunk,
};
use weft_core::planner::{PlanResult, ToolCallRequest};
use weft_core::run::RunOutcome;
use weft_core::store::{RunStatus, RunStore};
use weft_core::tool::{ToolError, ToolResultBody};
use weft_runtime::advisor::{self, AdvisorConfig, GUIDANCE, SYSTEM};
use weft_runtime::{Agent, EventStream, Runtime, ScriptedPlanner, StartRequest};
use weft_tools::FnToolSet;

/// One scripted answer of the fake model.
enum Reply {
    Text(Vec<&'static str>),
    /// Some text, then a stream error.
    Broken(Vec<&'static str>, ModelError),
    /// Some text, then nothing ever again (the process dies meanwhile).
    Hang(Vec<&'static str>),
}

/// A model that answers from a script and records every request.
struct FakeModel {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<ModelRequest>>,
}

impl FakeModel {
    fn new(replies: Vec<Reply>) -> Arc<Self> {
        Arc::new(Self {
            replies: Mutex::new(replies.into()),
            requests: Mutex::new(Vec::new()),
        })
    }

    fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait]
impl ModelClient for FakeModel {
    fn id(&self) -> &str {
        "fake/advisor"
    }

    async fn complete(&self, _: &ModelRequest) -> Result<ModelSummary, ModelError> {
        Err(ModelError::Config {
            message: "complete is not used".into(),
        })
    }

    async fn stream(&self, request: &ModelRequest) -> Result<ChunkStream, ModelError> {
        self.requests.lock().unwrap().push(request.clone());
        let reply = self.replies.lock().unwrap().pop_front();
        let text = |parts: Vec<&'static str>| {
            parts
                .into_iter()
                .map(|t| Ok(StreamChunk::TextDelta { text: t.into() }))
                .collect::<Vec<_>>()
        };
        let chunks = match reply {
            Some(Reply::Text(parts)) => {
                let mut c = text(parts);
                c.push(Ok(StreamChunk::Stop {
                    reason: StopReason::EndTurn,
                }));
                c
            }
            Some(Reply::Broken(parts, e)) => {
                let mut c = text(parts);
                c.push(Err(e));
                c
            }
            Some(Reply::Hang(parts)) => {
                let start = futures_util::stream::iter(text(parts));
                return Ok(Box::pin(start.chain(futures_util::stream::pending())));
            }
            None => vec![Err(ModelError::Config {
                message: "the script is spent".into(),
            })],
        };
        Ok(Box::pin(futures_util::stream::iter(chunks)))
    }
}

#[derive(Deserialize, JsonSchema)]
struct Empty {}

fn ask(question: &str) -> PlanResult {
    PlanResult::tool_calls(vec![ToolCallRequest::new(
        "advisor",
        json!({ "question": question }),
    )])
}

fn clarification() -> PlanResult {
    PlanResult::await_items(vec![AwaitItem::Clarification(Clarification {
        id: AwaitItemId::new("q"),
        question: "go on?".into(),
        missing_fields: vec![],
        restrict_to_tool: None,
        example_input: None,
        clarifying_prompt: None,
    })])
}

fn agent(model: Arc<FakeModel>, uses: u32, turns: Vec<PlanResult>) -> Agent {
    let mut config = AdvisorConfig::new(model, NonZeroU32::new(uses).unwrap());
    config.system = Some(format!("You build things.\n\n{GUIDANCE}"));
    config.thinking_budget = Some(2048);
    let tools = FnToolSet::new("t").tool("noop", "Does nothing", |_: Empty| async move {
        Ok::<_, ToolError>("ok")
    });
    let planner = Arc::new(ScriptedPlanner::new(turns).with_finalize("done"));
    Agent::builder("a", planner)
        .toolset(Arc::new(tools))
        .advisor(config)
        .build()
}

async fn collect(mut events: EventStream) -> Vec<RunEvent> {
    let mut out = Vec::new();
    while let Some(e) = events.next().await {
        out.push(e.unwrap());
    }
    out
}

/// Every finished call's result, in order: the JSON, or the error's message.
fn results(events: &[RunEvent]) -> Vec<Value> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolFinished { output } => Some(match &output.result {
                ToolResultBody::Json(v) => v.clone(),
                ToolResultBody::Error(e) => json!({ "error_message": e.message }),
                other => json!({ "other": format!("{other:?}") }),
            }),
            _ => None,
        })
        .collect()
}

fn deltas(events: &[RunEvent]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolOutputDelta { stream, delta, .. } => {
                Some((stream.clone(), delta.clone()))
            }
            _ => None,
        })
        .collect()
}

async fn run(agent: Agent) -> Vec<RunEvent> {
    let rt = Runtime::builder().agent(agent).build();
    let handle = rt
        .start("a", StartRequest::user("build a bridge"))
        .await
        .unwrap();
    let events = collect(handle.events().await.unwrap()).await;
    handle.outcome().await.unwrap();
    events
}

#[tokio::test]
async fn advice_streams_and_the_exact_prompt_is_sent() {
    let model = FakeModel::new(vec![Reply::Text(vec!["Use ", "steel."])]);
    let events = run(agent(model.clone(), 2, vec![ask("Which material?")])).await;
    assert_eq!(
        results(&events),
        vec![json!({
            "type": "advice",
            "advice": "Use steel.",
            "error": null,
            "advisor_model": "fake/advisor",
            "remaining_uses": 1,
        })]
    );
    assert_eq!(
        deltas(&events),
        vec![
            ("advice".to_owned(), "Use ".to_owned()),
            ("advice".to_owned(), "steel.".to_owned()),
        ]
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(
        sent.system.as_deref(),
        Some(format!("You build things.\n\n{SYSTEM}").as_str())
    );
    assert_eq!(
        sent.messages,
        vec![
            Message::user("build a bridge"),
            Message::user("Which material?")
        ]
    );
    assert!(sent.tools.is_empty());
    assert_eq!(sent.max_tokens, Some(advisor::DEFAULT_MAX_OUTPUT_TOKENS));
    assert_eq!(sent.thinking_budget, Some(2048));
}

#[tokio::test]
async fn failures_and_empty_answers_refund_and_a_spent_budget_is_limit_reached() {
    let model = FakeModel::new(vec![
        Reply::Broken(
            vec![],
            ModelError::Config {
                message: "no key".into(),
            },
        ),
        Reply::Text(vec!["  "]),
        Reply::Text(vec!["Go."]),
    ]);
    let turns = vec![ask("one?"), ask("two?"), ask("three?"), ask("four?")];
    let events = run(agent(model.clone(), 1, turns)).await;
    let got: Vec<(Value, Value)> = results(&events)
        .into_iter()
        .map(|v| (v["type"].clone(), v["remaining_uses"].clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (json!("error"), json!(1)),
            (json!("error"), json!(1)),
            (json!("advice"), json!(0)),
            (json!("limit_reached"), json!(0)),
        ]
    );
    // The spent budget asks no model.
    assert_eq!(model.requests().len(), 3);
}

#[tokio::test]
async fn a_retried_call_resets_the_streamed_advice() {
    let overloaded = ModelError::Stream {
        error_type: "overloaded_error".into(),
        message: "busy".into(),
        retryable: true,
    };
    let model = FakeModel::new(vec![
        Reply::Broken(vec!["Half"], overloaded),
        Reply::Text(vec!["Whole."]),
    ]);
    let events = run(agent(model.clone(), 1, vec![ask("q?")])).await;
    assert_eq!(
        deltas(&events),
        vec![
            ("advice".to_owned(), "Half".to_owned()),
            ("advice_reset".to_owned(), String::new()),
            ("advice".to_owned(), "Whole.".to_owned()),
        ]
    );
    assert_eq!(results(&events)[0]["advice"], json!("Whole."));
    assert_eq!(model.requests().len(), 2);
}

#[tokio::test]
async fn the_advisor_must_run_alone() {
    let model = FakeModel::new(vec![Reply::Text(vec!["unused"])]);
    let mixed = PlanResult::tool_calls(vec![
        ToolCallRequest::new("advisor", json!({"question": "q?"})),
        ToolCallRequest::new("t.noop", json!({})),
    ]);
    let events = run(agent(model.clone(), 1, vec![mixed])).await;
    assert_eq!(
        results(&events),
        vec![
            json!({"error_message": "`advisor` must be called alone"}),
            json!({"error_message": "`t.noop` was skipped because `advisor` must be called alone"}),
        ]
    );
    assert!(model.requests().is_empty());
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::ToolStarted { .. }))
    );
}

/// Asks once (spending the only use), waits for an answer, and after a
/// restart on the same store asks again: the budget is still spent.
async fn budget_survives_a_restart(store: Arc<dyn RunStore>) {
    let turns = || vec![ask("first?"), clarification(), ask("second?")];
    let first_model = FakeModel::new(vec![Reply::Text(vec!["First."])]);
    let rt = Runtime::builder()
        .agent(agent(first_model.clone(), 1, turns()))
        .store(store.clone())
        .build();
    let handle = rt.start("a", StartRequest::user("go")).await.unwrap();
    let run_id = handle.run_id().clone();
    loop {
        let r = store.load_run(&run_id).await.unwrap().unwrap();
        if r.record.status == RunStatus::Awaiting {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    drop(handle);
    drop(rt);

    let second_model = FakeModel::new(vec![Reply::Text(vec!["Second."])]);
    let rt = Runtime::builder()
        .agent(agent(second_model.clone(), 1, turns()))
        .store(store.clone())
        .build();
    let events = rt.subscribe(&run_id, 0).await.unwrap();
    rt.answer(
        &run_id,
        &AwaitItemId::new("q"),
        AwaitAnswer::Clarification { text: "yes".into() },
    )
    .await
    .unwrap();
    let outcome = rt.outcome(&run_id).await.unwrap();
    assert!(matches!(outcome, RunOutcome::Response { .. }));
    let kinds: Vec<Value> = results(&collect(events).await)
        .into_iter()
        .map(|v| v["type"].clone())
        .collect();
    assert_eq!(kinds, vec![json!("advice"), json!("limit_reached")]);
    assert_eq!(first_model.requests().len(), 1);
    assert!(second_model.requests().is_empty());
}

/// A process dies while the advisor answers: the use was not committed, so
/// the recovered run asks again and is charged once.
async fn a_call_cut_by_a_crash_is_asked_again_and_charged_once(store: Arc<dyn RunStore>) {
    let turns = || vec![ask("first?"), ask("second?")];
    let first_model = FakeModel::new(vec![Reply::Hang(vec!["Par"])]);
    let first = Runtime::builder()
        .agent(agent(first_model.clone(), 2, turns()))
        .store(store.clone())
        .build();
    let handle = first.start("a", StartRequest::user("go")).await.unwrap();
    let run_id = handle.run_id().clone();
    let mut events = handle.events().await.unwrap();
    loop {
        let e = events.next().await.unwrap().unwrap();
        if matches!(e.kind, EventKind::ToolOutputDelta { .. }) {
            break;
        }
    }
    first.shutdown().await;

    let second_model = FakeModel::new(vec![Reply::Text(vec!["One."]), Reply::Text(vec!["Two."])]);
    let second = Runtime::builder()
        .agent(agent(second_model.clone(), 2, turns()))
        .store(store.clone())
        .build();
    assert!(second.recover(&run_id).await.unwrap());
    second.outcome(&run_id).await.unwrap();
    let stored = store.load_run(&run_id).await.unwrap().unwrap();
    let got: Vec<(Value, Value)> = stored
        .snapshot
        .tool_outputs()
        .iter()
        .filter_map(|o| match &o.result {
            ToolResultBody::Json(v) => Some((v["advice"].clone(), v["remaining_uses"].clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        got,
        vec![(json!("One."), json!(1)), (json!("Two."), json!(0))]
    );
    assert_eq!(
        stored
            .snapshot
            .uses_of(&weft_core::tool::ToolIdent::new(advisor::TOOL)),
        2
    );
    assert!(
        stored
            .snapshot
            .state()
            .get(advisor::LEGACY_USES_KEY)
            .is_none()
    );
    assert_eq!(second_model.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_survives_a_restart_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("advisor.db");
    let store = weft_store::connect(path.to_str().unwrap()).await.unwrap();
    budget_survives_a_restart(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_advice_charges_once_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("advisor.db");
    let store = weft_store::connect(path.to_str().unwrap()).await.unwrap();
    a_call_cut_by_a_crash_is_asked_again_and_charged_once(store).await;
}

/// Runs `scenario` on a fresh schema of the local PostgreSQL, dropped after.
async fn on_postgres<F, Fut>(name: &str, scenario: F)
where
    F: FnOnce(Arc<dyn RunStore>) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let base = std::env::var("WEFT_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let schema = format!("advisor_{name}_{}", std::process::id());
    let mut conn = match PgConnection::connect(&base).await {
        Ok(conn) => conn,
        Err(e) => panic!("PostgreSQL is not reachable at {base}: {e}"),
    };
    let drop_schema = format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE");
    sqlx::query(&drop_schema).execute(&mut conn).await.unwrap();
    let separator = if base.contains('?') { '&' } else { '?' };
    let store = weft_store::connect(&format!("{base}{separator}schema={schema}"))
        .await
        .unwrap();
    scenario(store).await;
    sqlx::query(&drop_schema).execute(&mut conn).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_survives_a_restart_on_postgres() {
    on_postgres("restart", budget_survives_a_restart).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_advice_charges_once_on_postgres() {
    on_postgres(
        "crash",
        a_call_cut_by_a_crash_is_asked_again_and_charged_once,
    )
    .await;
}
