//! The API's request and response bodies, with their OpenAPI schemas.
//!
//! weft-core types do not derive `ToSchema`; fields holding them (messages,
//! outcomes, await items and answers) are serialized with weft-core's own
//! serde shapes and documented by the hand-written schemas of
//! `message_schema`, `await_schema` and `event_schema`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use weft_core::awaiting::{AwaitAnswer, AwaitItem};
use weft_core::message::{Message, Part, Role};
use weft_core::run::{PhaseName, RunMachine, RunOutcome, Step};
use weft_core::store::{RunRecord, RunStatus};
use weft_core::tool::Labels;

use crate::await_schema::{AwaitAnswerSchema, AwaitItemSchema};
use crate::error::ApiError;
use crate::message_schema::RunInputSchema;
use crate::outcome_schema::RunOutcomeSchema;

pub use crate::session_bodies::{
    CreateSession, EndedSession, SessionList, SessionQuery, SessionView, SkippedSession,
};

/// A run's input: one user text, or a list of messages.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RunInput {
    /// One user message with this text.
    Text(String),
    /// Messages in weft's message format.
    Messages(Vec<Message>),
}

impl RunInput {
    /// The input as messages. Clients speak only as the user, in text,
    /// images and audio: system prompts come from agent files, assistant
    /// turns and tool calls and results only from the runtime (a forged
    /// tool-use id would collide with the runtime's own).
    pub fn into_messages(self) -> Result<Vec<Message>, ApiError> {
        let messages = match self {
            RunInput::Text(text) => vec![Message::user(text)],
            RunInput::Messages(m) => m,
        };
        if messages.is_empty() {
            return Err(ApiError::field("input", "give at least one message"));
        }
        for (i, m) in messages.iter().enumerate() {
            if m.role != Role::User {
                return Err(ApiError::field(
                    format!("input[{i}].role"),
                    "only `user` messages may be sent; system prompts come from the agent file, \
                     assistant and tool messages from the runtime",
                ));
            }
            if let Some(j) = m
                .parts
                .iter()
                .position(|p| !matches!(p, Part::Text { .. } | Part::Image(_) | Part::Audio(_)))
            {
                return Err(ApiError::field(
                    format!("input[{i}].parts[{j}].type"),
                    "a user message holds only `text`, `image` and `audio` parts",
                ));
            }
        }
        Ok(messages)
    }
}

/// `POST /v1/runs`: starts a run.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartRun {
    /// The agent to run.
    pub agent: String,
    /// The caller's session (a new one when absent; another tenant's or an
    /// unknown session is a 404).
    #[serde(default)]
    pub session_id: Option<String>,
    /// A user text, or an array of weft messages (`{"role": ..., "parts": [...]}`).
    #[schema(value_type = RunInputSchema)]
    pub input: RunInput,
    /// Labels for the run (`weft.*` keys are reserved).
    #[serde(default)]
    pub labels: Labels,
}

/// The items a run awaits and the answers given so far.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AwaitView {
    /// The items (`kind`: clarification, questions, external_tools,
    /// confirmation, elicitation). Elicitations are questions of running
    /// tools: the run stays `running` while they wait.
    #[schema(value_type = Vec<AwaitItemSchema>)]
    pub items: Vec<AwaitItem>,
    /// The answer of each item so far, by position (`null` when unanswered).
    #[schema(value_type = Vec<Option<AwaitAnswerSchema>>)]
    pub answers: Vec<Option<AwaitAnswer>>,
}

/// A run: its record, and its outcome or what it awaits.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RunView {
    /// The run's id.
    pub run_id: String,
    /// Its agent.
    pub agent_id: String,
    /// Its session.
    pub session_id: String,
    /// Where it stands.
    #[schema(value_type = RunStatusSchema)]
    pub status: RunStatus,
    /// Its labels, including `weft.tenant`.
    pub labels: Labels,
    /// When it was created, in milliseconds since the Unix epoch.
    pub created_at: u64,
    /// When it last changed.
    pub updated_at: u64,
    /// The machine's phase as of the last commit.
    #[schema(value_type = Option<PhaseSchema>)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<PhaseName>,
    /// Whether a human paused it (in lists: whether its status is `paused`).
    pub paused: bool,
    /// How it ended, once finished.
    #[schema(value_type = Option<RunOutcomeSchema>)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<RunOutcome>,
    /// What it waits for, while awaiting.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "await")]
    pub awaiting: Option<AwaitView>,
    /// The sequence number of its last committed event (not in lists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_seq: Option<u64>,
    /// How many child runs it started: agents it called as tools, each a
    /// run labelled `weft.parent_run` with its id (only when the run is
    /// read alone, `GET /v1/runs/{run_id}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_count: Option<u64>,
}

impl RunView {
    /// The view of a run from its record and, when loaded, its snapshot.
    pub fn new(record: RunRecord, snapshot: Option<&RunMachine>) -> Self {
        let mut view = Self {
            run_id: record.run_id.to_string(),
            agent_id: record.agent_id.to_string(),
            session_id: record.session_id.to_string(),
            status: record.status,
            labels: record.labels,
            created_at: record.created_at.as_millis(),
            updated_at: record.updated_at.as_millis(),
            phase: None,
            paused: record.status == RunStatus::Paused,
            outcome: None,
            awaiting: None,
            event_seq: None,
            child_count: None,
        };
        if let Some(machine) = snapshot {
            view.phase = Some(machine.phase_name());
            view.paused = machine.is_paused();
            view.outcome = machine.outcome().cloned();
            view.event_seq = Some(machine.event_seq());
            if !machine.elicitations().is_empty() {
                view.awaiting = Some(AwaitView {
                    items: machine
                        .elicitations()
                        .iter()
                        .cloned()
                        .map(AwaitItem::Elicitation)
                        .collect(),
                    answers: vec![None; machine.elicitations().len()],
                });
            } else if machine.phase_name() == PhaseName::Awaiting {
                // `next_step` applies the time budget, which never changes an
                // awaiting machine; it runs on a clone all the same.
                let mut probe = machine.clone();
                let now = weft_core::Timestamp::from_millis(record.updated_at.as_millis());
                if let Step::Await { items, answers } = probe.next_step(now) {
                    view.awaiting = Some(AwaitView {
                        items: items.to_vec(),
                        answers: answers.to_vec(),
                    });
                }
            }
        }
        view
    }
}

/// A list of runs, newest first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RunList {
    /// The runs (records only: no outcome or await items).
    pub runs: Vec<RunView>,
    /// The page's runs whose stored row cannot be read: left out of `runs`,
    /// the list goes on past them. Absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedRun>,
    /// Pass as `cursor` for the next page; absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A run left out of a list because its stored row cannot be read.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SkippedRun {
    /// The run.
    pub run_id: String,
    /// Always true: its stored data is corrupt.
    pub corrupt: bool,
    /// What cannot be read, in short.
    pub error: String,
}

/// `POST /v1/runs/{id}/answers`: answers one await item.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProvideAnswer {
    /// The await item's id.
    pub item_id: String,
    /// The answer, tagged by `kind`: `{"kind": "clarification", "text": ...}`,
    /// `{"kind": "questions", "answers": {"q": ["option"]}}`,
    /// `{"kind": "external_tools", "results": [...]}`,
    /// `{"kind": "confirmation", "approved": true, "reason": ...}` or
    /// `{"kind": "elicitation", "action": "accept" | "decline" | "cancel",
    /// "content": {...}}` (`content`, the form's fields, only to accept a form).
    #[schema(value_type = AwaitAnswerSchema)]
    pub answer: AwaitAnswer,
}

/// The await's progress after an answer.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AnswerAccepted {
    /// How many items still need answers (0: the run continued).
    pub remaining: usize,
    /// Whether every item is answered and the run continued.
    pub satisfied: bool,
}

/// The body of `POST /v1/runs/{id}/pause|continue` and
/// `POST /v1/sessions/{id}/end`: none, or `{}`. It is read all the same, so
/// the body limit and the content type apply as on every other route.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NoOptions {}

/// `POST /v1/runs/{id}/cancel`: an optional reason.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelRun {
    /// Why the run is cancelled (default: "cancelled by request").
    #[serde(default)]
    pub reason: Option<String>,
}

/// `GET /v1/runs` query parameters.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RunQuery {
    /// Only runs of this session.
    pub session_id: Option<String>,
    /// Only runs of this agent.
    pub agent: Option<String>,
    /// Only runs carrying every one of these labels: `key=value` pairs,
    /// comma-separated.
    pub label: Option<String>,
    /// Only runs with one of these statuses, comma-separated
    /// (running, awaiting, paused, completed, failed, cancelled).
    pub status: Option<String>,
    /// At most this many runs (default 50, at most 500).
    pub limit: Option<u32>,
    /// Continue after the page that gave this `next_cursor`.
    pub cursor: Option<String>,
}

/// `GET /v1/runs/{id}/events` query parameters.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// Catch up on the events after this sequence number (`Last-Event-ID` wins when both are given).
    pub after: Option<u64>,
}

/// `GET /healthz`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Health {
    /// Always `ok`.
    pub status: String,
}

/// Where a run stands (the schema of weft-core's `RunStatus`).
#[derive(ToSchema)]
#[schema(as = RunStatus, rename_all = "snake_case")]
#[allow(dead_code)] // Exists for its schema only.
pub(crate) enum RunStatusSchema {
    /// Being driven (or waiting to be recovered after a crash).
    Running,
    /// Waiting for await answers.
    Awaiting,
    /// Paused by a human.
    Paused,
    /// Finished with a response or tool result.
    Completed,
    /// Finished with a failure.
    Failed,
    /// Cancelled.
    Cancelled,
}

/// The run machine's phase (the schema of weft-core's `PhaseName`).
#[derive(ToSchema)]
#[schema(as = Phase, rename_all = "snake_case")]
#[allow(dead_code)] // Exists for its schema only.
pub(crate) enum PhaseSchema {
    /// Waiting for a plan result.
    Planning,
    /// Waiting for an invalid-call resolution.
    Resolving,
    /// Waiting for tool results.
    Executing,
    /// Waiting for await answers.
    Awaiting,
    /// Over.
    Finished,
}
