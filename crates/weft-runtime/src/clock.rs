//! Where the runtime gets `now`: the machine never reads a clock, the runtime
//! does, through this trait, so tests can substitute their own.

use std::time::{SystemTime, UNIX_EPOCH};

use weft_core::Timestamp;

/// A source of the current time.
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Timestamp::from_millis(ms)
    }
}

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
