//! Agent files: an agent described in TOML (planner, toolsets, policy), as
//! `weft run <agent.toml>` reads them. See `examples/*.toml`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use weft_core::model::{ModelClient, ModelError};
use weft_core::planner::Planner;
use weft_core::run::Policy;
use weft_core::tool::ToolIdent;
use weft_runtime::advisor::AdvisorToolSet;
use weft_runtime::{Agent, ScriptedPlanner};
use weft_tools::ToolSet;

use crate::toolset_spec::ToolsetSpec;

mod advisor;
mod error;
mod history;
mod model;
mod parse_error;
mod planner;
mod policy;
mod price;
mod scripted;
mod team;
mod tool_choice;

pub use advisor::{AdvisorSpec, InheritedOptions};
pub use error::AgentFileError;
pub use history::{HistorySpec, SummarizeSpec};
pub use model::{ModelSettings, local_loader, model_planner, model_planner_on};
pub use planner::PlannerSpec;
pub use policy::PolicySpec;
pub use price::{PriceError, PriceSpec};
pub use scripted::{CallSpec, TurnSpec};
pub use team::{MAX_TEAM, load_team, team_files};

/// An agent file's contents.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentFile {
    /// The agent's id.
    pub id: String,
    /// The agent's instructions (its system prompt).
    #[serde(default)]
    pub instructions: Option<String>,
    /// The agent's toolsets: built-in names (`calc`, `text`) or
    /// `[[toolsets]]` tables with a `type` (`type = "mcp"`).
    #[serde(default)]
    pub toolsets: Vec<ToolsetSpec>,
    /// How the agent decides.
    pub planner: PlannerSpec,
    /// Caps and budgets.
    #[serde(default)]
    pub policy: PolicySpec,
    /// Which of its session's earlier messages a run starts from.
    #[serde(default)]
    pub history: HistorySpec,
    /// The built-in `advisor` tool, when the agent has one.
    #[serde(default)]
    pub advisor: Option<AdvisorSpec>,
    /// `[prompts]`: prompt templates by id (MiniJinja; `system` is the model
    /// planner's system prompt), which operators' overrides replace.
    #[serde(default)]
    pub prompts: std::collections::BTreeMap<String, String>,
}

impl AgentFile {
    /// Reads and parses an agent file.
    pub fn load(path: &Path) -> Result<Self, AgentFileError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| AgentFileError::Read {
            path: shown.clone(),
            source,
        })?;
        Self::parse(&text, &shown)
    }

    /// Parses an agent file's text; `path` is used in messages.
    pub fn parse(text: &str, path: &str) -> Result<Self, AgentFileError> {
        let file: AgentFile = toml::from_str(text).map_err(|e| AgentFileError::Parse {
            path: path.to_owned(),
            message: parse_error::message(text, &e),
        })?;
        file.check(path)?;
        Ok(file)
    }

    fn check(&self, path: &str) -> Result<(), AgentFileError> {
        let invalid = |message: String| AgentFileError::Invalid {
            path: path.to_owned(),
            message,
        };
        if self.id.trim().is_empty() {
            return Err(invalid("`id` must not be empty".into()));
        }
        for (i, spec) in self.toolsets.iter().enumerate() {
            spec.check().map_err(invalid)?;
            if let Some(earlier) = self.toolsets[..i].iter().find(|t| t.name() == spec.name()) {
                return Err(invalid(format!(
                    "two toolsets are named `{}`: {} and {}",
                    spec.name(),
                    earlier.describe(),
                    spec.describe()
                )));
            }
        }
        self.check_tool_choice().map_err(invalid)?;
        self.history.check().map_err(invalid)?;
        for (id, template) in &self.prompts {
            weft_core::prompt::check_template(id, template)
                .map_err(|e| invalid(format!("[prompts] {e}")))?;
        }
        match &self.planner {
            PlannerSpec::Scripted { turns, .. } => {
                for (i, t) in turns.iter().enumerate() {
                    t.check(i + 1).map_err(invalid)?;
                }
            }
            PlannerSpec::Model {
                price: Some(price), ..
            } => {
                price.price().map_err(|error| AgentFileError::Price {
                    path: path.to_owned(),
                    error,
                })?;
            }
            PlannerSpec::Model { .. } => {}
        }
        Ok(())
    }

    /// The policy the file describes; a cap it leaves out is at its
    /// default (`weft_core::run::default_caps`): a file may raise a cap, not
    /// remove it.
    pub fn policy(&self) -> Policy {
        let p = &self.policy;
        let mut policy = Policy {
            max_turns: p.max_turns,
            max_tool_calls: p.max_tool_calls,
            max_tool_calls_per_turn: p.max_tool_calls_per_turn,
            max_consecutive_failures: p.max_consecutive_failures,
            time_budget: p.time_budget_ms.map(Duration::from_millis),
            allowed_tools: p
                .allowed_tools
                .as_ref()
                .map(|t| t.iter().map(|s| ToolIdent::new(s.as_str())).collect()),
            confirm_tools: p
                .confirm_tools
                .iter()
                .map(|s| ToolIdent::new(s.as_str()))
                .collect(),
            denied_tools: p
                .denied_tools
                .iter()
                .map(|s| ToolIdent::new(s.as_str()))
                .collect(),
            allowed_tags: p.allowed_tags.as_ref().map(|t| t.iter().cloned().collect()),
            denied_tags: p.denied_tags.iter().cloned().collect(),
            confirm_tags: p.confirm_tags.iter().cloned().collect(),
            confirm_destructive: p.confirm_destructive,
            ..Policy::default()
        };
        if let Some(g) = p.finalizer_grace_ms {
            policy.finalizer_grace = Duration::from_millis(g);
        }
        if let Some(r) = p.max_invalid_call_retries {
            policy.max_invalid_call_retries = r;
        }
        policy.with_default_caps()
    }

    /// The scripted planner, for `kind = "scripted"`.
    pub fn scripted_planner(&self) -> Option<ScriptedPlanner> {
        let PlannerSpec::Scripted {
            turns,
            finalize,
            across_session,
        } = &self.planner
        else {
            return None;
        };
        let turns = turns
            .iter()
            .enumerate()
            .map(|(i, t)| t.plan(i + 1))
            .collect();
        let mut planner = ScriptedPlanner::new(turns);
        if *across_session {
            planner = planner.across_session();
        }
        Some(match finalize {
            Some(f) => planner.with_finalize(f.clone()),
            None => planner,
        })
    }

    /// The planner the file names; `model` overrides the file's model (and
    /// turns a scripted agent into a model-driven one).
    pub fn planner(&self, model: Option<&str>) -> Result<Arc<dyn Planner>, ModelError> {
        match self.model_spec(model) {
            None => self
                .scripted_planner()
                .map(|p| Arc::new(p) as Arc<dyn Planner>)
                .ok_or_else(|| ModelError::Config {
                    message: "the agent has no planner".into(),
                }),
            Some((id, settings)) => model_planner(
                &id,
                self.instructions.clone().unwrap_or_default(),
                &self.planner_toolsets(),
                settings,
            ),
        }
    }

    /// The planner for replaying a run: the file's own planner, whose model
    /// (if it has one) is `recorded` instead of the real one. Returns
    /// whether the planner asks a model.
    pub fn replay_planner(
        &self,
        recorded: Arc<dyn ModelClient>,
    ) -> Result<(Arc<dyn Planner>, bool), ModelError> {
        match self.model_spec(None) {
            None => Ok((self.planner(None)?, false)),
            Some((_, settings)) => Ok((
                model_planner_on(
                    recorded,
                    self.instructions.clone().unwrap_or_default(),
                    &self.planner_toolsets(),
                    settings,
                ),
                true,
            )),
        }
    }

    /// The file's toolsets (MCP servers start on first use).
    pub fn toolsets(&self) -> Vec<Arc<dyn ToolSet>> {
        self.toolsets
            .iter()
            .filter_map(ToolsetSpec::build)
            .collect()
    }

    /// The toolsets whose instructions the model planner's system prompt
    /// carries: the file's, and the advisor's guidance block when it has one.
    fn planner_toolsets(&self) -> Vec<Arc<dyn ToolSet>> {
        let mut toolsets = self.toolsets();
        if self.advisor.is_some() {
            toolsets.push(Arc::new(AdvisorToolSet));
        }
        toolsets
    }

    /// Builds the agent with `planner` and the file's toolsets, policy and
    /// advisor; fails when the advisor's model cannot be built.
    pub fn agent(&self, planner: Arc<dyn Planner>) -> Result<Agent, ModelError> {
        self.agent_on(planner, None)
    }

    /// [`agent`](Self::agent), the advisor asking `advisor` (when given)
    /// instead of the model the file names: a replay's, never asked.
    pub fn agent_on(
        &self,
        planner: Arc<dyn Planner>,
        advisor: Option<Arc<dyn ModelClient>>,
    ) -> Result<Agent, ModelError> {
        let mut builder = Agent::builder(self.id.as_str(), planner).policy(self.policy());
        for ts in self.toolsets() {
            builder = builder.toolset(ts);
        }
        if let Some(ms) = self.policy.tool_timeout_ms {
            builder = builder.tool_timeout(Duration::from_millis(ms));
        }
        for (name, template) in &self.prompts {
            builder = builder.prompt(name, template);
        }
        let history = self.history.policy();
        let own_model = self.model_spec(None).map(|(id, _)| id);
        builder = history::with_summarizer(builder, &history, own_model);
        if let Some(spec) = &self.advisor {
            let (system, options) = (self.system_prompt(), self.provider_options());
            builder = builder.advisor(match advisor {
                Some(model) => spec.config_on(model, system, options),
                None => spec.config(system, options)?,
            });
        }
        Ok(builder.history(history).build())
    }
}

#[cfg(test)]
mod tests;
