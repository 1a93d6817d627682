use std::sync::{Arc, Mutex};

use serde_json::json;
use weft_core::ToolCallId;
use weft_core::message::Thinking;
use weft_core::model::Usage;
use weft_core::planner::{PlannerContext, PlannerEvents};
use weft_core::prompt::{PromptRendered, template_version};
use weft_core::session::{PromptOverride, PromptScope};
use weft_core::tool::Labels;
use weft_core::{RunId, Timestamp};

use super::Ctx;
use crate::agent::Agent;
use crate::scripted::ScriptedPlanner;

#[derive(Default)]
struct Rendered(Mutex<Vec<PromptRendered>>);

impl PlannerEvents for Rendered {
    fn assistant_chunk(&self, _: &str) {}
    fn tool_call_args_delta(&self, _: &ToolCallId, _: &str, _: &str) {}
    fn thinking_block(&self, _: &Thinking) {}
    fn planner_thought(&self, _: &str, _: &Labels) {}
    fn usage_delta(&self, _: &Usage) {}
    fn prompt_rendered(&self, rendered: &PromptRendered) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(rendered.clone());
    }
}

#[test]
fn prompts_render_through_the_registry_and_are_recorded() {
    let agent = Agent::builder("a", Arc::new(ScriptedPlanner::new(Vec::new())))
        .prompt("greet", "Hi {{ name }}")
        .build();
    let run_id = RunId::new("r1");
    let state = Default::default();
    let events = Rendered::default();
    let scope = PromptScope {
        tenant: Some("acme".into()),
        ..PromptScope::default()
    };
    let overrides = vec![PromptOverride {
        name: "system".into(),
        scope: scope.clone(),
        template: "Acme says {{ instruction }}".into(),
        updated_at: Timestamp::from_millis(1),
    }];
    let ctx = Ctx::new(&agent, &run_id, &state).with_prompts(overrides, &events);

    let vars = json!({"name": "Ada", "instruction": "be brief"});
    assert_eq!(ctx.render_prompt("greet", &vars).as_deref(), Ok("Hi Ada"));
    assert_eq!(
        ctx.render_prompt_or("system", "{{ instruction }}", &vars)
            .as_deref(),
        Ok("Acme says be brief")
    );
    let err = ctx.render_prompt("greet", &json!({})).err();
    assert!(err.is_some_and(|e| e.message.contains("greet")));
    assert!(ctx.render_prompt("missing", &vars).is_err());

    let seen = events.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert_eq!(
        seen,
        [
            PromptRendered {
                template_id: "greet".into(),
                version: template_version("Hi {{ name }}"),
                override_scope: None,
            },
            PromptRendered {
                template_id: "system".into(),
                version: template_version("Acme says {{ instruction }}"),
                override_scope: Some(scope),
            },
        ]
    );
}
