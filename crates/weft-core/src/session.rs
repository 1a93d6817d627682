//! The session store contract: sessions, their transcript and memory, and
//! prompt overrides. Durable stores in `weft-store` implement these traits
//! next to [`RunStore`]; [`FullStore`] names a store that does all of it.
//!
//! A session is created explicitly ([`SessionStore::create_session`]) or
//! implicitly by its first run. Ending a session marks it ended: the store
//! rejects new runs on it with [`SessionError::Ended`] (through
//! [`SessionStore::start_run`]), and the runtime cancels the runs it still has.
//!
//! The transcript is a per-session, sequence-numbered log of messages with the
//! same rules as a run's event log: appending an entry whose sequence number
//! is already stored is a no-op, a gap is an error. Memory is a per-session
//! key/value map of JSON values.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::RunEvent;
use crate::ids::{RunId, SessionId};
use crate::message::Message;
use crate::run::RunMachine;
use crate::store::{RunRecord, RunStore, StoreError};
use crate::time::Timestamp;
use crate::tool::Labels;

/// A session's index entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The session.
    pub session_id: SessionId,
    /// Its labels.
    #[serde(default)]
    pub labels: Labels,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it was ended, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<Timestamp>,
    /// Sequence number of its last transcript entry (0 when empty).
    #[serde(default)]
    pub transcript_seq: u64,
}

impl SessionRecord {
    /// A new, open session with an empty transcript.
    pub fn new(session_id: SessionId, labels: Labels, created_at: Timestamp) -> Self {
        Self {
            session_id,
            labels,
            created_at,
            ended_at: None,
            transcript_seq: 0,
        }
    }

    /// Whether the session has ended.
    pub fn is_ended(&self) -> bool {
        self.ended_at.is_some()
    }
}

/// Which sessions to list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionFilter {
    /// Include ended sessions too.
    #[serde(default)]
    pub include_ended: bool,
    /// At most this many, newest first (all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Only sessions carrying every one of these labels with these values.
    #[serde(default, skip_serializing_if = "crate::tool::Labels::is_empty")]
    pub labels: crate::tool::Labels,
    /// Only sessions older than this one (the next page of a listing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<crate::store::ListCursor>,
}

/// One entry of a session's transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptEntry {
    /// Position in the session's transcript, from 1, without gaps.
    pub seq: u64,
    /// The run that produced it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<RunId>,
    /// When it was recorded.
    pub at: Timestamp,
    /// The message.
    pub message: Message,
}

/// Where a prompt override applies.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptScope {
    /// Only runs of this session (every session when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// Only runs carrying every one of these labels (all runs when empty).
    #[serde(default)]
    pub labels: Labels,
}

impl PromptScope {
    /// Whether a run of `session_id` with `labels` is in this scope.
    pub fn matches(&self, session_id: &SessionId, labels: &Labels) -> bool {
        self.session_id.as_ref().is_none_or(|s| s == session_id)
            && self.labels.iter().all(|(k, v)| labels.get(k) == Some(v))
    }

    /// How specific the scope is: a session beats any set of labels, then more labels win.
    pub fn specificity(&self) -> (bool, usize) {
        (self.session_id.is_some(), self.labels.len())
    }
}

/// A prompt template that replaces the agent's named prompt within a scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptOverride {
    /// The prompt's name, as passed to `PlannerContext::render_prompt`.
    pub name: String,
    /// Where it applies.
    pub scope: PromptScope,
    /// The template.
    pub template: String,
    /// When it was last set.
    pub updated_at: Timestamp,
}

/// Picks the override that applies to a run: the most specific matching
/// scope, the most recently set among equals.
pub fn select_override<'a>(
    candidates: impl IntoIterator<Item = &'a PromptOverride>,
    session_id: &SessionId,
    labels: &Labels,
) -> Option<&'a PromptOverride> {
    candidates
        .into_iter()
        .filter(|o| o.scope.matches(session_id, labels))
        .max_by_key(|o| (o.scope.specificity(), o.updated_at))
}

/// Why a session operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// The session does not exist.
    #[error("session `{session_id}` not found")]
    NotFound {
        /// The session.
        session_id: SessionId,
    },
    /// The session already exists.
    #[error("session `{session_id}` already exists")]
    Exists {
        /// The session.
        session_id: SessionId,
    },
    /// The session has ended and accepts no new runs.
    #[error("session `{session_id}` has ended and accepts no new runs")]
    Ended {
        /// The session.
        session_id: SessionId,
    },
    /// A transcript entry's sequence number leaves a gap.
    #[error("transcript entry {seq} of session `{session_id}` would leave a gap after {last}")]
    TranscriptGap {
        /// The session.
        session_id: SessionId,
        /// The last stored sequence number.
        last: u64,
        /// The sequence number given.
        seq: u64,
    },
    /// The underlying store failed (including run errors from `start_run`).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Stores sessions and starts runs on them.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Creates a session; [`SessionError::Exists`] if the id is taken. Its
    /// `transcript_seq` is ignored: a new session's transcript is empty.
    async fn create_session(&self, session: &SessionRecord) -> Result<(), SessionError>;

    /// A session by id.
    async fn get_session(
        &self,
        session_id: &SessionId,
    ) -> Result<Option<SessionRecord>, SessionError>;

    /// Sessions matching `filter`, newest first.
    async fn list_sessions(
        &self,
        filter: &SessionFilter,
    ) -> Result<Vec<SessionRecord>, SessionError>;

    /// Ends a session so it accepts no new runs, and returns it. Ending an
    /// ended session changes nothing (its first `ended_at` stays).
    async fn end_session(
        &self,
        session_id: &SessionId,
        now: Timestamp,
    ) -> Result<SessionRecord, SessionError>;

    /// Creates a run like [`RunStore::create_run`], atomically checking that
    /// its session is open ([`SessionError::Ended`] otherwise). A session that
    /// does not exist yet is created with no labels.
    async fn start_run(
        &self,
        record: &RunRecord,
        events: &[RunEvent],
        snapshot: &RunMachine,
    ) -> Result<(), SessionError>;
}

/// Stores each session's transcript and memory.
#[async_trait]
pub trait SessionMemoryStore: Send + Sync {
    /// Appends transcript entries, in sequence order; already-stored sequence
    /// numbers are skipped, a gap is [`SessionError::TranscriptGap`].
    async fn append_transcript(
        &self,
        session_id: &SessionId,
        entries: &[TranscriptEntry],
    ) -> Result<(), SessionError>;

    /// Transcript entries with a sequence number above `after`, in order, at most `limit`.
    async fn read_transcript(
        &self,
        session_id: &SessionId,
        after: u64,
        limit: Option<u32>,
    ) -> Result<Vec<TranscriptEntry>, SessionError>;

    /// Sets a memory value.
    async fn memory_set(
        &self,
        session_id: &SessionId,
        key: &str,
        value: &Value,
        now: Timestamp,
    ) -> Result<(), SessionError>;

    /// A memory value.
    async fn memory_get(
        &self,
        session_id: &SessionId,
        key: &str,
    ) -> Result<Option<Value>, SessionError>;

    /// Every memory value of the session, by key.
    async fn memory_all(
        &self,
        session_id: &SessionId,
    ) -> Result<Vec<(String, Value)>, SessionError>;

    /// Removes a memory value; whether it existed.
    async fn memory_delete(&self, session_id: &SessionId, key: &str) -> Result<bool, SessionError>;
}

/// Stores prompt overrides.
#[async_trait]
pub trait PromptStore: Send + Sync {
    /// Sets an override, replacing the one with the same name and scope.
    async fn set_prompt_override(&self, prompt: &PromptOverride) -> Result<(), SessionError>;

    /// Removes the override with this name and scope; whether it existed.
    async fn delete_prompt_override(
        &self,
        name: &str,
        scope: &PromptScope,
    ) -> Result<bool, SessionError>;

    /// Every override named `name`, or every override when `name` is absent.
    async fn list_prompt_overrides(
        &self,
        name: Option<&str>,
    ) -> Result<Vec<PromptOverride>, SessionError>;

    /// The override of `name` that applies to a run of `session_id` with
    /// `labels` (see [`select_override`]).
    async fn resolve_prompt(
        &self,
        name: &str,
        session_id: &SessionId,
        labels: &Labels,
    ) -> Result<Option<PromptOverride>, SessionError>;
}

/// A store that keeps runs, sessions, memory and prompts: what the runtime and
/// the server need. `Arc<dyn FullStore>` coerces to `Arc<dyn RunStore>` (or
/// any other of its traits).
pub trait FullStore: RunStore + SessionStore + SessionMemoryStore + PromptStore {}

impl<T: RunStore + SessionStore + SessionMemoryStore + PromptStore + ?Sized> FullStore for T {}
