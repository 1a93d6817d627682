//! A server's progress and log notifications as the output of the calls
//! they belong to: each call carries a progress token of its own (rmcp puts
//! one in every request's `_meta`), and a `notifications/progress` with that
//! token goes to the call's output sink as a line on the `progress` stream; a
//! `notifications/message` (a log line, which names no call) goes to the
//! `log` stream of the connection's call in flight when there is exactly
//! one, and is dropped otherwise, so a log line never reaches the wrong
//! run. The runtime turns both into `ToolOutputDelta` run events.
//!
//! Bounded: a line is cut at [`MAX_LINE`] bytes, and a call gets at most
//! [`MAX_PER_SECOND`] lines a second (the rest are counted and dropped).
//!
//! rmcp marks logging deprecated (SEP-2577, a draft of the spec); servers of
//! every released protocol version up to 2025-11-25 still send it.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use rmcp::model::{
    LoggingMessageNotificationParam, NumberOrString, ProgressNotificationParam, ProgressToken,
};
use weft_core::tool::OutputSink;

use crate::bound::truncate_str;

/// Longest line published, in bytes.
pub(crate) const MAX_LINE: usize = 1024;
/// Most lines a call publishes per second.
pub(crate) const MAX_PER_SECOND: u32 = 20;

/// The calls in flight on one connection that may receive notifications.
#[derive(Default)]
pub(crate) struct Listeners {
    calls: Mutex<HashMap<String, Listener>>,
}

struct Listener {
    output: OutputSink,
    window: Instant,
    sent: u32,
    dropped: u64,
}

/// A call's registration; removed when dropped.
pub(crate) struct Listening {
    listeners: Arc<Listeners>,
    key: String,
}

impl Drop for Listening {
    fn drop(&mut self) {
        let dropped = self
            .listeners
            .lock()
            .remove(&self.key)
            .map_or(0, |l| l.dropped);
        if dropped > 0 {
            tracing::debug!(
                token = %self.key,
                dropped,
                "progress and log lines over the rate limit were dropped"
            );
        }
    }
}

impl Listeners {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Listener>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers the call sent with progress token `token`, whose output
    /// goes to `output`; `None` for a detached sink (nobody to tell).
    pub(crate) fn listen(
        self: &Arc<Self>,
        token: &ProgressToken,
        output: &OutputSink,
    ) -> Option<Listening> {
        if !output.is_attached() {
            return None;
        }
        let key = token_key(token);
        self.lock().insert(
            key.clone(),
            Listener {
                output: output.clone(),
                window: Instant::now(),
                sent: 0,
                dropped: 0,
            },
        );
        Some(Listening {
            listeners: self.clone(),
            key,
        })
    }

    /// A progress notification: to the call holding its token.
    pub(crate) fn progress(&self, p: &ProgressNotificationParam) {
        let key = token_key(&p.progress_token);
        let line = progress_line(p);
        let mut calls = self.lock();
        match calls.get_mut(&key) {
            Some(listener) => listener.publish("progress", &line),
            None => tracing::debug!(token = %key, "progress for no call in flight"),
        }
    }

    /// A log notification: to the one call in flight, if there is one.
    pub(crate) fn log(&self, m: &LoggingMessageNotificationParam) {
        let mut calls = self.lock();
        if calls.len() != 1 {
            tracing::debug!(
                calls = calls.len(),
                "a server log line with no single call in flight to take it"
            );
            return;
        }
        if let Some(listener) = calls.values_mut().next() {
            listener.publish("log", &log_line(m));
        }
    }
}

impl Listener {
    fn publish(&mut self, stream: &str, line: &str) {
        let now = Instant::now();
        if now.duration_since(self.window).as_secs() >= 1 {
            self.window = now;
            self.sent = 0;
        }
        if self.sent >= MAX_PER_SECOND {
            self.dropped += 1;
            return;
        }
        self.sent += 1;
        self.output.publish(stream, line);
    }
}

/// A token as a map key (a number and a string of its digits are one key).
fn token_key(token: &ProgressToken) -> String {
    match &token.0 {
        NumberOrString::String(s) => s.to_string(),
        NumberOrString::Number(n) => n.to_string(),
    }
}

/// `3/10: message\n` (the total and the message when given).
fn progress_line(p: &ProgressNotificationParam) -> String {
    let mut line = number(p.progress);
    if let Some(total) = p.total {
        line.push('/');
        line.push_str(&number(total));
    }
    if let Some(m) = &p.message {
        line.push_str(": ");
        line.push_str(m);
    }
    finish(line)
}

/// `[level] logger: data\n`, the data as text when it is a string.
fn log_line(m: &LoggingMessageNotificationParam) -> String {
    let level = serde_json::to_value(m.level)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "info".to_owned());
    let mut line = format!("[{level}] ");
    if let Some(logger) = &m.logger {
        line.push_str(logger);
        line.push_str(": ");
    }
    match &m.data {
        serde_json::Value::String(s) => line.push_str(s),
        other => line.push_str(&other.to_string()),
    }
    finish(line)
}

fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// One line: no inner newlines, at most [`MAX_LINE`] bytes, then `\n`.
fn finish(mut line: String) -> String {
    line = line.replace(['\n', '\r'], " ");
    if line.len() > MAX_LINE {
        truncate_str(&mut line, MAX_LINE);
        line.push('…');
    }
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex as StdMutex;

    use rmcp::model::LoggingLevel;

    use super::*;

    type Seen = Arc<StdMutex<Vec<(String, String)>>>;

    fn capture() -> (OutputSink, Seen) {
        let seen: Seen = Arc::default();
        let s = seen.clone();
        let sink = OutputSink::new(move |stream, delta| {
            s.lock()
                .unwrap()
                .push((stream.to_owned(), delta.to_owned()));
        });
        (sink, seen)
    }

    fn progress(token: &ProgressToken, n: f64, message: Option<&str>) -> ProgressNotificationParam {
        let mut p = ProgressNotificationParam::new(token.clone(), n);
        p.total = Some(10.0);
        p.message = message.map(str::to_owned);
        p
    }

    #[test]
    fn progress_goes_to_its_own_call_and_logs_only_to_a_lone_one() {
        let listeners = Arc::new(Listeners::default());
        let (a_sink, a) = capture();
        let (b_sink, b) = capture();
        let a_token = ProgressToken(NumberOrString::Number(1));
        let b_token = ProgressToken(NumberOrString::String("b".into()));
        let a_reg = listeners.listen(&a_token, &a_sink).unwrap();
        let _b_reg = listeners.listen(&b_token, &b_sink).unwrap();
        listeners.progress(&progress(&a_token, 3.0, Some("copying")));
        listeners.progress(&progress(&b_token, 7.5, None));
        assert_eq!(
            a.lock().unwrap().as_slice(),
            [("progress".to_owned(), "3/10: copying\n".to_owned())]
        );
        assert_eq!(
            b.lock().unwrap().as_slice(),
            [("progress".to_owned(), "7.5/10\n".to_owned())]
        );
        let log = LoggingMessageNotificationParam::new(
            LoggingLevel::Warning,
            serde_json::json!("slow\nquery"),
        )
        .with_logger("db");
        // Two calls in flight: a log line names neither, so neither gets it.
        listeners.log(&log);
        assert_eq!(a.lock().unwrap().len(), 1);
        drop(a_reg);
        listeners.log(&log);
        assert_eq!(
            b.lock().unwrap().last().unwrap(),
            &("log".to_owned(), "[warning] db: slow query\n".to_owned())
        );
        // A finished call's token reaches nobody.
        listeners.progress(&progress(&a_token, 4.0, None));
        assert_eq!(a.lock().unwrap().len(), 1);
    }

    #[test]
    fn lines_are_bounded_in_size_and_rate() {
        let listeners = Arc::new(Listeners::default());
        let (sink, seen) = capture();
        let token = ProgressToken(NumberOrString::Number(7));
        let _reg = listeners.listen(&token, &sink).unwrap();
        let long = "x".repeat(5000);
        for i in 0..100 {
            listeners.progress(&progress(&token, f64::from(i), Some(&long)));
        }
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), MAX_PER_SECOND as usize);
        assert!(
            seen.iter().all(|(_, l)| l.len() <= MAX_LINE + 4),
            "{}",
            seen[0].1.len()
        );
        assert!(listeners.listen(&token, &OutputSink::detached()).is_none());
    }
}
