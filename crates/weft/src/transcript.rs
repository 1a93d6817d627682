//! `weft runs show`: a stored run as a readable transcript, from its event
//! log alone: the input messages, assistant text, tool calls with their
//! arguments and results, awaits and their answers, pauses, terminations,
//! the outcome and the tokens used (with their cost when the model's price
//! is known). Plain lines, no control codes.

use std::io::Write;

use serde_json::Value;
use weft_core::awaiting::{AwaitAnswer, AwaitItem};
use weft_core::event::{EventKind, RunEvent};
use weft_core::message::Role;
use weft_core::model::Usage;
use weft_core::run::RunOutcome;
use weft_core::store::StoredRun;

use crate::render::{compact, cost_part, describe_failure, tokens_line, tool_line};

/// How much of a tool call's arguments or a value a line shows.
const WIDTH: usize = 200;

/// Writes the transcript of `run` from its `events`.
pub fn write_transcript(
    out: &mut impl Write,
    run: &StoredRun,
    events: &[RunEvent],
) -> std::io::Result<()> {
    let r = &run.record;
    writeln!(
        out,
        "run {} · agent {} · session {} · {}",
        r.run_id,
        r.agent_id,
        r.session_id,
        r.status.as_str()
    )?;
    let started = events.first().map_or(r.created_at, |e| e.at);
    let mut text = String::new();
    // Usage chunks may repeat running totals; each model call's recorded
    // answer carries its merged usage once, so those are summed when present.
    let mut usage = Usage::default();
    let mut answered_usage: Option<Usage> = None;
    for e in events {
        let at = e.at.as_millis().saturating_sub(started.as_millis()) as f64 / 1000.0;
        if !matches!(e.kind, EventKind::AssistantChunk { .. }) && !text.is_empty() {
            writeln!(out, "[{at:>7.2}s] assistant: {}", std::mem::take(&mut text))?;
        }
        let line = match &e.kind {
            EventKind::RunStarted { input, .. } => input
                .iter()
                .map(|m| format!("{}: {}", role(m.role), m.joined_text()))
                .collect::<Vec<_>>()
                .join("\n           "),
            EventKind::AssistantChunk { text: t } => {
                text.push_str(t);
                continue;
            }
            EventKind::Thinking { .. } => "· thinking".to_owned(),
            EventKind::PlannerThought { text, .. } => format!("· {text}"),
            EventKind::ToolStarted { tool, payload, .. } => {
                format!("→ {tool} {}", compact(payload, WIDTH))
            }
            EventKind::ToolFinished { output } => tool_line(output),
            EventKind::AwaitRequested { items } => items
                .iter()
                .map(|i| format!("? {}", describe_item(i)))
                .collect::<Vec<_>>()
                .join("\n           "),
            EventKind::AwaitSatisfied { item_id, answer } => {
                format!("✓ {item_id}: {}", describe_answer(answer))
            }
            EventKind::AwaitWithdrawn { item_id } => format!("✗ {item_id} withdrawn"),
            EventKind::RunPaused { reason } => format!("‖ paused: {reason}"),
            EventKind::RunContinued => "▶ continued".to_owned(),
            EventKind::Termination { termination } => format!("! {}", termination.message),
            EventKind::Usage { usage: u } => {
                usage.add(u);
                continue;
            }
            EventKind::RunFinished { outcome } => format!("── {}", describe_outcome(outcome)),
            EventKind::ModelOutput { output, .. } => {
                answered_usage
                    .get_or_insert_with(Usage::default)
                    .add(&output.usage);
                continue;
            }
            EventKind::ChildRunLinked {
                child_run_id,
                agent_id,
                ..
            } => format!("↳ {agent_id} runs as {child_run_id}"),
            EventKind::ChildEvent {
                child_run_id,
                event,
                ..
            } => match &**event {
                EventKind::ToolStarted { tool, payload, .. } => {
                    format!("  {child_run_id} → {tool} {}", compact(payload, WIDTH))
                }
                EventKind::ToolFinished { output } => {
                    format!("  {child_run_id} {}", tool_line(output))
                }
                EventKind::RunFinished { outcome } => {
                    format!("  {child_run_id} ── {}", describe_outcome(outcome))
                }
                _ => continue,
            },
            EventKind::PromptRendered {
                template_id,
                version,
                override_scope,
            } => match override_scope {
                Some(scope) => format!(
                    "· prompt {template_id} {version} (override {})",
                    serde_json::to_string(scope).unwrap_or_default()
                ),
                None => format!("· prompt {template_id} {version}"),
            },
            EventKind::ToolsetUnavailable { toolset, cause } => {
                format!("⚠ toolset {toolset} unavailable: {cause}")
            }
            EventKind::ToolsetAvailable { toolset } => format!("✓ toolset {toolset} available"),
            EventKind::ToolCallArgsDelta { .. } | EventKind::ToolOutputDelta { .. } => continue,
        };
        writeln!(out, "[{at:>7.2}s] {line}")?;
    }
    if !text.is_empty() {
        writeln!(out, "            assistant: {text}")?;
    }
    let usage = answered_usage.unwrap_or(usage);
    let m = &run.snapshot;
    writeln!(
        out,
        "{} · {} · {}{}",
        crate::render::count(u64::from(m.turn()), "turn"),
        crate::render::count(u64::from(m.tool_calls_made()), "tool call"),
        tokens_line(&usage),
        cost_part(&usage)
    )
}

fn role(r: Role) -> &'static str {
    match r {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

fn describe_item(item: &AwaitItem) -> String {
    match item {
        AwaitItem::Clarification(c) => format!("{} clarification: {}", c.id, c.question),
        AwaitItem::Questions(q) => format!("{} questions for {}", q.id, q.tool_name),
        AwaitItem::ExternalTools(x) => format!("{} {} external tool call(s)", x.id, x.items.len()),
        AwaitItem::Confirmation(c) => format!(
            "{} confirm {} {}",
            c.id,
            c.tool_name,
            compact(&c.payload, WIDTH)
        ),
        AwaitItem::Elicitation(e) => format!("{} {} asks: {}", e.id, e.tool, e.message),
    }
}

fn describe_answer(answer: &AwaitAnswer) -> String {
    match answer {
        AwaitAnswer::Clarification { text } => format!("{text:?}"),
        AwaitAnswer::Confirmation { approved, reason } => {
            let verdict = if *approved { "approved" } else { "denied" };
            match reason {
                Some(r) if !approved => format!("{verdict} ({r})"),
                _ => verdict.to_owned(),
            }
        }
        other => compact(&serde_json::to_value(other).unwrap_or(Value::Null), WIDTH),
    }
}

fn describe_outcome(outcome: &RunOutcome) -> String {
    match outcome {
        RunOutcome::Response {
            message,
            termination,
        } => {
            let t = termination
                .as_ref()
                .map(|t| format!(" (finalized: {})", t.message))
                .unwrap_or_default();
            format!("answered{t}: {}", message.joined_text())
        }
        RunOutcome::ToolResult { result, .. } => {
            format!("answered with a tool result: {}", compact(result, WIDTH))
        }
        RunOutcome::Failed { failure } => format!("failed: {}", describe_failure(failure)),
        RunOutcome::Cancelled { reason } => format!("cancelled: {reason}"),
    }
}
