//! What a stdio server wrote last to its stderr, kept bounded for the
//! errors that say why it could not start or why it died: the user sees
//! the server's own complaint, not only "the connection closed".

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

use crate::bound::truncate_str;

/// Lines kept.
const MAX_LINES: usize = 8;
/// Longest line kept, in bytes.
const MAX_LINE: usize = 240;
/// How long an error waits for the rest of a dead server's stderr.
const EOF_WAIT: Duration = Duration::from_millis(500);

/// The last lines of one server process's stderr.
pub(crate) struct StderrTail {
    lines: Mutex<VecDeque<String>>,
    ended: watch::Sender<bool>,
}

impl Default for StderrTail {
    fn default() -> Self {
        Self {
            lines: Mutex::default(),
            ended: watch::Sender::new(false),
        }
    }
}

impl StderrTail {
    /// Keeps `line`, cut to [`MAX_LINE`] bytes, dropping the oldest.
    pub(crate) fn push(&self, line: &str) {
        let mut line = line.trim_end().to_owned();
        if line.is_empty() {
            return;
        }
        if line.len() > MAX_LINE {
            truncate_str(&mut line, MAX_LINE);
            line.push('…');
        }
        let mut lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == MAX_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// Marks the stream closed (the process is gone or closed it).
    pub(crate) fn end(&self) {
        self.ended.send_replace(true);
    }

    /// `"; its stderr ended with: …"` or nothing, after waiting (bounded)
    /// for the stream to close, so a dying server's last words are in.
    pub(crate) async fn describe(&self) -> String {
        let mut ended = self.ended.subscribe();
        let _ = tokio::time::timeout(EOF_WAIT, ended.wait_for(|e| *e)).await;
        let lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.is_empty() {
            return String::new();
        }
        let joined: Vec<&str> = lines.iter().map(String::as_str).collect();
        format!("; its stderr ended with: {}", joined.join(" | "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keeps_the_last_lines_cut_to_size() {
        let tail = StderrTail::default();
        assert_eq!(tail.describe().await, "");
        for i in 0..20 {
            tail.push(&format!("line {i}\n"));
        }
        tail.push(&"é".repeat(200));
        tail.end();
        let said = tail.describe().await;
        assert!(
            said.starts_with("; its stderr ended with: line 13 | "),
            "{said}"
        );
        assert!(!said.contains("line 12"), "{said}");
        assert!(said.ends_with("…"), "{said}");
    }
}
