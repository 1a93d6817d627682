//! [`Progress`]: what one agent call reports to its client while the run
//! goes on: each run event as a progress notification (when the client gave
//! a progress token) and as a log message (when the session's log level
//! wants it).

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use weft_core::event::RunEvent;

use super::logging::{CallLog, LogLevel};

/// A running call's reports to its client.
pub struct Progress {
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    count: u64,
    log: CallLog,
}

impl Progress {
    /// Reports for a call from `peer`, with its progress token (if any) and
    /// its session's log level.
    pub(crate) fn new(
        peer: Peer<RoleServer>,
        token: Option<ProgressToken>,
        level: LogLevel,
    ) -> Self {
        Self {
            peer,
            token,
            count: 0,
            log: CallLog::new(level),
        }
    }

    /// Reports one run event; the event is serialized only when something is sent.
    pub async fn event(&mut self, event: &RunEvent) {
        self.count += 1;
        let level = self.log.wants(&event.kind);
        if self.token.is_none() && level.is_none() {
            return;
        }
        let Ok(line) = serde_json::to_string(event) else {
            return;
        };
        if let Some(level) = level {
            self.log.send(&self.peer, level, event, &line).await;
        }
        if let Some(token) = &self.token {
            let mut param = ProgressNotificationParam::new(token.clone(), self.count as f64);
            param.message = Some(line);
            let _ = self.peer.notify_progress(param).await;
        }
    }
}
