//! Where the runtime gets `now`: the machine never reads a clock, the runtime
//! does, through weft-core's [`Clock`], so tests can substitute their own;
//! [`TokioClock`] follows tokio's (pausable) time.

use weft_core::Timestamp;
pub use weft_core::time::{Clock, SystemClock};

/// A clock that follows tokio's time: the wall-clock time when it was made,
/// plus the tokio time elapsed since. Under tokio's paused time
/// (`#[tokio::test(start_paused = true)]`) it advances only when tokio's
/// time does, so time budgets, tool timeouts and waits are tested without
/// real waiting, and deterministically.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    base: Timestamp,
    start: tokio::time::Instant,
}

impl TokioClock {
    /// A clock starting at the system's current time.
    pub fn new() -> Self {
        Self {
            base: SystemClock.now(),
            start: tokio::time::Instant::now(),
        }
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Timestamp {
        let elapsed = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.base
            .saturating_add(std::time::Duration::from_millis(elapsed))
    }
}
