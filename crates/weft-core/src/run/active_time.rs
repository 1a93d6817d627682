//! Active-time accounting: time spent waiting on an await is not counted.

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// Counts a run's active time from driver-supplied timestamps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ActiveTime {
    /// Active milliseconds before the current segment.
    banked_ms: u64,
    /// Start of the current active segment; `None` while suspended.
    since: Option<Timestamp>,
}

impl ActiveTime {
    pub(crate) fn started(now: Timestamp) -> Self {
        Self {
            banked_ms: 0,
            since: Some(now),
        }
    }

    /// Active milliseconds up to `now` (a clock that went backwards counts zero).
    pub(crate) fn active_ms(&self, now: Timestamp) -> u64 {
        let running = self
            .since
            .map_or(0, |s| now.as_millis().saturating_sub(s.as_millis()));
        self.banked_ms.saturating_add(running)
    }

    /// Stops counting at `now`.
    pub(crate) fn suspend(&mut self, now: Timestamp) {
        self.banked_ms = self.active_ms(now);
        self.since = None;
    }

    /// Starts counting again at `now`.
    pub(crate) fn continue_from(&mut self, now: Timestamp) {
        if self.since.is_none() {
            self.since = Some(now);
        }
    }

    /// When `budget_ms` of active time will have been used, if counting.
    pub(crate) fn deadline(&self, budget_ms: u64) -> Option<Timestamp> {
        let since = self.since?;
        Some(Timestamp::from_millis(
            since
                .as_millis()
                .saturating_add(budget_ms.saturating_sub(self.banked_ms)),
        ))
    }
}
