//! The live status line of `weft run` on a terminal: a spinner saying what
//! the run is doing (the model thinking, tools running) and for how long,
//! redrawn in place and erased before any other output. Only ever drawn on
//! a terminal; plain output never carries a control code.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

use weft_core::ToolCallId;
use weft_core::event::EventKind;

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// Erases the current line and returns to its start.
const ERASE: &str = "\r\x1b[2K";

/// What the run is doing, as the status line shows it.
#[derive(Debug, Default)]
pub(crate) struct Status {
    thinking_since: Option<Instant>,
    running: BTreeMap<ToolCallId, (String, Instant)>,
    frame: usize,
    shown: bool,
}

impl Status {
    /// Follows the run's state from one event.
    pub(crate) fn observe(&mut self, kind: &EventKind) {
        match kind {
            EventKind::RunStarted { .. } | EventKind::RunContinued => self.think(),
            EventKind::ToolStarted {
                tool_call_id, tool, ..
            } => {
                self.thinking_since = None;
                self.running
                    .insert(tool_call_id.clone(), (tool.to_string(), Instant::now()));
            }
            EventKind::ToolFinished { output } => {
                self.running.remove(&output.tool_call_id);
                if self.running.is_empty() {
                    self.think();
                }
            }
            EventKind::AwaitRequested { .. }
            | EventKind::RunPaused { .. }
            | EventKind::RunFinished { .. } => {
                self.thinking_since = None;
                self.running.clear();
            }
            _ => {}
        }
    }

    fn think(&mut self) {
        self.thinking_since.get_or_insert_with(Instant::now);
    }

    /// Draws the next frame of the status line, if there is anything to say.
    pub(crate) fn draw(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        let what = if let Some((tool, since)) = self.running.values().min_by_key(|(_, s)| *s) {
            let more = match self.running.len() {
                1 => String::new(),
                n => format!(" (+{} more)", n - 1),
            };
            format!(
                "running {tool}{more} · {:.1} s",
                since.elapsed().as_secs_f64()
            )
        } else if let Some(since) = self.thinking_since {
            format!("thinking · {:.1} s", since.elapsed().as_secs_f64())
        } else {
            return self.clear(out);
        };
        self.frame = (self.frame + 1) % FRAMES.len();
        write!(out, "{ERASE}{} {what}", FRAMES[self.frame])?;
        self.shown = true;
        out.flush()
    }

    /// Erases the status line if it is shown.
    pub(crate) fn clear(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        if self.shown {
            write!(out, "{ERASE}")?;
            self.shown = false;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use weft_core::tool::{ToolIdent, ToolOutput};

    use super::*;

    #[test]
    fn shows_thinking_then_running_tools_then_nothing() {
        let mut s = Status::default();
        let mut out = Vec::new();
        s.draw(&mut out).unwrap();
        assert!(out.is_empty(), "nothing to show before the run starts");
        s.observe(&EventKind::RunContinued);
        s.draw(&mut out).unwrap();
        let text = String::from_utf8(std::mem::take(&mut out)).unwrap();
        assert!(
            text.starts_with(ERASE) && text.contains("thinking · 0."),
            "{text}"
        );
        s.observe(&EventKind::ToolStarted {
            tool_call_id: "c1".into(),
            tool: ToolIdent::new("calc.add"),
            payload: Arc::new(json!({})),
            description: None,
        });
        s.draw(&mut out).unwrap();
        let text = String::from_utf8(std::mem::take(&mut out)).unwrap();
        assert!(text.contains("running calc.add · 0."), "{text}");
        s.observe(&EventKind::ToolFinished {
            output: Arc::new(ToolOutput::ok(
                "c1".into(),
                ToolIdent::new("calc.add"),
                json!({}),
                json!(5),
            )),
        });
        s.draw(&mut out).unwrap();
        assert!(String::from_utf8_lossy(&out).contains("thinking"));
        s.observe(&EventKind::RunPaused {
            reason: "await".into(),
        });
        out.clear();
        s.draw(&mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), ERASE, "the line is erased");
    }
}
