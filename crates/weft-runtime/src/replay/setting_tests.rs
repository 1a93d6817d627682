//! Replay of a run whose planner depends on what the log does not hold:
//! the run's labels, the prompt override it rendered, its session's
//! history and memory. Read from the log alone the run replays with none of
//! them and differs; restored from the store it replays identically.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use weft_core::planner::{PlanInput, PlanResult, PlanResumeInput, Planner, PlannerError};
use weft_core::prompt::{PromptOverride, PromptScope};
use weft_core::run::RunOutcome;
use weft_core::session::FullStore;
use weft_core::tool::{Labels, ToolError};
use weft_core::{RunId, Timestamp};
use weft_tools::FnToolSet;

use super::*;
use crate::{Agent, Runtime, StartRequest};

/// Counts its planning calls in the session's memory (`n`, read and
/// written every call) and answers on its third call of a run with what it
/// sees: the run's `team` label, the `greeting` prompt, the count and the
/// history's length.
struct Observant;

impl Observant {
    fn next(&self, input: &PlanInput<'_>) -> Result<PlanResult, PlannerError> {
        let ctx = input.context;
        let n = ctx.memory().get("n").and_then(|v| v.as_u64()).unwrap_or(0);
        ctx.remember("n", Value::from(n + 1));
        let calls = ctx.state_get("calls").and_then(|v| v.as_u64()).unwrap_or(0);
        ctx.state_set("calls", Value::from(calls + 1));
        if calls < 2 {
            let call = weft_core::planner::ToolCallRequest::new("t.add", json!({"a": 1, "b": 2}));
            return Ok(PlanResult::tool_calls(vec![call]));
        }
        let greeting = ctx.render_prompt_or("greeting", "hello", &json!({}))?;
        let team = input.run.labels.get("team").cloned().unwrap_or_default();
        let history = ctx.memory().history().len();
        Ok(PlanResult::final_text(format!(
            "{team}|{greeting}|{n}|{history}"
        )))
    }
}

#[async_trait]
impl Planner for Observant {
    async fn plan_start(&self, input: PlanInput<'_>) -> Result<PlanResult, PlannerError> {
        self.next(&input)
    }

    async fn plan_resume(&self, input: PlanResumeInput<'_>) -> Result<PlanResult, PlannerError> {
        self.next(&input.base)
    }
}

#[derive(Deserialize, JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

fn agent() -> Agent {
    let tools = FnToolSet::new("t").tool("add", "Adds", |x: Add| async move {
        Ok::<_, ToolError>(x.a + x.b)
    });
    Agent::builder("observant", Arc::new(Observant))
        .toolset(Arc::new(tools))
        .build()
}

fn greeting(template: &str, at: u64) -> PromptOverride {
    PromptOverride {
        name: "greeting".into(),
        scope: PromptScope {
            labels: Labels::from([("team".to_owned(), "blue".to_owned())]),
            ..PromptScope::default()
        },
        template: template.into(),
        updated_at: Timestamp::from_millis(at),
    }
}

/// Runs the agent to its end in session `s` with the label `team=blue`.
async fn run(runtime: &Runtime) -> (RunId, String) {
    let request = StartRequest {
        labels: Labels::from([("team".to_owned(), "blue".to_owned())]),
        ..StartRequest::user("go").session("s")
    };
    let run = runtime.start("observant", request).await.unwrap();
    match run.outcome().await.unwrap() {
        RunOutcome::Response { message, .. } => (run.run_id().clone(), message.joined_text()),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_replays_identically_once_restored_from_its_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let store: Arc<dyn FullStore> = weft_store::connect(db.to_str().unwrap()).await.unwrap();
    store
        .set_prompt_override(&greeting("hi from the override", 1))
        .await
        .unwrap();
    let runtime = Runtime::builder()
        .agent(agent())
        .session_store(store.clone())
        .prompts(store.clone())
        .build();
    let (_, first) = run(&runtime).await;
    assert_eq!(first, "blue|hi from the override|2|0");
    let (second, answer) = run(&runtime).await;
    // The memory went on counting; the history is the first run's turn.
    assert_eq!(answer, "blue|hi from the override|5|2");

    let events = store.read_events(&second, 0, None).await.unwrap();
    let mut recording = Recording::from_events(&second, &events).unwrap();
    let bare = replay(&agent(), &recording).await.unwrap();
    let Verdict::Differs { difference } = &bare.verdict else {
        panic!("{bare:?}");
    };
    let text = difference.render().join("\n");
    assert!(text.contains(r#"final answer "|hello|2|0""#), "{text}");

    recording.restore_from(&*store).await.unwrap();
    assert_eq!(recording.history_len, 2);
    assert_eq!(recording.memory.get("n"), Some(&json!(3)));
    assert_eq!(recording.overrides.len(), 1);
    let restored = replay(&agent(), &recording).await.unwrap();
    assert_eq!(restored.verdict, Verdict::Identical, "{restored:?}");
    assert_eq!(restored.matched, 3);

    // An override changed since the run cannot be restored: its prompt
    // renders from the agent's own.
    store
        .set_prompt_override(&greeting("hi from a newer override", 2))
        .await
        .unwrap();
    let mut recording = Recording::from_events(&second, &events).unwrap();
    recording.restore_from(&*store).await.unwrap();
    assert!(recording.overrides.is_empty());
    let report = replay(&agent(), &recording).await.unwrap();
    let Verdict::Differs { difference } = &report.verdict else {
        panic!("{report:?}");
    };
    let text = difference.render().join("\n");
    assert!(text.contains(r#"final answer "blue|hello|5|2""#), "{text}");
}
