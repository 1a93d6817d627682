//! Child runs: an agent called as a tool of another. A tool call's request
//! carries [`Children`], through which its tool starts (or, after a crash,
//! finds again) the child run that answers it; the runtime implements
//! [`ChildRunner`] and attaches one to every call it makes.
//!
//! A child run's id is its parent's run id and the parent's call id
//! ([`child_run_id`]), so a call that runs again after a crash finds the
//! child it started instead of starting another. The runner reports the
//! child it started through the link's [`ChildLinker`]; the parent's machine
//! records it (`ChildRunLinked`).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::elicitation::Elicitor;
use crate::ids::{AgentId, RunId, ToolCallId};
use serde_json::Value;

use crate::message::Message;
use crate::tool::{Labels, ToolError};

/// The run and call a child run answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentLink {
    /// The parent run.
    pub run_id: RunId,
    /// The parent's tool call the child answers.
    pub tool_call_id: ToolCallId,
    /// What is left of the parent's time budget when the call started; the
    /// child's own budget is clipped to it.
    pub time_left: Option<Duration>,
    /// Tool calls the parent may still make once its current batch (this
    /// call included) is counted; the child's own tool call cap is clipped
    /// to it. `None` when the parent has no such cap.
    pub tool_calls_left: Option<u32>,
    /// Planner turns the parent may still take after the current one; the
    /// child's own turn cap is clipped to it. `None` when the parent has no
    /// such cap.
    pub turns_left: Option<u32>,
    /// Where the runner reports the child it started for the call.
    pub linker: ChildLinker,
}

/// What a parent run lets a child run it starts use: what is left of the
/// parent's caps when the call starts. The parent's machine says it
/// ([`RunMachine::child_allowance`](crate::run::RunMachine::child_allowance)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChildAllowance {
    /// What is left of the parent's time budget; `None` without one.
    pub time_left: Option<Duration>,
    /// Tool calls the parent may still make once its current batch (the
    /// calling call included) is counted; `None` without such a cap.
    pub tool_calls_left: Option<u32>,
    /// Planner turns the parent may still take after the current one;
    /// `None` without such a cap.
    pub turns_left: Option<u32>,
}

impl ParentLink {
    /// The link from call `tool_call_id` of run `run_id`, under `allowance`.
    pub fn new(run_id: RunId, tool_call_id: ToolCallId, allowance: ChildAllowance) -> Self {
        let ChildAllowance {
            time_left,
            tool_calls_left,
            turns_left,
        } = allowance;
        Self {
            run_id,
            tool_call_id,
            time_left,
            tool_calls_left,
            turns_left,
            linker: ChildLinker::detached(),
        }
    }

    /// The link, reporting the children it starts to `linker`.
    pub fn with_linker(mut self, linker: ChildLinker) -> Self {
        self.linker = linker;
        self
    }
}

/// What a [`ChildLinker`] runs: resolves once the parent recorded the link.
pub type LinkFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Receives the child runs a call started (or found again).
pub type LinkFn = dyn Fn(RunId, AgentId) -> LinkFuture + Send + Sync;

/// Where a child runner reports the child run it started (or found again)
/// for a parent's call: the parent's driver hands it to the parent's
/// machine, which records `ChildRunLinked` before the child's events are
/// shown. Cheap to clone; detached outside a runtime.
#[derive(Clone, Default)]
pub struct ChildLinker(Option<Arc<LinkFn>>);

impl ChildLinker {
    /// A linker that hands every link to `f`.
    pub fn new(f: impl Fn(RunId, AgentId) -> LinkFuture + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(f)))
    }

    /// A linker that records nothing.
    pub fn detached() -> Self {
        Self(None)
    }

    /// Reports that the call's child is `child`, run by `agent`; resolves
    /// once the parent recorded it (at once when detached).
    pub async fn link(&self, child: RunId, agent: AgentId) {
        if let Some(f) = &self.0 {
            f(child, agent).await;
        }
    }
}

impl fmt::Debug for ChildLinker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Some(_) => "ChildLinker(attached)",
            None => "ChildLinker(detached)",
        })
    }
}

/// Linkers never make two links differ: equality is about the call.
impl PartialEq for ChildLinker {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for ChildLinker {}

/// The id of the child run that answers `parent`'s call.
pub fn child_run_id(parent: &RunId, call: &ToolCallId) -> RunId {
    RunId::new(format!("{parent}.{call}"))
}

/// A child run to start (or to find again) for a parent's call.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildRequest {
    /// The agent that runs the child.
    pub agent: AgentId,
    /// The child's input.
    pub messages: Vec<Message>,
    /// Labels of the child run (the parent's, plus the link).
    pub labels: Labels,
}

/// How a child run ended, as its parent's call sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum ChildEnd {
    /// It answered.
    Response {
        /// The answer.
        message: Message,
    },
    /// It produced its parent's tool result.
    ToolResult {
        /// The result.
        result: Value,
    },
    /// It failed.
    Failed {
        /// Why, in words.
        reason: String,
    },
    /// It was cancelled.
    Cancelled {
        /// Why.
        reason: String,
    },
}

/// Starts child runs and waits for their outcomes: the runtime's side of
/// [`Children`].
#[async_trait]
pub trait ChildRunner: Send + Sync {
    /// Runs `request` as the child answering `parent` (starting it, or
    /// following the one a previous attempt of the call started) and
    /// returns its outcome. Questions the child asks a human are asked
    /// through `ask`, and the answers handed to the child.
    async fn run_child(
        &self,
        parent: &ParentLink,
        request: ChildRequest,
        ask: &Elicitor,
    ) -> Result<ChildEnd, ToolError>;
}

/// What a tool call may start child runs through; detached outside a runtime.
#[derive(Clone, Default)]
pub struct Children(Option<(Arc<dyn ChildRunner>, ParentLink)>);

impl Children {
    /// Child runs through `runner`, answering `parent`.
    pub fn attached(runner: Arc<dyn ChildRunner>, parent: ParentLink) -> Self {
        Self(Some((runner, parent)))
    }

    /// No child runs: every start fails.
    pub fn detached() -> Self {
        Self(None)
    }

    /// The call the children answer, when attached.
    pub fn parent(&self) -> Option<&ParentLink> {
        self.0.as_ref().map(|(_, p)| p)
    }

    /// Runs `request` as the child answering this call; see [`ChildRunner::run_child`].
    pub async fn run(&self, request: ChildRequest, ask: &Elicitor) -> Result<ChildEnd, ToolError> {
        match &self.0 {
            Some((runner, parent)) => runner.run_child(parent, request, ask).await,
            None => Err(ToolError::new(
                ToolError::UNAVAILABLE,
                "agent tools run only inside a runtime, which starts their child runs",
            )),
        }
    }
}

impl fmt::Debug for Children {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Children")
            .field(&self.parent().map(|p| &p.run_id))
            .finish()
    }
}

/// Child runners never make two requests differ: equality is about the call.
impl PartialEq for Children {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
