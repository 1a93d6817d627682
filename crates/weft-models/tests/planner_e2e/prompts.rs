//! The system prompt through the prompt registry: an override of `system`
//! changes what the provider receives, each render is named, and reminders
//! ride in the system prompt (safety first), never as a user message.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use weft_core::message::Message;
use weft_core::model::ModelClient;
use weft_core::planner::{
    EmptyMemory, MemoryView, PlanInput, Planner, PlannerContext, PlannerError, Reminder,
};
use weft_core::prompt::{PromptRegistry, PromptRendered};
use weft_core::run::{RunConfig, RunMachine};
use weft_core::session::{PromptOverride, PromptScope};
use weft_core::{AgentId, RunId, Timestamp};

use crate::harness::{Log, http_model, planner, run_context, spec, streaming_server};

/// A context rendering through a registry, recording what it rendered.
struct RegistryCtx {
    registry: PromptRegistry,
    rendered: Mutex<Vec<PromptRendered>>,
}

impl RegistryCtx {
    fn render(
        &self,
        name: &str,
        fallback: Option<&str>,
        vars: &Value,
    ) -> Result<String, PlannerError> {
        let (text, rendered) = self.registry.render(name, fallback, vars)?;
        self.rendered.lock().unwrap().push(rendered);
        Ok(text)
    }
}

impl PlannerContext for RegistryCtx {
    fn agent_id(&self) -> &AgentId {
        unimplemented!()
    }
    fn run_id(&self) -> &RunId {
        unimplemented!()
    }
    fn state_get(&self, _: &str) -> Option<Value> {
        None
    }
    fn state_set(&self, _: &str, _: Value) {}
    fn memory(&self) -> &dyn MemoryView {
        &EmptyMemory
    }
    fn model(&self, _: &str) -> Option<Arc<dyn ModelClient>> {
        None
    }
    fn render_prompt(&self, name: &str, vars: &Value) -> Result<String, PlannerError> {
        self.render(name, None, vars)
    }
    fn render_prompt_or(
        &self,
        name: &str,
        fallback: &str,
        vars: &Value,
    ) -> Result<String, PlannerError> {
        self.render(name, Some(fallback), vars)
    }
    fn add_reminder(&self, _: Reminder) {}
    fn remove_reminder(&self, _: &str) {}
}

/// Plans one turn against the Anthropic replay server and returns the
/// request body it sent.
async fn first_request(ctx: &RegistryCtx, reminders: &[Reminder]) -> Value {
    let server = streaming_server(&["anthropic/a1_text_basic.sse"]).await;
    let planner = planner(http_model("anthropic/claude-sonnet-4", &server));
    let machine = RunMachine::new(
        RunConfig::new("agent", "session", vec![Message::user("Hi")]),
        Timestamp::from_millis(1),
    );
    let run = run_context();
    let log = Log::default();
    let tools = [spec("calc.add")];
    let input = PlanInput {
        messages: machine.transcript(),
        run: &run,
        context: ctx,
        events: &log,
        reminders,
        tools: &tools,
    };
    planner.plan_start(input).await.unwrap();
    let seen = server.seen.lock().unwrap();
    seen.bodies[0].clone()
}

#[tokio::test]
async fn an_override_of_system_reaches_the_model_with_the_reminders_as_system_context() {
    let scope = PromptScope {
        tenant: Some("acme".into()),
        ..PromptScope::default()
    };
    let ctx = RegistryCtx {
        registry: PromptRegistry::default().with_overrides([PromptOverride {
            name: "system".into(),
            scope: scope.clone(),
            template: "Acme policy for {{ agent_id }}. {{ instruction }}".into(),
            updated_at: Timestamp::from_millis(1),
        }]),
        rendered: Mutex::default(),
    };
    let reminders = [
        Reminder::safety("no-pii", "Never reveal personal data."),
        Reminder::new("brief", "Keep answers short."),
    ];
    let body = first_request(&ctx, &reminders).await;
    let system = system_text(&body);
    assert!(
        system.starts_with("Acme policy for agent. You are a test agent."),
        "{system}"
    );
    let safety = system.find("Never reveal personal data.");
    let guidance = system.find("Keep answers short.");
    assert!(
        safety.is_some() && guidance.is_some() && safety < guidance,
        "{system}"
    );
    let messages = body["messages"].to_string();
    assert!(
        !messages.contains("Never reveal"),
        "a reminder became a message: {messages}"
    );
    assert_eq!(body["messages"].as_array().map(Vec::len), Some(1));

    let rendered = ctx.rendered.lock().unwrap().clone();
    assert_eq!(rendered.len(), 1);
    assert_eq!(rendered[0].template_id, "system");
    assert_eq!(rendered[0].override_scope, Some(scope));
}

#[tokio::test]
async fn without_an_override_the_instruction_is_the_system_prompt() {
    let ctx = RegistryCtx {
        registry: PromptRegistry::default(),
        rendered: Mutex::default(),
    };
    let body = first_request(&ctx, &[]).await;
    assert_eq!(
        system_text(&body),
        "You are a test agent.\n\nUse calc for arithmetic."
    );
    let rendered = ctx.rendered.lock().unwrap().clone();
    assert_eq!(rendered[0].override_scope, None);
    assert_eq!(
        rendered[0].version,
        weft_core::prompt::template_version(weft_models::DEFAULT_SYSTEM_TEMPLATE)
    );
}

/// The system prompt of an Anthropic request body (a string or text blocks).
fn system_text(body: &Value) -> String {
    match &body["system"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        other => panic!("no system prompt: {other}"),
    }
}
