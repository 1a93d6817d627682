//! `type = "agent"` toolsets of agent files: other agents, each from its own
//! agent file, offered as tools (see `weft_runtime::AgentToolSet`). An
//! agent may declare its result's JSON Schema (`output_schema`, an inline
//! table): its answer must then match it, or the call fails with
//! `invalid_result`.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

/// Most agents one `type = "agent"` toolset offers.
pub const MAX_AGENT_TOOLS: usize = 32;

/// `type = "agent"`: agents offered as tools named `<name>.<id>`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentToolsetSpec {
    /// The toolset's name.
    pub name: String,
    /// The agents, in order.
    pub agents: Vec<AgentToolSpec>,
}

/// One agent of a `type = "agent"` toolset.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentToolSpec {
    /// The agent's id, as its file gives it.
    pub id: String,
    /// Its agent file, relative to the file that names it.
    pub file: PathBuf,
    /// What the agent does, for the model that calls it.
    pub description: String,
    /// The JSON Schema its result must match (a table, written in TOML):
    /// its final tool result, or its text answer read as JSON.
    #[serde(default)]
    pub output_schema: Option<toml::Table>,
}

impl AgentToolSpec {
    /// The output schema as JSON, when the agent declares one.
    pub fn output_schema(&self) -> Option<Value> {
        self.output_schema
            .as_ref()
            .map(|t| serde_json::to_value(t).unwrap_or(Value::Null))
    }
}

impl AgentToolsetSpec {
    pub(super) fn check(&self) -> Result<(), String> {
        let plain = |s: &str| !s.trim().is_empty() && !s.contains('.');
        if !plain(&self.name) {
            return Err(format!(
                "agent toolset name `{}` must be non-empty and without dots",
                self.name
            ));
        }
        if self.agents.is_empty() || self.agents.len() > MAX_AGENT_TOOLS {
            return Err(format!(
                "agent toolset `{}` must offer between 1 and {MAX_AGENT_TOOLS} agents, not {}",
                self.name,
                self.agents.len()
            ));
        }
        for (i, a) in self.agents.iter().enumerate() {
            if !plain(&a.id) {
                return Err(format!(
                    "agent toolset `{}`: agent id `{}` must be non-empty and without dots",
                    self.name, a.id
                ));
            }
            if let Some(schema) = a.output_schema() {
                weft_runtime::AgentToolSet::check_output_schema(&schema).map_err(|e| {
                    format!(
                        "agent toolset `{}`: the output schema of agent `{}` is {e}",
                        self.name, a.id
                    )
                })?;
            }
            if self.agents[..i].iter().any(|b| b.id == a.id) {
                return Err(format!(
                    "agent toolset `{}` offers agent `{}` twice",
                    self.name, a.id
                ));
            }
        }
        Ok(())
    }

    /// The toolset: each agent as a tool `<name>.<id>`.
    pub fn toolset(&self) -> weft_runtime::AgentToolSet {
        self.agents.iter().fold(
            weft_runtime::AgentToolSet::new(self.name.as_str()),
            |set, a| match a.output_schema() {
                Some(schema) => {
                    set.agent_with_result(a.id.as_str(), a.description.as_str(), schema)
                }
                None => set.agent(a.id.as_str(), a.description.as_str()),
            },
        )
    }
}
