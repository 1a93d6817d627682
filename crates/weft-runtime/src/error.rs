//! Runtime errors: what `start`, `answer`, `cancel` and subscriptions can fail with.

use weft_core::run::RunError;
use weft_core::store::StoreError;
use weft_core::tool::ToolError;
use weft_core::{AgentId, RunId, SessionId};

use crate::tools::CatalogError;

/// Why a runtime operation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuntimeError {
    /// No agent is registered under this id.
    #[error("unknown agent `{0}`")]
    UnknownAgent(AgentId),
    /// No run has this id.
    #[error("run `{0}` not found")]
    RunNotFound(RunId),
    /// The run is not waiting for answers.
    #[error("run `{run_id}` is not awaiting answers (it is {status})")]
    NotAwaiting {
        /// The run.
        run_id: RunId,
        /// Its status.
        status: &'static str,
    },
    /// The run is driven by another process, or waits to be recovered after
    /// a crash (which withdraws its running tools' questions).
    #[error("run `{0}` is driven by another process, or waits to be recovered")]
    DrivenElsewhere(RunId),
    /// The run is not paused.
    #[error("run `{0}` is not paused")]
    NotPaused(RunId),
    /// The run has already finished.
    #[error("run `{0}` has already finished")]
    Finished(RunId),
    /// The run machine rejected an input.
    #[error(transparent)]
    Protocol(#[from] RunError),
    /// The store failed (an ended session it refused is
    /// [`SessionEnded`](Self::SessionEnded)).
    #[error(transparent)]
    Store(StoreError),
    /// An agent's tools could not be listed.
    #[error("toolset failed: {0}")]
    Tools(ToolError),
    /// Two toolsets offer the same tool, or a tool's schema is invalid.
    #[error("agent `{agent}` tools are inconsistent: {source}")]
    Catalog {
        /// The agent.
        agent: AgentId,
        /// What is wrong.
        #[source]
        source: CatalogError,
    },
    /// The runtime is shutting down or the run's task ended unexpectedly.
    #[error("run `{0}` ended without an outcome")]
    Interrupted(RunId),
    /// The session has ended and accepts no new runs.
    #[error("session `{0}` has ended and accepts no new runs")]
    SessionEnded(SessionId),
    /// The history a run in this session starts from could not be made
    /// (its summary failed).
    #[error("the history of session `{session_id}` could not be made: {message}")]
    History {
        /// The session.
        session_id: SessionId,
        /// What went wrong.
        message: String,
    },
}

impl From<StoreError> for RuntimeError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::SessionEnded { session_id } => RuntimeError::SessionEnded(session_id),
            other => RuntimeError::Store(other),
        }
    }
}
