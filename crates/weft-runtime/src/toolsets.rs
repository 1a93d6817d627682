//! [`AgentToolsets`]: an agent's toolsets as the runtime keeps them. Each is
//! wrapped in a [`StartableToolSet`], so a toolset that cannot start (a
//! missing MCP server, a refused connection) leaves the agent running with
//! its other tools. The listed tools are cached and listed again when a
//! toolset reports a tool-list change, or, while one is unavailable, at the
//! next run start and at most every [`RETRY_UNAVAILABLE`] during runs.
//!
//! A run learns about an unavailable toolset from the machine
//! ([`RunMachine::toolset_availability`]): an event with the cause and a
//! reminder for the model (`toolset:<name>`), replaced by a recovery note
//! when it comes back. The process log gets one
//! warning per failure streak (whether the toolset's start or its listing
//! failed), and a note when it is back. A caller that wants no run without
//! every toolset asks first: [`crate::Runtime::toolset_failures`].

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use weft_core::AgentId;
use weft_core::run::RunMachine;
use weft_core::tool::ToolError;
use weft_tools::{StartableToolSet, ToolSet, find_tool_list_changes};

use crate::RuntimeError;
use crate::tools::{AgentTools, CatalogError};

/// How often a running run retries toolsets that could not start.
pub const RETRY_UNAVAILABLE: Duration = Duration::from_secs(10);

/// An agent's toolsets, their start state and the tools listed from them.
pub(crate) struct AgentToolsets {
    sets: Vec<Arc<dyn ToolSet>>,
    changes: Mutex<Vec<watch::Receiver<u64>>>,
    /// Whether any toolset can announce tool-list changes.
    watching: bool,
    cache: tokio::sync::Mutex<Option<Cached>>,
    /// The toolsets whose current failure streak the log was told about.
    reported: Mutex<HashSet<String>>,
}

struct Cached {
    tools: Arc<AgentTools>,
    loaded_at: Instant,
}

impl AgentToolsets {
    /// Wraps each toolset; nothing starts yet.
    pub(crate) fn new(toolsets: &[Arc<dyn ToolSet>]) -> Self {
        let startable: Vec<_> = toolsets
            .iter()
            .map(|t| Arc::new(StartableToolSet::new(Arc::clone(t))))
            .collect();
        let changes: Vec<_> = startable
            .iter()
            .filter_map(|t| find_tool_list_changes(&**t).map(|c| c.subscribe_tool_list()))
            .collect();
        Self {
            sets: startable
                .iter()
                .map(|t| Arc::clone(t) as Arc<dyn ToolSet>)
                .collect(),
            watching: !changes.is_empty(),
            changes: Mutex::new(changes),
            cache: tokio::sync::Mutex::new(None),
            reported: Mutex::new(HashSet::new()),
        }
    }

    /// The tools, listed again when stale. `starting` says a run is starting,
    /// which retries unavailable toolsets at once.
    pub(crate) async fn tools(&self, starting: bool) -> Result<Arc<AgentTools>, CatalogError> {
        let mut cache = self.cache.lock().await;
        let changed = self.take_changes();
        if let Some(c) = cache.as_ref() {
            let retry = !c.tools.unavailable.is_empty()
                && (starting || c.loaded_at.elapsed() >= RETRY_UNAVAILABLE);
            if !changed && !retry {
                return Ok(c.tools.clone());
            }
        }
        let tools = Arc::new(AgentTools::load(&self.sets).await?);
        self.report(&tools.unavailable);
        // Listing may itself have moved the counters (a reconnect); that listing is current.
        self.take_changes();
        *cache = Some(Cached {
            tools: tools.clone(),
            loaded_at: Instant::now(),
        });
        Ok(tools)
    }

    /// Logs a warning for each toolset that could not start, once per
    /// failure streak, and a note for each that is back.
    fn report(&self, unavailable: &[(String, ToolError)]) {
        let mut reported = self.reported.lock().unwrap_or_else(PoisonError::into_inner);
        for (name, error) in unavailable {
            if reported.insert(name.clone()) {
                tracing::warn!(
                    toolset = %name,
                    error = %error.message,
                    "toolset could not start; runs go on without its tools"
                );
            }
        }
        reported.retain(|name| {
            let down = unavailable.iter().any(|(n, _)| n == name);
            if !down {
                tracing::info!(toolset = %name, "toolset available again");
            }
            down
        });
    }

    /// Whether a listing that found every toolset available can go stale:
    /// only a toolset that announces tool-list changes can make it so.
    pub(crate) fn can_change(&self) -> bool {
        self.watching
    }

    /// Whether any toolset reported a tool-list change since the last call.
    fn take_changes(&self) -> bool {
        let mut changes = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        let mut any = false;
        for rx in changes.iter_mut() {
            if rx.has_changed().unwrap_or(false) {
                rx.borrow_and_update();
                any = true;
            }
        }
        any
    }
}

/// Tells the run which toolsets of `tools` are unavailable and why (the
/// machine turns that into events and reminders). Returns whether anything
/// changed.
pub(crate) fn remind_availability(machine: &mut RunMachine, tools: &AgentTools) -> bool {
    machine.toolset_availability(
        tools
            .unavailable
            .iter()
            .map(|(name, error)| (name.as_str(), error.message.as_str())),
    )
}

/// A toolset of an agent that could not start: its tools could not be
/// listed. Runs of the agent go on without them (see the module's docs).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsetFailure {
    /// The agent.
    pub agent: AgentId,
    /// The toolset's name.
    pub toolset: String,
    /// Why: the error of its start or of its listing.
    pub error: ToolError,
}

impl crate::Runtime {
    /// Starts the toolsets of `agent` now, as a run's start would (the
    /// listing is the one the agent's next run starts from), and returns
    /// those that could not start, in the agent's order. A caller that wants
    /// no run without every toolset (`weft run`) asks this before starting.
    pub async fn toolset_failures(&self, agent: &str) -> Result<Vec<ToolsetFailure>, RuntimeError> {
        let agent = self
            .agent(agent)
            .ok_or_else(|| RuntimeError::UnknownAgent(AgentId::new(agent)))?;
        let tools = agent.current_tools(true).await?;
        Ok(tools
            .unavailable
            .iter()
            .map(|(toolset, error)| ToolsetFailure {
                agent: agent.id().clone(),
                toolset: toolset.clone(),
                error: error.clone(),
            })
            .collect())
    }
}
