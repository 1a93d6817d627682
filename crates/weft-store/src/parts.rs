//! A run's snapshot stored in parts: the machine's head in `runs.snapshot`
//! and its transcript's messages and tool outputs as rows of
//! `run_snapshot_parts`, numbered from 0 per kind, only ever added.
//!
//! A commit writes the head and the items the database does not hold yet,
//! so what it writes does not grow with the run's length. Which items are
//! held comes from a [`PartCache`] of the runs this store committed: it is
//! updated only after a durable commit, so it never counts an item that is
//! not stored. A run missing from it (another process drove it, the store
//! was reopened, the entry was forgotten) gets every item written again, as
//! inserts that ignore rows already there; that is correct for any number
//! of processes and after a crash, only slower.
//!
//! Reading: [`stored_snapshot`] tells a head from a whole machine (as
//! stored before parts existed; it carries no `parts` field), and
//! [`rebuild`] puts a head and its rows back together. A missing, extra or
//! unreadable part is [`StoreError::Corrupt`], never a panic.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Deserialize;
use weft_core::RunId;
use weft_core::message::Message;
use weft_core::run::{RunMachine, SnapshotHead};
use weft_core::store::{RunStatus, StoreError};
use weft_core::tool::ToolOutput;

use crate::codec;
use crate::error::corrupt;

/// The kind of a transcript message's row.
pub(crate) const MESSAGE: &str = "message";

/// The kind of a tool output's row.
pub(crate) const OUTPUT: &str = "output";

/// Most parts one `INSERT` carries.
pub(crate) const PARTS_PER_INSERT: usize = 100;

/// Most runs a [`PartCache`] remembers.
const CACHED_RUNS: usize = 4096;

/// A part ready to insert: its kind, its index and its JSON body.
pub(crate) type EncodedPart = (&'static str, i64, String);

/// A stored part as read: kind, index, JSON body.
pub(crate) type PartRow = (String, i64, String);

/// How many messages and tool outputs of a run are stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Transcript messages.
    pub(crate) messages: usize,
    /// Tool outputs.
    pub(crate) outputs: usize,
}

/// A machine encoded for storage: its head and the parts to insert.
#[derive(Debug)]
pub(crate) struct EncodedSnapshot {
    /// The head's JSON, for `runs.snapshot`.
    pub(crate) head: String,
    /// The items not known to be stored.
    pub(crate) parts: Vec<EncodedPart>,
    /// The machine's counts: what is stored once the write lands.
    pub(crate) counts: Counts,
}

impl EncodedSnapshot {
    /// The bytes of JSON this write stores: the head and the new parts.
    pub(crate) fn bytes(&self) -> usize {
        self.head.len() + self.parts.iter().map(|(_, _, b)| b.len()).sum::<usize>()
    }
}

/// The bytes of JSON one commit of `machine` stores (its head for
/// `runs.snapshot`, and the transcript messages and tool outputs past the
/// first `messages` and `outputs`, which the store already holds, for the
/// parts table): what a durable step writes, whatever database it goes to.
pub fn commit_bytes(
    machine: &RunMachine,
    messages: usize,
    outputs: usize,
) -> Result<usize, StoreError> {
    encode(machine, Counts { messages, outputs }).map(|e| e.bytes())
}

/// `machine` as a head and the parts past `known`.
pub(crate) fn encode(machine: &RunMachine, known: Counts) -> Result<EncodedSnapshot, StoreError> {
    let messages = machine.transcript();
    let outputs = machine.tool_outputs();
    let mut parts = Vec::new();
    for (i, message) in messages.iter().enumerate().skip(known.messages) {
        parts.push((
            MESSAGE,
            codec::int(i as u64, "message index")?,
            codec::to_json(message, "message")?,
        ));
    }
    for (i, output) in outputs.iter().enumerate().skip(known.outputs) {
        parts.push((
            OUTPUT,
            codec::int(i as u64, "output index")?,
            codec::to_json(&**output, "tool output")?,
        ));
    }
    Ok(EncodedSnapshot {
        head: codec::to_json(&machine.snapshot_head(), "snapshot")?,
        parts,
        counts: Counts {
            messages: messages.len(),
            outputs: outputs.len(),
        },
    })
}

/// `INSERT` text for `n` parts of one run (`$1` is the run id), ignoring
/// parts already stored.
pub(crate) fn insert_parts_sql(n: usize) -> String {
    let mut sql = String::from("INSERT INTO run_snapshot_parts (run_id, kind, idx, body) VALUES ");
    for i in 0..n {
        if i > 0 {
            sql.push_str(", ");
        }
        sql.push_str(&format!(
            "($1, ${}, ${}, ${})",
            2 + 3 * i,
            3 + 3 * i,
            4 + 3 * i
        ));
    }
    sql.push_str(" ON CONFLICT (run_id, kind, idx) DO NOTHING");
    sql
}

/// The runs this store committed and how many of their parts are stored.
/// Shared by the store's clones; bounded: a finished run is forgotten, and
/// past [`CACHED_RUNS`] an arbitrary run is.
#[derive(Debug, Clone, Default)]
pub(crate) struct PartCache {
    runs: Arc<Mutex<HashMap<RunId, Counts>>>,
}

impl PartCache {
    /// How many of `run_id`'s parts are known to be stored (none when the
    /// run is not remembered).
    pub(crate) fn known(&self, run_id: &RunId) -> Counts {
        let runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        runs.get(run_id).copied().unwrap_or_default()
    }

    /// Records that `counts` of `run_id`'s parts are stored, after a durable
    /// write that left the run in `status`.
    pub(crate) fn stored(&self, run_id: &RunId, counts: Counts, status: RunStatus) {
        let mut runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        if status.is_finished() {
            runs.remove(run_id);
            return;
        }
        if !runs.contains_key(run_id)
            && runs.len() >= CACHED_RUNS
            && let Some(any) = runs.keys().next().cloned()
        {
            runs.remove(&any);
        }
        let entry = runs.entry(run_id.clone()).or_default();
        // Parts are never deleted: the larger count is the true one.
        entry.messages = entry.messages.max(counts.messages);
        entry.outputs = entry.outputs.max(counts.outputs);
    }

    /// How many runs are remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// A stored `runs.snapshot`: a head whose parts are rows, or a whole
/// machine stored before parts existed.
#[derive(Debug)]
pub(crate) enum Stored {
    /// A head; its parts are in `run_snapshot_parts`.
    Head(SnapshotHead),
    /// A whole machine, already checked.
    Whole(RunMachine),
}

/// Only whether the JSON has a `parts` field (serde skips everything else).
#[derive(Deserialize)]
struct Probe {
    #[serde(default)]
    parts: Option<serde::de::IgnoredAny>,
}

/// Reads `runs.snapshot`: a head (it has `parts`) or a whole machine.
pub(crate) fn stored_snapshot(run_id: &RunId, text: &str) -> Result<Stored, StoreError> {
    let is_head = serde_json::from_str::<Probe>(text).is_ok_and(|p| p.parts.is_some());
    if is_head {
        codec::parse_snapshot(run_id, text).map(Stored::Head)
    } else {
        codec::snapshot(run_id, text).map(Stored::Whole)
    }
}

/// The machine `head` describes, from its parts (ordered by kind, then
/// index), checked.
pub(crate) fn rebuild(
    run_id: &RunId,
    head: SnapshotHead,
    rows: &[PartRow],
) -> Result<RunMachine, StoreError> {
    let bad = |what: String| corrupt(format!("snapshot of run `{run_id}`: {what}"));
    let mut messages: Vec<Message> = Vec::new();
    let mut outputs: Vec<Arc<ToolOutput>> = Vec::new();
    for (kind, idx, body) in rows {
        let expected = match kind.as_str() {
            MESSAGE => messages.len(),
            OUTPUT => outputs.len(),
            other => return Err(bad(format!("a part of unknown kind `{other}`"))),
        };
        if usize::try_from(*idx).ok() != Some(expected) {
            return Err(bad(format!(
                "{kind} part {expected} is missing (the next stored one is {idx})"
            )));
        }
        let what = format!("{kind} part {idx} of run `{run_id}`");
        if kind == MESSAGE {
            messages.push(codec::from_json(body, &what)?);
        } else {
            outputs.push(Arc::new(codec::from_json(body, &what)?));
        }
    }
    RunMachine::from_parts(head, messages, outputs).map_err(|e| bad(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: usize) -> RunId {
        RunId::new(format!("r{n}"))
    }

    #[test]
    fn the_cache_keeps_the_larger_count_and_forgets_finished_and_excess_runs() {
        let cache = PartCache::default();
        let c = |messages, outputs| Counts { messages, outputs };
        cache.stored(&id(0), c(5, 2), RunStatus::Running);
        cache.stored(&id(0), c(3, 4), RunStatus::Awaiting);
        assert_eq!(cache.known(&id(0)), c(5, 4));
        cache.stored(&id(0), c(6, 4), RunStatus::Completed);
        assert_eq!(cache.known(&id(0)), Counts::default());
        for n in 0..CACHED_RUNS + 10 {
            cache.stored(&id(n), c(1, 1), RunStatus::Running);
        }
        assert_eq!(cache.len(), CACHED_RUNS);
        assert_eq!(cache.known(&id(CACHED_RUNS + 9)), c(1, 1));
    }

    #[test]
    fn the_insert_statement_numbers_its_parameters() {
        assert_eq!(
            insert_parts_sql(2),
            "INSERT INTO run_snapshot_parts (run_id, kind, idx, body) VALUES \
             ($1, $2, $3, $4), ($1, $5, $6, $7) ON CONFLICT (run_id, kind, idx) DO NOTHING"
        );
    }
}
