//! MCP logging for served calls: the level a client set with
//! `logging/setLevel` (one per MCP session; nothing is logged until the
//! client sets one), the level each run event is logged at, and the bounds
//! on how much one call logs.
//!
//! rmcp marks MCP logging deprecated (a later protocol revision drops it);
//! the protocol versions weft serves still have it, so this module allows
//! the deprecated names.
#![allow(deprecated)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::{Peer, RoleServer};
use serde_json::{Value, json};
use weft_core::event::{EventKind, RunEvent};
use weft_core::run::RunOutcome;

/// At most this many log notifications per call; the last one says the rest were dropped.
pub const MAX_LOGS_PER_CALL: u32 = 512;
/// An event whose JSON is longer than this is logged as a summary (its seq, type and size).
pub const MAX_LOG_BYTES: usize = 16 * 1024;

/// The level a client asked for, shared by the calls of one MCP session.
#[derive(Clone, Default)]
pub struct LogLevel(Arc<AtomicU8>);

impl LogLevel {
    /// Sets the lowest level sent.
    pub fn set(&self, level: LoggingLevel) {
        self.0.store(rank(level), Ordering::Relaxed);
    }

    /// Whether a message at `level` is sent (never before the client set a level).
    pub fn allows(&self, level: LoggingLevel) -> bool {
        let set = self.0.load(Ordering::Relaxed);
        set != 0 && rank(level) >= set
    }
}

/// A level's rank, from 1 (debug) to 8 (emergency); 0 means "not set".
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 1,
        LoggingLevel::Info => 2,
        LoggingLevel::Notice => 3,
        LoggingLevel::Warning => 4,
        LoggingLevel::Error => 5,
        LoggingLevel::Critical => 6,
        LoggingLevel::Alert => 7,
        LoggingLevel::Emergency => 8,
    }
}

/// The level a run event is logged at: the run's and its tools' milestones
/// at info, streamed fragments and bookkeeping at debug, pauses, awaits
/// (which MCP callers cannot answer), forced finalization and cancellation
/// at warning, failed tools and runs at error.
pub fn event_level(kind: &EventKind) -> LoggingLevel {
    match kind {
        EventKind::RunStarted { .. }
        | EventKind::RunContinued
        | EventKind::ToolStarted { .. }
        | EventKind::ChildRunLinked { .. }
        | EventKind::AwaitSatisfied { .. }
        | EventKind::AwaitWithdrawn { .. } => LoggingLevel::Info,
        EventKind::ToolFinished { output } if output.is_error() => LoggingLevel::Error,
        EventKind::ToolFinished { .. } => LoggingLevel::Info,
        EventKind::RunFinished { outcome } => match outcome {
            RunOutcome::Failed { .. } => LoggingLevel::Error,
            RunOutcome::Cancelled { .. } => LoggingLevel::Warning,
            _ => LoggingLevel::Info,
        },
        EventKind::RunPaused { .. }
        | EventKind::AwaitRequested { .. }
        | EventKind::Termination { .. } => LoggingLevel::Warning,
        EventKind::ChildEvent { event, .. } => event_level(event),
        _ => LoggingLevel::Debug,
    }
}

/// One call's log: run events at their level, when the session's level allows.
pub struct CallLog {
    level: LogLevel,
    sent: u32,
}

impl CallLog {
    /// A call's log under the session's `level`.
    pub fn new(level: LogLevel) -> Self {
        Self { level, sent: 0 }
    }

    /// The level `kind` would be logged at, if the session wants it and the
    /// call's budget lasts.
    pub fn wants(&self, kind: &EventKind) -> Option<LoggingLevel> {
        let level = event_level(kind);
        (self.sent <= MAX_LOGS_PER_CALL && self.level.allows(level)).then_some(level)
    }

    /// Logs `event` (whose JSON is `line`) at `level` to `peer`; once the
    /// budget is spent, says so instead.
    pub async fn send(
        &mut self,
        peer: &Peer<RoleServer>,
        level: LoggingLevel,
        event: &RunEvent,
        line: &str,
    ) {
        self.sent += 1;
        let data = if self.sent > MAX_LOGS_PER_CALL {
            json!({
                "seq": event.seq,
                "dropped": format!("this call logged {MAX_LOGS_PER_CALL} events; later ones are not logged"),
            })
        } else {
            bounded(event, line)
        };
        let param = LoggingMessageNotificationParam::new(level, data).with_logger("weft");
        let _ = peer.notify_logging_message(param).await;
    }
}

/// The event as JSON, or a summary of it when `line` (its JSON) is longer
/// than [`MAX_LOG_BYTES`].
fn bounded(event: &RunEvent, line: &str) -> Value {
    if line.len() <= MAX_LOG_BYTES
        && let Ok(value) = serde_json::to_value(event)
    {
        return value;
    }
    // The kind's tag follows `seq` and `at`, neither of which can hold it.
    const TAG: &str = "\"type\":\"";
    let kind = line
        .find(TAG)
        .and_then(|at| line.get(at + TAG.len()..))
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default();
    json!({"seq": event.seq, "type": kind, "truncated": true, "bytes": line.len()})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_allowed_until_a_level_is_set() {
        let level = LogLevel::default();
        assert!(!level.allows(LoggingLevel::Emergency));
        level.set(LoggingLevel::Warning);
        assert!(!level.allows(LoggingLevel::Info));
        assert!(level.allows(LoggingLevel::Warning));
        assert!(level.allows(LoggingLevel::Error));
        level.set(LoggingLevel::Debug);
        assert!(level.allows(LoggingLevel::Debug));
    }

    #[test]
    fn events_get_fitting_levels() {
        assert_eq!(
            event_level(&EventKind::RunContinued),
            LoggingLevel::Info,
            "milestones are info"
        );
        assert_eq!(
            event_level(&EventKind::AssistantChunk { text: "x".into() }),
            LoggingLevel::Debug
        );
        assert_eq!(
            event_level(&EventKind::RunPaused { reason: "r".into() }),
            LoggingLevel::Warning
        );
    }
}
