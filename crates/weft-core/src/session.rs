//! The session store contract: sessions, their transcript and memory, and
//! prompt overrides. Durable stores in `weft-store` implement these traits
//! next to [`RunStore`]; [`FullStore`] names a store that does all of it.
//!
//! A session is created explicitly ([`SessionStore::create_session`]) or
//! implicitly by its first run. Ending a session marks it ended: the store
//! rejects new runs on it with [`SessionError::Ended`] (through
//! [`SessionStore::start_run`]), and the runtime cancels the runs it still has.
//! Deleting a session ends it and erases its transcript and memory.
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
use crate::store::{RunRecord, RunStore};
use crate::time::Timestamp;
use crate::tool::Labels;

pub use crate::prompt::{
    PromptOverride, PromptScope, TENANT_LABEL, select_override, select_overrides,
};

mod error;
mod listed;

pub use error::SessionError;
pub use listed::{ListedSession, SessionHead};

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

/// The most prompt overrides one listing returns.
pub const MAX_PROMPT_PAGE: u32 = 500;

/// Where a listing of prompt overrides starts: after the override with
/// this name and scope, in the listing's order (name, tenant, session, labels).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptCursor {
    /// The last listed override's name.
    pub name: String,
    /// Its scope.
    pub scope: PromptScope,
}

impl PromptCursor {
    /// The longest token [`decode`](Self::decode) reads.
    pub const MAX_TOKEN_LEN: usize = 8192;

    /// An opaque token for this cursor (its JSON, in hex).
    pub fn encode(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        json.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// A token made by [`encode`](Self::encode); `None` when malformed.
    pub fn decode(token: &str) -> Option<Self> {
        if token.len() > Self::MAX_TOKEN_LEN || !token.len().is_multiple_of(2) {
            return None;
        }
        let bytes = (0..token.len())
            .step_by(2)
            .map(|i| {
                token
                    .get(i..i + 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
            })
            .collect::<Option<Vec<u8>>>()?;
        serde_json::from_slice(&bytes).ok()
    }
}

/// Which prompt overrides to list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptFilter {
    /// Only overrides of this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Only overrides scoped to this tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// At most this many ([`MAX_PROMPT_PAGE`] when absent or larger).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Only overrides after this one (the next page of a listing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<PromptCursor>,
}

impl PromptFilter {
    /// The page size this filter asks for, within [`MAX_PROMPT_PAGE`].
    pub fn page_size(&self) -> u32 {
        self.limit
            .unwrap_or(MAX_PROMPT_PAGE)
            .clamp(1, MAX_PROMPT_PAGE)
    }
}

/// Most keys one session's memory holds.
pub const MAX_MEMORY_KEYS: usize = 1_000;

/// Largest memory value kept, in bytes of JSON.
pub const MAX_MEMORY_VALUE: usize = 64 * 1024;

/// Stores sessions and starts runs on them.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Creates a session; [`SessionError::Exists`] if the id is taken. Its
    /// `transcript_seq` is ignored: a new session's transcript is empty.
    async fn create_session(&self, session: &SessionRecord) -> Result<(), SessionError>;

    /// A session by id; [`SessionError::Corrupt`] naming it when its
    /// stored row does not decode.
    async fn get_session(
        &self,
        session_id: &SessionId,
    ) -> Result<Option<SessionRecord>, SessionError>;

    /// Sessions matching `filter`, newest first.
    async fn list_sessions(
        &self,
        filter: &SessionFilter,
    ) -> Result<Vec<SessionRecord>, SessionError>;

    /// Like [`list_sessions`](Self::list_sessions), but a row that does not
    /// decode is a [`ListedSession::Corrupt`] in its place, not the list's
    /// failure.
    async fn list_session_rows(
        &self,
        filter: &SessionFilter,
    ) -> Result<Vec<ListedSession>, SessionError> {
        let sessions = self.list_sessions(filter).await?;
        Ok(sessions.into_iter().map(ListedSession::Session).collect())
    }

    /// Session `session_id`'s label `key`, read without decoding its row
    /// (for a session that does not load); `None` when there is no such
    /// session.
    async fn session_head(
        &self,
        session_id: &SessionId,
        key: &str,
    ) -> Result<Option<SessionHead>, SessionError> {
        Ok(self.get_session(session_id).await?.map(|s| SessionHead {
            label: s.labels.get(key).cloned(),
        }))
    }

    /// Ends a session so it accepts no new runs, and returns it. Ending an
    /// ended session changes nothing (its first `ended_at` stays).
    async fn end_session(
        &self,
        session_id: &SessionId,
        now: Timestamp,
    ) -> Result<SessionRecord, SessionError>;

    /// Deletes a session: ends it like [`end_session`](Self::end_session)
    /// and erases its transcript and memory in the same write, and returns
    /// it. Its runs stay; it accepts no new ones. Deleting again changes
    /// nothing.
    async fn delete_session(
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

    /// Sets a memory value: at most [`MAX_MEMORY_KEYS`] keys per session
    /// ([`SessionError::MemoryFull`] for a new key past them) and
    /// [`MAX_MEMORY_VALUE`] bytes of JSON per value.
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

    /// One page of the overrides matching `filter`, ordered by name,
    /// tenant, session and labels; at most [`PromptFilter::page_size`].
    async fn list_prompt_overrides(
        &self,
        filter: &PromptFilter,
    ) -> Result<Vec<PromptOverride>, SessionError>;

    /// The override of `name` that applies to a run of `session_id` with
    /// `labels` (see [`select_override`]).
    async fn resolve_prompt(
        &self,
        name: &str,
        session_id: &SessionId,
        labels: &Labels,
    ) -> Result<Option<PromptOverride>, SessionError>;

    /// For every prompt name, the override that applies to a run of
    /// `session_id` with `labels` (see [`select_overrides`]).
    async fn resolve_prompts(
        &self,
        session_id: &SessionId,
        labels: &Labels,
    ) -> Result<Vec<PromptOverride>, SessionError>;
}

/// A store that keeps runs, sessions, memory and prompts: what the runtime and
/// the server need. `Arc<dyn FullStore>` coerces to `Arc<dyn RunStore>` (or
/// any other of its traits).
pub trait FullStore: RunStore + SessionStore + SessionMemoryStore + PromptStore {}

impl<T: RunStore + SessionStore + SessionMemoryStore + PromptStore + ?Sized> FullStore for T {}
