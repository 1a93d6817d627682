//! The model planner an agent file asks for: which model, how it is
//! prompted, and the local-model engine of this build.

use std::sync::Arc;

use weft_core::model::{ModelClient, ModelError, ToolChoice};
use weft_core::planner::Planner;
use weft_models::{ModelConfig, ModelPlanner, ModelPlannerConfig, ModelPrice};
use weft_tools::ToolSet;

/// How an agent asks its model, beyond the model id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelSettings {
    /// The server's base URL (required for `compat/` models).
    pub base_url: Option<String>,
    /// Output token limit per call.
    pub max_tokens: Option<u32>,
    /// The environment variable holding the key (`api_key_env`), instead
    /// of the provider's.
    pub api_key_env: Option<String>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Token budget for extended thinking (a reasoning effort for OpenAI
    /// reasoning models).
    pub thinking_budget: Option<u32>,
    /// What the model must call until the run has tool results.
    pub tool_choice: ToolChoice,
    /// Whether answers stream (`stream = true | false` in the file; by
    /// default they stream, falling back to whole answers for a server
    /// that cannot stream tool calls).
    pub streaming: weft_models::Streaming,
    /// Offer the model the `ask_user` tool (`ask_user = true`).
    pub ask_tool: bool,
    /// The model's price (`[planner.price]`); when absent, the built-in
    /// list price of a well-known model, else none.
    pub price: Option<ModelPrice>,
}

/// `auto`, `required`, `none`, or else a tool's name.
pub(super) fn parse_tool_choice(s: &str) -> ToolChoice {
    match s {
        "auto" => ToolChoice::Auto,
        "required" => ToolChoice::Required,
        "none" => ToolChoice::None,
        tool => ToolChoice::Tool(tool.to_owned()),
    }
}

/// The local-model engine of this build, if it has one (feature `local`).
pub fn local_loader() -> Option<weft_models::LocalLoader> {
    #[cfg(feature = "local")]
    return Some(weft_local::loader);
    #[cfg(not(feature = "local"))]
    None
}

/// A model planner for model `id`, prompted with `instruction` and the
/// toolsets' own instructions.
pub fn model_planner(
    id: &str,
    instruction: String,
    toolsets: &[Arc<dyn ToolSet>],
    settings: ModelSettings,
) -> Result<Arc<dyn Planner>, ModelError> {
    let config = ModelConfig {
        base_url: settings.base_url.clone(),
        api_key_env: settings.api_key_env.clone(),
        local_loader: local_loader(),
        ..ModelConfig::new(id)
    };
    let model = weft_models::build_model(&config)?;
    Ok(model_planner_on(model, instruction, toolsets, settings))
}

/// A model planner asking `model` (any client, e.g. a recorded one for
/// replay), prompted as [`model_planner`] prompts.
pub fn model_planner_on(
    model: Arc<dyn ModelClient>,
    instruction: String,
    toolsets: &[Arc<dyn ToolSet>],
    settings: ModelSettings,
) -> Arc<dyn Planner> {
    let toolset_instructions = toolsets
        .iter()
        .filter_map(|t| {
            weft_tools::capability::find_instructions(&**t).map(|i| i.instructions_text())
        })
        .collect();
    Arc::new(ModelPlanner::new(
        model,
        ModelPlannerConfig {
            instruction,
            toolset_instructions,
            max_tokens: settings.max_tokens,
            temperature: settings.temperature,
            thinking_budget: settings.thinking_budget,
            tool_choice: settings.tool_choice,
            streaming: settings.streaming,
            ask_tool: settings.ask_tool,
            price: settings.price,
            ..ModelPlannerConfig::default()
        },
    ))
}
