//! The agent file's `[advisor]` section: the built-in `advisor` tool's model
//! and per-run budget, and the provider options its nested call inherits
//! from the agent's model planner.

use std::num::NonZeroU32;
use std::sync::Arc;

use serde::Deserialize;
use weft_core::model::{ModelClient, ModelError};
use weft_models::ModelConfig;
use weft_runtime::advisor::AdvisorConfig;

use super::model::local_loader;

/// The `[advisor]` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdvisorSpec {
    /// The advisor's model id (`anthropic/<model>`, `scripted/<file>`, ...).
    pub model: String,
    /// The server's base URL (required for `compat/` models).
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding the key, instead of the
    /// provider's (as the planner's `api_key_env`).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Advices per run (never reset).
    pub max_uses_per_run: NonZeroU32,
    /// Output token limit of one advice (default 16,384).
    #[serde(default)]
    pub max_output_tokens: Option<NonZeroU32>,
}

/// The provider options of the agent's model planner that the advisor's
/// nested call inherits (none from a scripted planner).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct InheritedOptions {
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Token budget for extended thinking; OpenAI reasoning models get it
    /// as a reasoning effort.
    pub thinking_budget: Option<u32>,
}

impl AdvisorSpec {
    /// The runtime's advisor: its model built, inheriting the agent's
    /// `system` prompt and its planner's provider `options`.
    pub fn config(
        &self,
        system: Option<String>,
        options: InheritedOptions,
    ) -> Result<AdvisorConfig, ModelError> {
        let model = weft_models::build_model(&ModelConfig {
            base_url: self.base_url.clone(),
            api_key_env: self.api_key_env.clone(),
            local_loader: local_loader(),
            ..ModelConfig::new(&self.model)
        })?;
        Ok(self.config_on(model, system, options))
    }

    /// [`config`](Self::config) with `model` instead of the one named.
    pub fn config_on(
        &self,
        model: Arc<dyn ModelClient>,
        system: Option<String>,
        options: InheritedOptions,
    ) -> AdvisorConfig {
        let mut config = AdvisorConfig::new(model, self.max_uses_per_run);
        if let Some(max) = self.max_output_tokens {
            config.max_output_tokens = max;
        }
        config.system = system;
        config.temperature = options.temperature;
        config.thinking_budget = options.thinking_budget;
        config
    }
}

impl super::AgentFile {
    /// The model planner's system prompt before reminders: the instruction,
    /// then the toolsets' instructions (the advisor's guidance block among
    /// them, which the advisor strips from what it inherits).
    pub(super) fn system_prompt(&self) -> Option<String> {
        let sections: Vec<String> = self
            .instructions
            .iter()
            .cloned()
            .chain(self.planner_toolsets().iter().filter_map(|t| {
                weft_tools::capability::find_instructions(&**t).map(|i| i.instructions_text())
            }))
            .filter(|s| !s.trim().is_empty())
            .collect();
        (!sections.is_empty()).then(|| sections.join("\n\n"))
    }

    /// The planner's provider options, passed through to the advisor.
    pub(super) fn provider_options(&self) -> InheritedOptions {
        match &self.planner {
            super::PlannerSpec::Model {
                temperature,
                thinking_budget,
                ..
            } => InheritedOptions {
                temperature: *temperature,
                thinking_budget: *thinking_budget,
            },
            super::PlannerSpec::Scripted { .. } => InheritedOptions::default(),
        }
    }
}
