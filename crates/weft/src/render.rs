//! How `weft run` shows a run: readable text as it happens (with a live
//! status line on a terminal, see [`live`]), or one JSON line per event for
//! scripts. The text ends with a summary: turns, tool calls, tokens, their
//! cost when the model's price is known, and wall time.

mod live;

use std::io::Write;
use std::time::Instant;

use serde_json::{Value, json};
use weft_core::awaiting::AwaitItem;
use weft_core::event::{EventKind, RunEvent};
use weft_core::model::Usage;
use weft_core::run::{RunFailure, RunOutcome};
use weft_core::tool::{ToolOutput, ToolResultBody};

/// Output format of `weft run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Readable text: assistant text as it arrives, compact tool lines, a summary.
    Text,
    /// Every run event as one JSON line, then the outcome.
    Jsonl,
}

/// Writes a run's events to `out` in a format, keeping the summary figures.
pub struct Renderer<W: Write> {
    out: W,
    format: OutputFormat,
    started: Instant,
    turns: u32,
    tool_calls: u32,
    usage: Usage,
    mid_line: bool,
    live: Option<live::Status>,
}

impl<W: Write> Renderer<W> {
    /// A renderer writing to `out`.
    pub fn new(out: W, format: OutputFormat) -> Self {
        Self {
            out,
            format,
            started: Instant::now(),
            turns: 0,
            tool_calls: 0,
            usage: Usage::default(),
            mid_line: false,
            live: None,
        }
    }

    /// With `on` (and text output), keeps a live status line under the
    /// output: a spinner while the model thinks or tools run. For terminals
    /// only: it writes control codes.
    pub fn live(mut self, on: bool) -> Self {
        self.live = (on && self.format == OutputFormat::Text).then(live::Status::default);
        self
    }

    /// Redraws the live status line (call it a few times a second).
    pub fn tick(&mut self) -> std::io::Result<()> {
        match &mut self.live {
            Some(status) if !self.mid_line => status.draw(&mut self.out),
            _ => Ok(()),
        }
    }

    /// Shows one event.
    pub fn event(&mut self, e: &RunEvent) -> std::io::Result<()> {
        self.count(&e.kind);
        if let Some(status) = &mut self.live {
            status.clear(&mut self.out)?;
            status.observe(&e.kind);
        }
        match self.format {
            OutputFormat::Jsonl => {
                serde_json::to_writer(&mut self.out, e)?;
                writeln!(self.out)?;
            }
            OutputFormat::Text => self.text(&e.kind)?,
        }
        self.tick()?;
        self.out.flush()
    }

    /// Shows that the run stopped awaiting answers to `items`, which it
    /// waits for in the store: `{"awaiting": {"run_id", "items"}}` as JSON.
    pub fn awaiting(&mut self, run_id: &str, items: &[AwaitItem]) -> std::io::Result<()> {
        match self.format {
            OutputFormat::Jsonl => {
                let awaiting = json!({ "awaiting": { "run_id": run_id, "items": items } });
                serde_json::to_writer(&mut self.out, &awaiting)?;
                writeln!(self.out)?;
            }
            OutputFormat::Text => {
                if let Some(status) = &mut self.live {
                    status.clear(&mut self.out)?;
                }
                self.end_line()?;
                let answers = count(items.len() as u64, "answer");
                writeln!(self.out, "── awaiting {answers}: run {run_id}")?;
            }
        }
        self.out.flush()
    }

    /// Shows the outcome (and, for text, the summary).
    pub fn outcome(&mut self, outcome: &RunOutcome) -> std::io::Result<()> {
        match self.format {
            OutputFormat::Jsonl => {
                serde_json::to_writer(&mut self.out, &json!({ "outcome": outcome }))?;
                writeln!(self.out)?;
            }
            OutputFormat::Text => {
                if let Some(status) = &mut self.live {
                    status.clear(&mut self.out)?;
                }
                self.end_line()?;
                let status = match outcome {
                    RunOutcome::Response {
                        termination: None, ..
                    }
                    | RunOutcome::ToolResult {
                        termination: None, ..
                    } => "done".to_owned(),
                    RunOutcome::Response {
                        termination: Some(t),
                        ..
                    }
                    | RunOutcome::ToolResult {
                        termination: Some(t),
                        ..
                    } => {
                        format!("done (finalized: {})", t.message)
                    }
                    RunOutcome::Failed { failure } => {
                        format!("failed: {}", describe_failure(failure))
                    }
                    RunOutcome::Cancelled { reason } => format!("cancelled: {reason}"),
                };
                writeln!(
                    self.out,
                    "── {status} · {} · {} · {}{} · {:.2} s",
                    count(u64::from(self.turns), "turn"),
                    count(u64::from(self.tool_calls), "tool call"),
                    tokens_line(&self.usage),
                    cost_part(&self.usage),
                    self.started.elapsed().as_secs_f64()
                )?;
            }
        }
        self.out.flush()
    }

    fn count(&mut self, kind: &EventKind) {
        match kind {
            EventKind::ToolStarted { .. } => self.tool_calls += 1,
            EventKind::Usage { usage } => self.usage.add(usage),
            _ => {}
        }
        if let EventKind::RunFinished { .. } = kind {
            self.turns = self.turns.max(1);
        }
    }

    /// Records the number of planner turns (read from the stored run).
    pub fn set_turns(&mut self, turns: u32) {
        self.turns = turns;
    }

    fn end_line(&mut self) -> std::io::Result<()> {
        if self.mid_line {
            writeln!(self.out)?;
            self.mid_line = false;
        }
        Ok(())
    }

    fn text(&mut self, kind: &EventKind) -> std::io::Result<()> {
        match kind {
            EventKind::AssistantChunk { text } => {
                write!(self.out, "{text}")?;
                self.mid_line = !text.ends_with('\n');
            }
            EventKind::ToolStarted {
                tool,
                payload,
                description,
                ..
            } => {
                self.end_line()?;
                let desc = description
                    .as_deref()
                    .map(|d| format!("  # {d}"))
                    .unwrap_or_default();
                writeln!(self.out, "→ {tool} {}{desc}", compact(payload, 160))?;
            }
            EventKind::ToolFinished { output } => {
                self.end_line()?;
                writeln!(self.out, "{}", tool_line(output))?;
            }
            EventKind::Thinking { .. } => {
                self.end_line()?;
                writeln!(self.out, "· thinking…")?;
            }
            EventKind::AwaitRequested { items } => {
                self.end_line()?;
                writeln!(self.out, "‖ paused: waiting for {} answer(s)", items.len())?;
            }
            EventKind::Termination { termination } => {
                self.end_line()?;
                writeln!(self.out, "! {}", termination.message)?;
            }
            EventKind::PlannerThought { text, .. } => {
                self.end_line()?;
                writeln!(self.out, "· {text}")?;
            }
            EventKind::ChildRunLinked {
                child_run_id,
                agent_id,
                ..
            } => {
                self.end_line()?;
                writeln!(self.out, "↳ {agent_id} runs as {child_run_id}")?;
            }
            // A child's tool calls, indented under the call that runs it.
            EventKind::ChildEvent { event, .. } => match &**event {
                EventKind::ToolStarted { tool, payload, .. } => {
                    self.end_line()?;
                    writeln!(self.out, "  → {tool} {}", compact(payload, 160))?;
                }
                EventKind::ToolFinished { output } => {
                    self.end_line()?;
                    writeln!(self.out, "  {}", tool_line(output))?;
                }
                _ => {}
            },
            // A diagnostic, as `weft run`'s other failures: on stderr.
            EventKind::ToolsetUnavailable { toolset, cause } => {
                self.end_line()?;
                let mut err = std::io::stderr().lock();
                writeln!(err, "weft: toolset `{toolset}` is unavailable: {cause}")?;
            }
            EventKind::ToolsetAvailable { toolset } => {
                self.end_line()?;
                let mut err = std::io::stderr().lock();
                writeln!(err, "weft: toolset `{toolset}` is available again")?;
            }
            EventKind::RunStarted { .. }
            | EventKind::RunPaused { .. }
            | EventKind::RunContinued
            | EventKind::RunFinished { .. }
            | EventKind::ToolCallArgsDelta { .. }
            | EventKind::ToolOutputDelta { .. }
            | EventKind::AwaitSatisfied { .. }
            | EventKind::AwaitWithdrawn { .. }
            | EventKind::ModelOutput { .. }
            | EventKind::PromptRendered { .. }
            | EventKind::Usage { .. } => {}
        }
        Ok(())
    }
}

/// One line for a finished tool call: its result (or error) and duration.
pub(crate) fn tool_line(o: &ToolOutput) -> String {
    let ms = o.telemetry.as_ref().map_or(0, |t| t.duration_ms);
    match &o.result {
        ToolResultBody::Json(v) => format!("← {} {} ({ms} ms)", o.name, compact(v, 160)),
        ToolResultBody::Content(c) => format!("← {} {} part(s) ({ms} ms)", o.name, c.parts.len()),
        ToolResultBody::Omitted(om) => format!("← {} {} ({ms} ms)", o.name, om.marker()),
        ToolResultBody::Error(e) => format!("✗ {} {}: {} ({ms} ms)", o.name, e.code, e.message),
    }
}

/// The tokens `usage` counts, as the summary lines show them; marked
/// `≈ … (estimated)` when weft estimated some of them.
pub(crate) fn tokens_line(usage: &Usage) -> String {
    if usage.estimated {
        return format!(
            "≈{} tokens in / {} out (estimated)",
            usage.input_tokens, usage.output_tokens
        );
    }
    format!(
        "{} tokens in / {} out",
        usage.input_tokens, usage.output_tokens
    )
}

/// ` · $0.0123` when `usage` has a cost; nothing when its price is unknown.
pub(crate) fn cost_part(usage: &Usage) -> String {
    usage
        .cost_usd
        .map(|usd| format!(" · ${usd:.4}"))
        .unwrap_or_default()
}

/// `v` as compact JSON, cut to `max` characters.
pub(crate) fn compact(v: &Value, max: usize) -> String {
    let s = v.to_string();
    if s.chars().count() <= max {
        return s;
    }
    let cut: String = s.chars().take(max).collect();
    format!("{cut}…")
}

/// `n` and `noun`, plural unless `n` is one.
pub(crate) fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Why a run failed, in words, on one line (a provider's message may span
/// several).
pub(crate) fn describe_failure(f: &RunFailure) -> String {
    let text = describe_failure_text(f);
    if text.contains(['\n', '\r']) {
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    } else {
        text
    }
}

fn describe_failure_text(f: &RunFailure) -> String {
    match f {
        RunFailure::InvalidToolCall {
            tool_name, reason, ..
        } => reason.describe(tool_name),
        RunFailure::Planner { message }
        | RunFailure::SessionMemory { message }
        | RunFailure::Protocol { message }
        | RunFailure::Other { message } => message.clone(),
        RunFailure::FinalizerTimeout { termination } => {
            format!(
                "no final answer within the grace period after: {}",
                termination.message
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimated_tokens_are_labelled_and_counts_take_their_plural() {
        let reported = Usage {
            input_tokens: 120,
            output_tokens: 21,
            ..Usage::default()
        };
        assert_eq!(tokens_line(&reported), "120 tokens in / 21 out");
        let estimated = Usage {
            estimated: true,
            ..reported
        };
        assert_eq!(
            tokens_line(&estimated),
            "≈120 tokens in / 21 out (estimated)"
        );
        assert_eq!(count(1, "tool call"), "1 tool call");
        assert_eq!(count(0, "turn"), "0 turns");
        assert_eq!(count(2, "turn"), "2 turns");
    }

    #[test]
    fn a_failure_is_described_on_one_line() {
        let f = RunFailure::Planner {
            message: "model compat/x: HTTP 500: Traceback\n  File \"x\"\nError".into(),
        };
        assert_eq!(
            describe_failure(&f),
            "model compat/x: HTTP 500: Traceback File \"x\" Error"
        );
    }
}
