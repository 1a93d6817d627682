//! What the model planner records of how it asks its model: the
//! [`ModelSetup`] of a run's first model call (the model, the system
//! prompt, the tools offered and the planner's settings), kept in the run's
//! state under [`MODEL_SETUP_KEY`] for a replay to compare with.

use std::collections::BTreeMap;

use weft_core::model::{MODEL_SETUP_KEY, ModelRequest, ModelSetup, ToolChoice};
use weft_core::planner::PlanInput;

use super::{ModelPlanner, Streaming};

impl ModelPlanner {
    /// Records the setup of `request` in the run's state, unless a
    /// setup is already there (the run's first call is kept).
    pub(super) fn record_setup(&self, input: &PlanInput<'_>, request: &ModelRequest) {
        if input.context.state_get(MODEL_SETUP_KEY).is_some() {
            return;
        }
        let setup = ModelSetup::new(
            self.model.id(),
            request.system.as_deref(),
            input.tools,
            self.settings(),
        );
        if let Ok(value) = serde_json::to_value(&setup) {
            input.context.state_set(MODEL_SETUP_KEY, value);
        }
    }

    /// The planner's settings as shown, by name; an unset one is absent.
    pub fn settings(&self) -> BTreeMap<String, String> {
        let c = &self.config;
        let mut settings = BTreeMap::new();
        let mut set = |name: &str, value: Option<String>| {
            if let Some(v) = value {
                settings.insert(name.to_owned(), v);
            }
        };
        set("max_tokens", c.max_tokens.map(|v| v.to_string()));
        set("temperature", c.temperature.map(|v| v.to_string()));
        set("thinking_budget", c.thinking_budget.map(|v| v.to_string()));
        let choice = match &c.tool_choice {
            ToolChoice::Auto => "auto".to_owned(),
            ToolChoice::Required => "required".to_owned(),
            ToolChoice::None => "none".to_owned(),
            ToolChoice::Tool(name) => name.clone(),
        };
        set("tool_choice", Some(choice));
        set("keep_tool_choice", Some(c.keep_tool_choice.to_string()));
        let stream = match c.streaming {
            Streaming::Auto => "auto",
            Streaming::Always => "always",
            Streaming::Never => "never",
        };
        set("stream", Some(stream.to_owned()));
        set("ask_user", Some(c.ask_tool.to_string()));
        settings
    }
}
