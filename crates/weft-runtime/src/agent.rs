//! Agents as the runtime knows them: a planner, toolsets, a policy and the
//! driver-side choices (invalid-call policy, tool timeout, models, prompts,
//! history policy).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use weft_core::AgentId;
use weft_core::history::HistoryPolicy;
use weft_core::model::ModelClient;
use weft_core::planner::Planner;
use weft_core::run::{InvalidToolCallContext, Policy, Resolution};
use weft_tools::ToolSet;

use crate::advisor::{AdvisorConfig, AdvisorToolSet};
use crate::error::RuntimeError;
use crate::tools::AgentTools;
use crate::toolsets::AgentToolsets;

/// Decides what to do with an invalid tool call.
pub trait InvalidCallPolicy: Send + Sync + 'static {
    /// The resolution for `context`.
    fn resolve(&self, context: &InvalidToolCallContext) -> Resolution;
}

/// The default: retry the turn with feedback while retries are left, then fail.
#[derive(Debug, Default, Clone, Copy)]
pub struct RetryThenFail;

impl InvalidCallPolicy for RetryThenFail {
    fn resolve(&self, ctx: &InvalidToolCallContext) -> Resolution {
        if ctx.retries_left == 0 {
            return Resolution::Fail;
        }
        let mut feedback = ctx.reason.describe(&ctx.tool_name);
        if !ctx.available.is_empty() {
            let names: Vec<&str> = ctx.available.iter().map(|t| t.as_str()).collect();
            feedback.push_str(&format!(". Available tools: {}", names.join(", ")));
        }
        feedback.push_str(". Call again with corrected arguments.");
        Resolution::Retry { feedback }
    }
}

/// A registered agent: what runs of it are made of.
pub struct Agent {
    pub(crate) id: AgentId,
    pub(crate) planner: Arc<dyn Planner>,
    pub(crate) toolsets: Vec<Arc<dyn ToolSet>>,
    pub(crate) policy: Policy,
    pub(crate) invalid_calls: Arc<dyn InvalidCallPolicy>,
    pub(crate) tool_timeout: Duration,
    pub(crate) describe_calls: bool,
    pub(crate) models: HashMap<String, Arc<dyn ModelClient>>,
    pub(crate) prompts: HashMap<String, String>,
    /// Which of its session's earlier messages a run starts from.
    pub(crate) history: HistoryPolicy,
    /// The advisor, when the agent has one.
    pub(crate) advisor: Option<AdvisorConfig>,
    /// Built from `toolsets` by [`AgentBuilder::build`].
    pub(crate) started: AgentToolsets,
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("id", &self.id)
            .field(
                "toolsets",
                &self.toolsets.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// Starts building an agent with `id` and `planner`.
    pub fn builder(id: impl Into<AgentId>, planner: Arc<dyn Planner>) -> AgentBuilder {
        AgentBuilder {
            agent: Agent {
                id: id.into(),
                planner,
                toolsets: Vec::new(),
                policy: Policy::bounded(),
                invalid_calls: Arc::new(RetryThenFail),
                tool_timeout: Duration::from_secs(60),
                describe_calls: false,
                models: HashMap::new(),
                prompts: HashMap::new(),
                history: HistoryPolicy::default(),
                advisor: None,
                started: AgentToolsets::new(&[]),
            },
        }
    }

    /// The agent's id.
    pub fn id(&self) -> &AgentId {
        &self.id
    }

    /// The agent's policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The agent's history policy.
    pub fn history(&self) -> &HistoryPolicy {
        &self.history
    }

    /// The tools the agent's runs are offered now (a toolset that cannot
    /// list its tools is left out until it can).
    pub async fn tools(&self) -> Result<Vec<weft_core::tool::ToolSpec>, RuntimeError> {
        Ok(self.current_tools(false).await?.specs.clone())
    }

    /// The agent's tools, listed again when stale (`starting`: a run is
    /// starting, which retries unavailable toolsets at once).
    pub(crate) async fn current_tools(
        &self,
        starting: bool,
    ) -> Result<Arc<AgentTools>, RuntimeError> {
        self.started
            .tools(starting)
            .await
            .map_err(|source| RuntimeError::Catalog {
                agent: self.id.clone(),
                source,
            })
    }
}

/// Builds an [`Agent`].
pub struct AgentBuilder {
    agent: Agent,
}

impl AgentBuilder {
    /// Adds a toolset.
    pub fn toolset(mut self, toolset: Arc<dyn ToolSet>) -> Self {
        self.agent.toolsets.push(toolset);
        self
    }

    /// Sets the policy (caps, budgets, allowed and confirmed tools). The
    /// default is [`Policy::bounded`]; a policy given here is used as is, so
    /// `Policy::default()` means no caps at all.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.agent.policy = policy;
        self
    }

    /// Sets how invalid tool calls are resolved.
    pub fn invalid_calls(mut self, policy: Arc<dyn InvalidCallPolicy>) -> Self {
        self.agent.invalid_calls = policy;
        self
    }

    /// Sets the per-call tool timeout (default 60 s).
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.agent.tool_timeout = timeout;
        self
    }

    /// Strips the injected `description` argument before tools run and shows
    /// it in `ToolStarted` events (pair with `weft_tools::DescribedToolSet`).
    pub fn describe_calls(mut self, on: bool) -> Self {
        self.agent.describe_calls = on;
        self
    }

    /// Makes a model client available to the planner by id.
    pub fn model(mut self, id: impl Into<String>, client: Arc<dyn ModelClient>) -> Self {
        self.agent.models.insert(id.into(), client);
        self
    }

    /// Registers a prompt template (MiniJinja, strict: a variable it names
    /// must be given) by name; overrides in a run's scope replace it.
    pub fn prompt(mut self, name: impl Into<String>, template: impl Into<String>) -> Self {
        self.agent.prompts.insert(name.into(), template.into());
        self
    }

    /// Sets which of its session's earlier messages a run starts from
    /// (default: the last 20 turns).
    pub fn history(mut self, policy: HistoryPolicy) -> Self {
        self.agent.history = policy;
        self
    }

    /// Gives the agent the built-in `advisor` tool (see [`crate::advisor`]).
    pub fn advisor(mut self, config: AdvisorConfig) -> Self {
        self.agent.advisor = Some(config);
        self
    }

    /// The agent.
    pub fn build(mut self) -> Agent {
        if self.agent.advisor.is_some() {
            self.agent.toolsets.push(Arc::new(AdvisorToolSet));
            // The advisor is consulted alone: its advice is about the
            // calls the model has not made yet.
            let advisor = weft_core::tool::ToolIdent::new(crate::advisor::TOOL);
            self.agent.policy.exclusive_tools.insert(advisor);
        }
        self.agent.started = AgentToolsets::new(&self.agent.toolsets);
        self.agent
    }
}
