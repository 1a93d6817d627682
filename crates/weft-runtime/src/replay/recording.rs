//! A recorded run as replay reads it: its input, the decisions it made in
//! order, and what the world answered (tool results, await answers, model
//! outputs, the prompts rendered), taken from the run's event log; what the
//! log does not hold (labels, history length, memory read, prompt
//! overrides, the model setup) is restored from the store ([`Recording::restore_from`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;

use weft_core::awaiting::{AwaitAnswer, AwaitItem};
use weft_core::event::{EventKind, OLD_AWAIT_PAUSE_REASON, RunEvent};
use weft_core::message::Message;
use weft_core::model::{ModelSetup, ModelSummary};
use weft_core::prompt::{PromptOverride, PromptRendered};
use weft_core::run::Policy;
use weft_core::tool::{Labels, ToolOutput};
use weft_core::{AgentId, AwaitItemId, RunId, SessionId, Timestamp, ToolCallId};

use super::Decision;

/// Why a log cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordingError {
    /// The log is empty.
    #[error("run `{0}` has no events")]
    Empty(RunId),
    /// The log does not open with `run_started`.
    #[error("run `{run_id}` does not open with run_started (its first event is `{first}`)")]
    NoStart {
        /// The run.
        run_id: RunId,
        /// The first event's type.
        first: String,
    },
}

/// A decision of the recording and when it was recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// When the event was recorded.
    pub at: Timestamp,
    /// The decision.
    pub decision: Decision,
}

/// A recorded answer to an await item.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedAnswer {
    /// When it was given.
    pub at: Timestamp,
    /// The item.
    pub item_id: AwaitItemId,
    /// The answer.
    pub answer: AwaitAnswer,
}

/// A run's event log read for replay; see the module docs.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The run.
    pub run_id: RunId,
    /// Its agent.
    pub agent_id: AgentId,
    /// Its session.
    pub session_id: SessionId,
    /// The messages it started from.
    pub input: Vec<Message>,
    /// When it started.
    pub started_at: Timestamp,
    /// When its last event was recorded.
    pub last_at: Timestamp,
    /// Its decisions, in order.
    pub decisions: Vec<Recorded>,
    /// Every tool output, by call id.
    pub outputs: HashMap<ToolCallId, Arc<ToolOutput>>,
    /// The answers to its awaits (running tools' questions left out), in order.
    pub answers: Vec<RecordedAnswer>,
    /// Each model call's answer, in order, with the model's id.
    pub model_outputs: Vec<(String, ModelSummary)>,
    /// Whether the log shows model activity (text, usage) at all.
    pub used_a_model: bool,
    /// Whether the log ends with the run's outcome.
    pub finished: bool,
    /// Every prompt render, in order.
    pub rendered: Vec<PromptRendered>,
    /// The run's labels (restored; empty from the log alone).
    pub labels: Labels,
    /// How many of `input`'s first messages are session history (restored).
    pub history_len: usize,
    /// The session memory values the planner read, each as first read (restored).
    pub memory: BTreeMap<String, Value>,
    /// The prompt overrides the run rendered, one per name (restored).
    pub overrides: Vec<PromptOverride>,
    /// A child run's policy as its parent's budget clipped it (restored;
    /// `None` for other runs): the replay clips the agent's policy to it.
    pub child_caps: Option<Policy>,
    /// What its model planner first asked its model with (restored; `None`
    /// for a run without a model or recorded before weft kept it).
    pub model_setup: Option<ModelSetup>,
}

impl Recording {
    /// Reads `events`, the whole log of `run_id` in order.
    pub fn from_events(run_id: &RunId, events: &[RunEvent]) -> Result<Self, RecordingError> {
        let first = events
            .first()
            .ok_or_else(|| RecordingError::Empty(run_id.clone()))?;
        let EventKind::RunStarted {
            agent_id,
            session_id,
            input,
        } = &first.kind
        else {
            return Err(RecordingError::NoStart {
                run_id: run_id.clone(),
                first: event_type(&first.kind),
            });
        };
        let mut rec = Recording {
            run_id: run_id.clone(),
            agent_id: agent_id.clone(),
            session_id: session_id.clone(),
            input: input.clone(),
            started_at: first.at,
            last_at: first.at,
            decisions: Vec::new(),
            outputs: HashMap::new(),
            answers: Vec::new(),
            model_outputs: Vec::new(),
            used_a_model: false,
            finished: false,
            rendered: Vec::new(),
            labels: Labels::default(),
            history_len: 0,
            memory: BTreeMap::new(),
            overrides: Vec::new(),
            child_caps: None,
            model_setup: None,
        };
        let mut elicitations: Vec<AwaitItemId> = Vec::new();
        // Time a human kept the run paused is taken out of the recording's
        // clock: a pause is not replayed, and it used no active time.
        let mut paused_for = 0;
        let mut paused_at: Option<Timestamp> = None;
        let mut previous: Option<&EventKind> = None;
        for e in &events[1..] {
            match &e.kind {
                // Logs written before awaits stopped pausing have a
                // `RunPaused` right after each await: that one is not a
                // person's.
                EventKind::RunPaused { reason }
                    if !(matches!(previous, Some(EventKind::AwaitRequested { .. }))
                        && reason == OLD_AWAIT_PAUSE_REASON) =>
                {
                    paused_at = Some(e.at);
                }
                EventKind::RunContinued => {
                    if let Some(p) = paused_at.take() {
                        paused_for += e.at.as_millis().saturating_sub(p.as_millis());
                    }
                }
                _ => {}
            }
            previous = Some(&e.kind);
            let at = Timestamp::from_millis(e.at.as_millis().saturating_sub(paused_for));
            rec.last_at = at;
            if let Some(decision) = Decision::of(&e.kind) {
                rec.decisions.push(Recorded { at, decision });
            }
            match &e.kind {
                EventKind::ToolFinished { output } => {
                    rec.outputs
                        .insert(output.tool_call_id.clone(), output.clone());
                }
                EventKind::AwaitRequested { items } => elicitations.extend(
                    items
                        .iter()
                        .filter(|i| matches!(i, AwaitItem::Elicitation(_)))
                        .map(|i| i.id().clone()),
                ),
                EventKind::AwaitSatisfied { item_id, answer }
                    if !elicitations.contains(item_id) =>
                {
                    rec.answers.push(RecordedAnswer {
                        at,
                        item_id: item_id.clone(),
                        answer: answer.clone(),
                    });
                }
                EventKind::ModelOutput { model, output } => {
                    rec.model_outputs.push((model.clone(), (**output).clone()));
                }
                EventKind::AssistantChunk { .. } | EventKind::Usage { .. } => {
                    rec.used_a_model = true;
                }
                EventKind::RunFinished { .. } => rec.finished = true,
                EventKind::PromptRendered {
                    template_id,
                    version,
                    override_scope,
                } => rec.rendered.push(PromptRendered {
                    template_id: template_id.clone(),
                    version: version.clone(),
                    override_scope: override_scope.as_deref().cloned(),
                }),
                _ => {}
            }
        }
        Ok(rec)
    }

    /// The recorded model outputs alone, in order.
    pub fn model_summaries(&self) -> Vec<ModelSummary> {
        self.model_outputs.iter().map(|(_, o)| o.clone()).collect()
    }
}

/// An event's `type` tag.
fn event_type(kind: &EventKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}
