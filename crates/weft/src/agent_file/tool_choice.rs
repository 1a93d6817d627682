//! Checks, when an agent file is read, that a `tool_choice` naming a tool
//! names one the agent offers. What is known before the run starts is
//! checked: the tools of built-in toolsets, of agent toolsets and the
//! planner's own (`ask_user`, `advisor`) by name; a server's toolset (MCP,
//! registry), whose tools are listed only once it starts, by its prefix
//! (`<toolset>.`), the tool itself being checked when the run starts.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use weft_tools::ToolSet;

use super::{AgentFile, PlannerSpec};
use crate::toolset_spec::{ToolsetSpec, ToolsetTable};

impl AgentFile {
    /// Fails when `tool_choice` names a tool the agent cannot offer,
    /// saying which it offers.
    pub(super) fn check_tool_choice(&self) -> Result<(), String> {
        let PlannerSpec::Model {
            tool_choice: Some(choice),
            ask_user,
            ..
        } = &self.planner
        else {
            return Ok(());
        };
        if matches!(choice.as_str(), "auto" | "required" | "none") {
            return Ok(());
        }
        let mut known: Vec<String> = Vec::new();
        let mut servers: Vec<String> = Vec::new();
        for spec in &self.toolsets {
            match spec {
                ToolsetSpec::Builtin(_) | ToolsetSpec::Table(ToolsetTable::Builtin { .. }) => {
                    if let Some(ts) = spec.build() {
                        known.extend(listed_now(&*ts));
                    }
                }
                ToolsetSpec::Table(ToolsetTable::Agent(a)) => known.extend(
                    a.agents
                        .iter()
                        .map(|agent| format!("{}.{}", a.name, agent.id)),
                ),
                ToolsetSpec::Table(
                    ToolsetTable::Mcp(_) | ToolsetTable::Registry(_) | ToolsetTable::A2a(_),
                ) => {
                    servers.push(spec.name().to_owned());
                }
            }
        }
        if *ask_user {
            known.push(weft_models::ASK_TOOL.to_owned());
        }
        if self.advisor.is_some() {
            known.push(weft_runtime::advisor::TOOL.to_owned());
        }
        if known.contains(choice)
            || servers.iter().any(|s| {
                choice
                    .strip_prefix(s.as_str())
                    .is_some_and(|t| t.starts_with('.'))
            })
        {
            return Ok(());
        }
        let mut offered: Vec<String> = known;
        offered.extend(
            servers
                .iter()
                .map(|s| format!("{s}.* (listed when it starts)")),
        );
        Err(if offered.is_empty() {
            format!("`tool_choice` names the tool `{choice}`, but the agent offers no tools")
        } else {
            format!(
                "`tool_choice` names the tool `{choice}`, which the agent does not offer \
                 (its tools: {})",
                offered.join(", ")
            )
        })
    }
}

/// The tools of a toolset that lists them without waiting (an in-process
/// one); none for one that would have to start or connect first.
fn listed_now(toolset: &dyn ToolSet) -> Vec<String> {
    let mut listing = pin!(toolset.list_tools());
    match listing
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(Ok(specs)) => specs.into_iter().map(|s| s.name.to_string()).collect(),
        _ => Vec::new(),
    }
}
