//! [`RunHandle`]: a started run, to follow and wait for.

use weft_core::RunId;
use weft_core::run::RunOutcome;

use super::Runtime;
use crate::error::RuntimeError;
use crate::events::EventStream;

/// A started run: its id, its events and its outcome.
#[derive(Clone)]
pub struct RunHandle {
    pub(super) run_id: RunId,
    pub(super) runtime: Runtime,
}

impl RunHandle {
    /// The run's id.
    pub fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// The run's events from the beginning, then live.
    pub async fn events(&self) -> Result<EventStream, RuntimeError> {
        self.runtime.subscribe(&self.run_id, 0).await
    }

    /// Waits for the run's outcome (across awaits, pauses and recoveries).
    pub async fn outcome(&self) -> Result<RunOutcome, RuntimeError> {
        self.runtime.outcome(&self.run_id).await
    }
}
