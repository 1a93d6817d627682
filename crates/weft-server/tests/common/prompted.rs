//! A planner that answers with its rendered system prompt, so a test sees
//! which prompt override reached it, and the scenario that uses it.

use async_trait::async_trait;
use axum::http::StatusCode;
use serde_json::{Value, json};
use weft_core::RunId;
use weft_core::event::EventKind;
use weft_core::planner::{PlanInput, PlanResult, PlanResumeInput, Planner, PlannerError};
use weft_core::prompt::template_version;
use weft_core::run::RunOutcome;

use super::{Fixture, TOKEN_A, TOKEN_B};

/// Renders `system` (default: `default for {{ agent }}`) and answers with it.
pub struct SystemEcho;

impl SystemEcho {
    fn answer(input: &PlanInput<'_>) -> Result<PlanResult, PlannerError> {
        let vars = json!({"agent": input.run.agent_id});
        let text = input
            .context
            .render_prompt_or("system", "default for {{ agent }}", &vars)?;
        Ok(PlanResult::final_text(text))
    }
}

#[async_trait]
impl Planner for SystemEcho {
    async fn plan_start(&self, input: PlanInput<'_>) -> Result<PlanResult, PlannerError> {
        Self::answer(&input)
    }

    async fn plan_resume(&self, input: PlanResumeInput<'_>) -> Result<PlanResult, PlannerError> {
        Self::answer(&input.base)
    }
}

/// The answer of a finished `prompted` run and its `prompt_rendered` events.
async fn prompted_run(f: &Fixture, token: &str, session: Option<&str>) -> (String, Vec<Value>) {
    let run_id = f.start(token, "prompted", session).await;
    f.wait_status(token, &run_id, "completed").await;
    let stored = f
        .state
        .runtime
        .store()
        .load_run(&RunId::new(run_id.as_str()))
        .await
        .unwrap()
        .unwrap();
    let answer = match stored.snapshot.outcome() {
        Some(RunOutcome::Response { message, .. }) => message.joined_text(),
        other => panic!("no answer: {other:?}"),
    };
    let events = f
        .state
        .runtime
        .store()
        .read_events(&RunId::new(run_id.as_str()), 0, None)
        .await
        .unwrap();
    let rendered = events
        .into_iter()
        .filter(|e| matches!(e.kind, EventKind::PromptRendered { .. }))
        .map(|e| serde_json::to_value(&e).unwrap())
        .collect();
    (answer, rendered)
}

/// Overrides set through the API reach the `prompted` agent's planner by
/// precedence (session over tenant), each named in a `prompt_rendered`
/// event; another tenant's runs keep the default.
pub async fn override_reaches_the_planner(f: &Fixture) {
    let (answer, rendered) = prompted_run(f, TOKEN_A, None).await;
    assert_eq!(answer, "default for prompted");
    assert_eq!(rendered.len(), 1);
    assert_eq!(rendered[0]["template_id"], "system");
    assert!(rendered[0].get("override").is_none());

    let r = f
        .post(
            "/v1/prompts",
            TOKEN_A,
            json!({"name": "system", "template": "tenant A runs {{ agent }}"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let session = f.session(TOKEN_A).await;
    let r = f
        .post(
            "/v1/prompts",
            TOKEN_A,
            json!({"name": "system", "template": "session only", "session_id": session}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);

    let (answer, rendered) = prompted_run(f, TOKEN_A, None).await;
    assert_eq!(answer, "tenant A runs prompted");
    assert_eq!(rendered[0]["override"]["tenant"], "tenant-a");
    assert_eq!(
        rendered[0]["version"],
        template_version("tenant A runs {{ agent }}")
    );
    // The session's override is more specific than the tenant's.
    let (answer, rendered) = prompted_run(f, TOKEN_A, Some(&session)).await;
    assert_eq!(answer, "session only");
    assert_eq!(rendered[0]["override"]["session_id"], session.as_str());
    // Tenant B's runs keep the default.
    let (answer, _) = prompted_run(f, TOKEN_B, None).await;
    assert_eq!(answer, "default for prompted");
}
