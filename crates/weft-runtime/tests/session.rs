//! Sessions on the durable stores (SQLite and PostgreSQL, see `stores`): a run starts from its session's history
//! under the agent's history policy, its planner reads and writes the
//! session's memory, both survive a restart, and an ended session refuses
//! new runs.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use weft_core::history::HistoryPolicy;
use weft_core::message::{Message, Role};
use weft_core::planner::{PlanInput, PlanResult, PlanResumeInput, Planner, PlannerError};
use weft_core::run::RunOutcome;
use weft_core::session::FullStore;
use weft_core::{RunId, SessionId, Timestamp};
use weft_models::{ScriptTurn, ScriptedModel};
use weft_runtime::{Agent, Runtime, RuntimeError, StartRequest};

#[macro_use]
mod stores;
use stores::Db;

/// Answers with what it was given: the input, the session's history as its
/// memory view shows it, and how many runs the session's memory counted;
/// then counts this run in the memory.
struct Recall;

#[async_trait]
impl Planner for Recall {
    async fn plan_start(&self, input: PlanInput<'_>) -> Result<PlanResult, PlannerError> {
        let memory = input.context.memory();
        let runs = memory.get("runs").and_then(|v| v.as_u64()).unwrap_or(0);
        input.context.remember("runs", Value::from(runs + 1));
        let history: Vec<String> = memory.history().iter().map(Message::joined_text).collect();
        let said = input
            .messages
            .last()
            .map(Message::joined_text)
            .unwrap_or_default();
        Ok(PlanResult::final_text(format!(
            "heard `{said}`; runs before: {runs}; history: [{}]",
            history.join(" | ")
        )))
    }

    async fn plan_resume(&self, input: PlanResumeInput<'_>) -> Result<PlanResult, PlannerError> {
        self.plan_start(input.base).await
    }
}

fn agent(history: HistoryPolicy) -> Agent {
    Agent::builder("recall", Arc::new(Recall))
        .history(history)
        .build()
}

fn runtime(store: Arc<dyn FullStore>, agent: Agent) -> Runtime {
    Runtime::builder().agent(agent).session_store(store).build()
}

on_both_stores!(
    the_second_run_sees_the_first_answer_across_a_restart,
    last_turns_keeps_only_the_recent_turns,
    summarize_compresses_older_turns_with_the_model,
    an_ended_session_refuses_new_runs,
);

async fn ask(runtime: &Runtime, session: &str, text: &str) -> (RunId, String) {
    let handle = runtime
        .start("recall", StartRequest::user(text).session(session))
        .await
        .unwrap();
    match handle.outcome().await.unwrap() {
        RunOutcome::Response { message, .. } => (handle.run_id().clone(), message.joined_text()),
        other => panic!("no answer: {other:?}"),
    }
}

async fn the_second_run_sees_the_first_answer_across_a_restart(db: &Db) {
    let first = {
        let rt = runtime(db.open().await, agent(HistoryPolicy::default()));
        let (_, answer) = ask(&rt, "s1", "my name is Ada").await;
        assert_eq!(
            answer,
            "heard `my name is Ada`; runs before: 0; history: []"
        );
        answer
    };
    // A new runtime on a new connection to the same database.
    let store = db.open().await;
    let rt = runtime(store.clone(), agent(HistoryPolicy::default()));
    let (run, answer) = ask(&rt, "s1", "what is my name?").await;
    assert_eq!(
        answer,
        format!("heard `what is my name?`; runs before: 1; history: [my name is Ada | {first}]")
    );
    // The run's own transcript starts with the history, then its input.
    let stored = store.load_run(&run).await.unwrap().unwrap();
    let roles: Vec<Role> = stored
        .snapshot
        .transcript()
        .iter()
        .map(|m| m.role)
        .collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::User, Role::Assistant]
    );
    // Each completed run added its input and answer to the session, once.
    let session = SessionId::new("s1");
    let entries = store.read_transcript(&session, 0, None).await.unwrap();
    let texts: Vec<String> = entries.iter().map(|e| e.message.joined_text()).collect();
    assert_eq!(
        texts,
        [
            "my name is Ada",
            first.as_str(),
            "what is my name?",
            answer.as_str()
        ]
    );
    assert_eq!(entries[3].run_id.as_ref(), Some(&run));
    assert_eq!(
        store.memory_get(&session, "runs").await.unwrap(),
        Some(Value::from(2))
    );
    // Another session shares nothing.
    let (_, other) = ask(&rt, "s2", "hi").await;
    assert_eq!(other, "heard `hi`; runs before: 0; history: []");
}

async fn last_turns_keeps_only_the_recent_turns(db: &Db) {
    let rt = runtime(
        db.open().await,
        agent(HistoryPolicy::LastTurns { turns: 1 }),
    );
    ask(&rt, "s", "one").await;
    let (_, second) = ask(&rt, "s", "two").await;
    let (_, third) = ask(&rt, "s", "three").await;
    assert_eq!(
        third,
        format!("heard `three`; runs before: 2; history: [two | {second}]")
    );
    let none = runtime(
        db.open().await,
        agent(HistoryPolicy::LastTurns { turns: 0 }),
    );
    let (_, fourth) = ask(&none, "s", "four").await;
    assert_eq!(fourth, "heard `four`; runs before: 3; history: []");
}

async fn summarize_compresses_older_turns_with_the_model(db: &Db) {
    let model = Arc::new(ScriptedModel::new(
        "summarizer",
        vec![ScriptTurn {
            text: Some("The user is Ada.".into()),
            ..ScriptTurn::default()
        }],
    ));
    let agent = Agent::builder("recall", Arc::new(Recall))
        .model("scripted/summarizer", model.clone())
        .history(HistoryPolicy::Summarize {
            keep_turns: 1,
            model: Some("scripted/summarizer".into()),
        })
        .build();
    let rt = runtime(db.open().await, agent);
    let (_, first) = ask(&rt, "s", "my name is Ada").await;
    // One turn of history: nothing older to summarize, no model call.
    let (_, second) = ask(&rt, "s", "I like tea").await;
    assert!(second.ends_with(&format!("history: [my name is Ada | {first}]")));
    assert!(model.requests().is_empty());
    let (_, third) = ask(&rt, "s", "who am I?").await;
    assert_eq!(
        third,
        format!(
            "heard `who am I?`; runs before: 2; history: [Summary of the earlier \
             conversation in this session:\nThe user is Ada. | I like tea | {second}]"
        )
    );
    let asked = model.requests();
    assert_eq!(asked.len(), 1);
    let prompt = asked[0].messages[0].joined_text();
    assert!(prompt.contains("User: my name is Ada"), "{prompt}");
    assert!(!prompt.contains("I like tea"), "{prompt}");
}

async fn an_ended_session_refuses_new_runs(db: &Db) {
    let store = db.open().await;
    let rt = runtime(store.clone(), agent(HistoryPolicy::default()));
    ask(&rt, "s", "hello").await;
    store
        .end_session(&SessionId::new("s"), Timestamp::from_millis(1))
        .await
        .unwrap();
    let refused = rt
        .start("recall", StartRequest::user("again").session("s"))
        .await;
    assert!(
        matches!(&refused, Err(RuntimeError::SessionEnded(s)) if s.as_str() == "s"),
        "{:?}",
        refused.err()
    );
}
