//! What the runtime tells an observer about the runs it drives: one closed
//! [`Observation`] enum and the [`Observer`] trait that receives it.
//!
//! An observer counts (metrics); it never changes what a run does, and it is
//! called inline on the driver's task, so it must be cheap and must not
//! block. The default observer ([`NoObserver`]) does nothing.

use std::sync::Arc;
use std::time::Duration;

use weft_core::AgentId;
use weft_core::model::Usage;
use weft_core::run::{RunFailure, RunOutcome};

/// One fact about a run the runtime drives.
#[derive(Debug, Clone, Copy)]
pub enum Observation<'a> {
    /// A run was created and its first driver task started.
    RunStarted {
        /// The run's agent.
        agent: &'a AgentId,
    },
    /// A run reached its outcome: driven to it, or cancelled while no task
    /// drove it (awaiting, paused, queued). Once per run, so runs started
    /// minus runs finished is the runs in flight.
    RunFinished {
        /// The run's agent.
        agent: &'a AgentId,
        /// The outcome.
        outcome: &'a RunOutcome,
    },
    /// A driver task ended without an outcome because something went wrong.
    DriveFailed {
        /// What went wrong.
        reason: DriveFailure,
    },
    /// The driver took one step of the run machine.
    Step {
        /// Which step.
        kind: StepKind,
    },
    /// A tool call ended (with a result or an error).
    ToolCall {
        /// The tool's name.
        tool: &'a str,
        /// How long the call took, from its start to its result.
        elapsed: Duration,
        /// Whether the call failed.
        failed: bool,
    },
    /// A planner turn used tokens.
    Tokens {
        /// The model, when the planner names one.
        model: &'a str,
        /// The tokens.
        usage: &'a Usage,
    },
    /// A commit of the run's log reached the store.
    Commit {
        /// How long the store took, retries included.
        elapsed: Duration,
        /// How many events it stored.
        events: usize,
    },
}

/// Why a driver task ended without an outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriveFailure {
    /// The store failed; the run stays at its last commit.
    Store,
    /// The lease passed to another process.
    LeaseLost,
    /// The task panicked; the run was paused.
    Panic,
}

impl DriveFailure {
    /// The failure as a short snake_case word.
    pub fn as_str(self) -> &'static str {
        match self {
            DriveFailure::Store => "store",
            DriveFailure::LeaseLost => "lease_lost",
            DriveFailure::Panic => "panic",
        }
    }
}

/// The kind of a run machine step the driver took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// A planner call.
    Plan,
    /// Invalid tool calls resolved by the invalid-call policy.
    Resolve,
    /// A tool batch.
    ExecuteTools,
    /// An await handed the run back.
    Await,
    /// The run finished.
    Finish,
}

impl StepKind {
    /// The step as a short snake_case word.
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Plan => "plan",
            StepKind::Resolve => "resolve",
            StepKind::ExecuteTools => "execute_tools",
            StepKind::Await => "await",
            StepKind::Finish => "finish",
        }
    }
}

/// The outcome as a short snake_case word: `completed`, `failed` or `cancelled`.
pub fn outcome_kind(outcome: &RunOutcome) -> &'static str {
    match outcome {
        RunOutcome::Response { .. } | RunOutcome::ToolResult { .. } => "completed",
        RunOutcome::Failed { .. } => "failed",
        RunOutcome::Cancelled { .. } => "cancelled",
    }
}

/// Why a failed run failed, as a short snake_case word (`None` for other outcomes).
pub fn failure_kind(outcome: &RunOutcome) -> Option<&'static str> {
    let RunOutcome::Failed { failure, .. } = outcome else {
        return None;
    };
    Some(match failure {
        RunFailure::InvalidToolCall { .. } => "invalid_tool_call",
        RunFailure::Planner { .. } => "planner",
        RunFailure::FinalizerTimeout { .. } => "finalizer_timeout",
        RunFailure::SessionMemory { .. } => "session_memory",
        RunFailure::Protocol { .. } => "protocol",
        RunFailure::Other { .. } => "other",
    })
}

/// Receives the runtime's observations; see the module docs.
pub trait Observer: Send + Sync {
    /// Takes one observation.
    fn observe(&self, observation: &Observation<'_>);

    /// Whether this observer uses the durations of commits and tool calls.
    /// When it does not, the runtime reads no clock to time them and their
    /// observations carry [`Duration::ZERO`](std::time::Duration::ZERO).
    fn wants_durations(&self) -> bool {
        true
    }
}

/// The observer that does nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl Observer for NoObserver {
    fn observe(&self, _: &Observation<'_>) {}

    fn wants_durations(&self) -> bool {
        false
    }
}

/// The default observer.
pub(crate) fn none() -> Arc<dyn Observer> {
    Arc::new(NoObserver)
}
