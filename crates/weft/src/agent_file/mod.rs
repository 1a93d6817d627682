//! Agent files: an agent described in TOML (planner, toolsets, policy), as
//! `weft run <agent.toml>` reads them. See `examples/*.toml`.

use std::num::NonZeroU32;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use weft_core::model::{ModelError, ToolChoice};
use weft_core::planner::{PlanResult, Planner, ToolCallRequest};
use weft_core::run::Policy;
use weft_core::tool::ToolIdent;
use weft_runtime::{Agent, ScriptedPlanner};
use weft_tools::ToolSet;

use crate::toolset_spec::ToolsetSpec;

mod model;

use model::parse_tool_choice;
pub use model::{ModelSettings, local_loader, model_planner};

/// Why an agent file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum AgentFileError {
    /// The file could not be read.
    #[error("cannot read agent file {path}: {source}")]
    Read {
        /// The path.
        path: String,
        /// The IO error.
        source: std::io::Error,
    },
    /// The file is not valid TOML or does not match the agent schema.
    #[error("agent file {path} is invalid: {message}")]
    Parse {
        /// The path.
        path: String,
        /// The parser's message, with line and column.
        message: String,
    },
    /// The file parses but says something impossible.
    #[error("agent file {path}: {message}")]
    Invalid {
        /// The path.
        path: String,
        /// What is wrong.
        message: String,
    },
}

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
}

/// The planner section.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum PlannerSpec {
    /// Replays fixed turns.
    Scripted {
        /// The turns, in order.
        turns: Vec<TurnSpec>,
        /// The answer when the runtime forces finalization.
        #[serde(default)]
        finalize: Option<String>,
    },
    /// Asks a model (`anthropic/<model>`, `openai/<model>`, ...).
    Model {
        /// The model id.
        model: String,
        /// The server's base URL (required for `compat/` models).
        #[serde(default)]
        base_url: Option<String>,
        /// Output token limit per call.
        #[serde(default)]
        max_tokens: Option<u32>,
        /// Sampling temperature.
        #[serde(default)]
        temperature: Option<f32>,
        /// `auto` (default), `required`, `none`, or a tool's name: what the
        /// model must call until the run has tool results.
        #[serde(default)]
        tool_choice: Option<String>,
    },
}

/// One scripted turn: exactly one of `text` or `tool_calls`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnSpec {
    /// A final answer.
    #[serde(default)]
    pub text: Option<String>,
    /// Tool calls.
    #[serde(default)]
    pub tool_calls: Option<Vec<CallSpec>>,
}

/// One scripted tool call.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallSpec {
    /// The tool's full name.
    pub name: String,
    /// The arguments.
    #[serde(default)]
    pub args: toml::Table,
}

/// The policy section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// Most tool calls per run.
    pub max_tool_calls: Option<NonZeroU32>,
    /// Most tool calls per turn.
    pub max_tool_calls_per_turn: Option<NonZeroU32>,
    /// Most failures in a row.
    pub max_consecutive_failures: Option<NonZeroU32>,
    /// Active time budget in milliseconds.
    pub time_budget_ms: Option<u64>,
    /// Grace for the finalizing turn in milliseconds.
    pub finalizer_grace_ms: Option<u64>,
    /// Retries of a turn with an invalid tool call.
    pub max_invalid_call_retries: Option<u32>,
    /// Per-call tool timeout in milliseconds.
    pub tool_timeout_ms: Option<u64>,
    /// Tools the agent may call (all when absent).
    pub allowed_tools: Option<Vec<String>>,
    /// Tools whose calls wait for a human's approval.
    #[serde(default)]
    pub confirm_tools: Vec<String>,
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
            message: e.to_string(),
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
        if let PlannerSpec::Scripted { turns, .. } = &self.planner {
            for (i, t) in turns.iter().enumerate() {
                match (&t.text, &t.tool_calls) {
                    (Some(_), None) => {}
                    (None, Some(calls)) if !calls.is_empty() => {}
                    (None, Some(_)) => {
                        return Err(invalid(format!("turn {}: `tool_calls` is empty", i + 1)));
                    }
                    _ => {
                        return Err(invalid(format!(
                            "turn {}: give exactly one of `text` or `tool_calls`",
                            i + 1
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// The policy the file describes.
    pub fn policy(&self) -> Policy {
        let p = &self.policy;
        let mut policy = Policy {
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
            ..Policy::default()
        };
        if let Some(g) = p.finalizer_grace_ms {
            policy.finalizer_grace = Duration::from_millis(g);
        }
        if let Some(r) = p.max_invalid_call_retries {
            policy.max_invalid_call_retries = r;
        }
        policy
    }

    /// The scripted planner, for `kind = "scripted"`.
    pub fn scripted_planner(&self) -> Option<ScriptedPlanner> {
        let PlannerSpec::Scripted { turns, finalize } = &self.planner else {
            return None;
        };
        let turns = turns
            .iter()
            .map(|t| match (&t.text, &t.tool_calls) {
                (_, Some(calls)) => PlanResult::tool_calls(
                    calls
                        .iter()
                        .map(|c| ToolCallRequest::new(c.name.clone(), toml_to_json(&c.args)))
                        .collect(),
                ),
                (text, None) => PlanResult::final_text(text.clone().unwrap_or_default()),
            })
            .collect();
        let planner = ScriptedPlanner::new(turns);
        Some(match finalize {
            Some(f) => planner.with_finalize(f.clone()),
            None => planner,
        })
    }

    /// The planner the file names; `model` overrides the file's model (and
    /// turns a scripted agent into a model-driven one).
    pub fn planner(&self, model: Option<&str>) -> Result<Arc<dyn Planner>, ModelError> {
        let (id, settings) = match (&self.planner, model) {
            (PlannerSpec::Scripted { .. }, None) => {
                if let Some(p) = self.scripted_planner() {
                    return Ok(Arc::new(p));
                }
                return Err(ModelError::Config {
                    message: "the agent has no planner".into(),
                });
            }
            (PlannerSpec::Scripted { .. }, Some(m)) => (m.to_owned(), ModelSettings::default()),
            (
                PlannerSpec::Model {
                    model: file_model,
                    base_url,
                    max_tokens,
                    temperature,
                    tool_choice,
                },
                m,
            ) => (
                m.unwrap_or(file_model).to_owned(),
                ModelSettings {
                    base_url: base_url.clone(),
                    max_tokens: *max_tokens,
                    temperature: *temperature,
                    tool_choice: tool_choice
                        .as_deref()
                        .map_or(ToolChoice::Auto, parse_tool_choice),
                },
            ),
        };
        model_planner(
            &id,
            self.instructions.clone().unwrap_or_default(),
            &self.toolsets(),
            settings,
        )
    }

    /// The file's toolsets (MCP servers start on first use).
    pub fn toolsets(&self) -> Vec<Arc<dyn ToolSet>> {
        self.toolsets
            .iter()
            .filter_map(ToolsetSpec::build)
            .collect()
    }

    /// Builds the agent with `planner` and the file's toolsets and policy.
    pub fn agent(&self, planner: Arc<dyn Planner>) -> Agent {
        let mut builder = Agent::builder(self.id.as_str(), planner).policy(self.policy());
        for ts in self.toolsets() {
            builder = builder.toolset(ts);
        }
        if let Some(ms) = self.policy.tool_timeout_ms {
            builder = builder.tool_timeout(Duration::from_millis(ms));
        }
        builder.build()
    }
}

fn toml_to_json(table: &toml::Table) -> Value {
    serde_json::to_value(table).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests;
