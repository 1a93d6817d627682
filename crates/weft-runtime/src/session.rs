//! A run's session as the runtime sees it: the history a new run starts
//! from (the session's transcript under the agent's history policy, older
//! turns summarized by a model when the policy says so), the memory its
//! planner reads and writes ([`SessionMemory`]), and the messages a
//! completed run adds to the transcript ([`transcript_of`]).
//!
//! How many of a run's first messages are history is kept in the run's
//! state under [`HISTORY_LEN_KEY`], so it survives recovery on another
//! process. Memory writes are buffered during a planning call and stored
//! (an upsert, so a replanned turn writes again harmlessly) before the step
//! that made them is committed. The stored values a planner read are kept
//! in the run's state under [`MEMORY_READ_KEY`] (each key as first read),
//! so a replay gives the planner the memory the run saw.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use weft_core::history::{
    HISTORY_WINDOW, HistoryPolicy, select_history, session_messages, summary_message,
    summary_request,
};
use weft_core::message::Message;
use weft_core::model::ModelClient;
use weft_core::planner::MemoryView;
use weft_core::run::RunMachine;
use weft_core::session::{FullStore, SessionError};
use weft_core::store::StoreError;
use weft_core::{SessionId, Timestamp};

use crate::agent::Agent;
use crate::error::RuntimeError;

/// The run state key holding how many of the run's first messages are its
/// session's history.
pub(crate) const HISTORY_LEN_KEY: &str = "weft.session.history_len";

/// The run state key holding the session memory values the run's planner
/// read from the store (not its own writes), by key, each as first read.
pub(crate) const MEMORY_READ_KEY: &str = "weft.session.memory_read";

/// A session store failure as a runtime error.
pub(crate) fn session_error(e: SessionError) -> RuntimeError {
    match e {
        SessionError::Ended { session_id } => RuntimeError::SessionEnded(session_id),
        SessionError::Store(e) => e.into(),
        SessionError::Corrupt { .. } => RuntimeError::Store(StoreError::Corrupt {
            message: e.to_string(),
        }),
        other => RuntimeError::Store(StoreError::Backend {
            message: other.to_string(),
        }),
    }
}

/// A new run's first messages, its session's history (from `store`, when
/// there is one) then its `input`, and how many of them are history.
pub(crate) async fn start_messages(
    store: Option<&dyn FullStore>,
    agent: &Agent,
    session_id: &SessionId,
    input: Vec<Message>,
) -> Result<(Vec<Message>, usize), RuntimeError> {
    let mut messages = match store {
        Some(store) => history(store, agent, session_id).await?,
        None => Vec::new(),
    };
    let len = messages.len();
    messages.extend(input);
    Ok((messages, len))
}

/// Records in the run's state that its first `len` messages are history.
pub(crate) fn mark_history(machine: &mut RunMachine, len: usize) {
    if len > 0 {
        machine.set_state(HISTORY_LEN_KEY.to_owned(), Value::from(len));
    }
}

/// The messages a new run of `agent` in `session_id` starts from, before its
/// own input; [`RuntimeError::SessionEnded`] when the session has ended.
async fn history(
    store: &dyn FullStore,
    agent: &Agent,
    session_id: &SessionId,
) -> Result<Vec<Message>, RuntimeError> {
    let Some(session) = store.get_session(session_id).await.map_err(session_error)? else {
        return Ok(Vec::new());
    };
    if session.is_ended() {
        return Err(RuntimeError::SessionEnded(session_id.clone()));
    }
    let summarizes = matches!(agent.history, HistoryPolicy::Summarize { .. });
    if session.transcript_seq == 0 || (agent.history.keep_turns() == 0 && !summarizes) {
        return Ok(Vec::new());
    }
    let after = session
        .transcript_seq
        .saturating_sub(u64::from(HISTORY_WINDOW));
    let entries = store
        .read_transcript(session_id, after, Some(HISTORY_WINDOW))
        .await
        .map_err(session_error)?;
    let messages = entries.into_iter().map(|e| e.message).collect();
    let selection = select_history(&agent.history, messages);
    let HistoryPolicy::Summarize { model, .. } = &agent.history else {
        return Ok(selection.kept);
    };
    if selection.older.is_empty() {
        return Ok(selection.kept);
    }
    let failed = |message: String| RuntimeError::History {
        session_id: session_id.clone(),
        message,
    };
    let client = summarizer(agent, model.as_deref()).map_err(failed)?;
    let summary = client
        .complete(&summary_request(&selection.older))
        .await
        .map_err(|e| failed(format!("the summary by `{}` failed: {e}", client.id())))?;
    if summary.text.trim().is_empty() {
        return Err(failed(format!("`{}` gave an empty summary", client.id())));
    }
    let mut out = vec![summary_message(&summary.text)];
    out.extend(selection.kept);
    Ok(out)
}

/// The model that summarizes history: the one named, else the planner's,
/// else the agent's only model.
fn summarizer(agent: &Agent, named: Option<&str>) -> Result<Arc<dyn ModelClient>, String> {
    if let Some(id) = named {
        return agent.models.get(id).cloned().ok_or_else(|| {
            format!("the history policy names model `{id}`, which the agent lacks")
        });
    }
    if let Some(client) = agent.planner.model_id().and_then(|id| agent.models.get(id)) {
        return Ok(client.clone());
    }
    match agent.models.values().collect::<Vec<_>>().as_slice() {
        [only] => Ok((*only).clone()),
        _ => Err("no model to summarize with: name one in the history policy".to_owned()),
    }
}

/// How many of the run's first messages are session history.
pub(crate) fn history_len(machine: &RunMachine) -> usize {
    machine
        .state()
        .get(HISTORY_LEN_KEY)
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0)
}

/// The messages of a completed run that join its session's transcript.
pub(crate) fn transcript_of(machine: &RunMachine) -> Vec<Message> {
    session_messages(machine.transcript().iter().skip(history_len(machine)))
}

/// One planning call's view of its session's memory: the values stored when
/// the call began, the run's history, the call's own writes, and which
/// stored values it read.
pub(crate) struct SessionMemory {
    values: BTreeMap<String, Value>,
    history: Vec<Message>,
    writes: Mutex<Vec<(String, Value)>>,
    reads: Mutex<BTreeMap<String, Value>>,
}

impl SessionMemory {
    /// The memory of the run `machine` holds: its history, and the values
    /// stored for `session_id` when a store is given.
    pub(crate) async fn load(
        store: Option<&dyn FullStore>,
        session_id: &SessionId,
        machine: &RunMachine,
    ) -> Result<Self, SessionError> {
        let values = match store {
            Some(store) => store.memory_all(session_id).await?.into_iter().collect(),
            None => BTreeMap::new(),
        };
        Ok(Self::over(values, machine))
    }

    /// The memory of the run `machine` holds, with `values` as stored.
    pub(crate) fn over(values: BTreeMap<String, Value>, machine: &RunMachine) -> Self {
        let history = machine
            .transcript()
            .iter()
            .take(history_len(machine))
            .cloned()
            .collect();
        Self {
            values,
            history,
            writes: Mutex::new(Vec::new()),
            reads: Mutex::new(BTreeMap::new()),
        }
    }

    fn writes(&self) -> std::sync::MutexGuard<'_, Vec<(String, Value)>> {
        self.writes.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn reads(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Value>> {
        self.reads.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The buffered writes, taken.
    pub(crate) fn take_writes(&self) -> Vec<(String, Value)> {
        std::mem::take(&mut *self.writes())
    }

    /// Adds the stored values read since the last call to the run's state
    /// under [`MEMORY_READ_KEY`]; a key already there keeps its first value.
    pub(crate) fn record_reads(&self, machine: &mut RunMachine) {
        let reads = std::mem::take(&mut *self.reads());
        if reads.is_empty() {
            return;
        }
        let mut kept = machine
            .state()
            .get(MEMORY_READ_KEY)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let before = kept.len();
        for (key, value) in reads {
            kept.entry(key).or_insert(value);
        }
        if kept.len() != before {
            machine.set_state(MEMORY_READ_KEY.to_owned(), Value::Object(kept));
        }
    }

    /// Buffers a write until [`store_writes`](Self::store_writes).
    pub(crate) fn remember(&self, key: &str, value: Value) {
        self.writes().push((key.to_owned(), value));
    }

    /// Stores the buffered writes, in order.
    pub(crate) async fn store_writes(
        &self,
        store: &dyn FullStore,
        session_id: &SessionId,
        now: Timestamp,
    ) -> Result<(), SessionError> {
        let writes = self.take_writes();
        for (key, value) in &writes {
            store.memory_set(session_id, key, value, now).await?;
        }
        Ok(())
    }
}

impl MemoryView for SessionMemory {
    fn get(&self, key: &str) -> Option<Value> {
        let written = self
            .writes()
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone());
        written.or_else(|| {
            let stored = self.values.get(key).cloned();
            if let Some(v) = &stored {
                self.reads()
                    .entry(key.to_owned())
                    .or_insert_with(|| v.clone());
            }
            stored
        })
    }

    fn history(&self) -> &[Message] {
        &self.history
    }
}
