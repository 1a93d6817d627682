//! Sealing a finished run ([`super::sealed`]) without holding the store's
//! lock while its parts are encoded: the run's live parts are taken shared,
//! encoded outside the lock, and swapped in only if they are still the
//! ones encoded (a log that got events meanwhile stays live).
//!
//! It runs on the committing task. A thread of the store's own was tried
//! and measured slower on the sequential agent loop (11.6 against 7.5 µs
//! per step): the hand-over woke a thread per run, and the live parts were
//! freed on a thread other than the one that allocated them. A thread
//! sealing batches (one wake per 32 finished runs) with mimalloc was no
//! faster either (paired ratio 1.01): the committing thread gained the
//! encoding but paid for the frees that crossed threads and for the
//! store's contended lock.

use std::collections::HashMap;
use std::sync::Mutex;

use weft_core::RunId;

use super::Entry;

/// The runs of a store.
pub(super) type Runs = Mutex<HashMap<RunId, Entry>>;

fn lock(runs: &Runs) -> std::sync::MutexGuard<'_, HashMap<RunId, Entry>> {
    runs.lock().unwrap_or_else(|e| e.into_inner())
}

/// Seals one run's parts, encoding them outside the lock.
pub(super) fn seal(runs: &Runs, run_id: &RunId) {
    let (events, snapshot) = {
        let runs = lock(runs);
        let Some(entry) = runs.get(run_id) else {
            return;
        };
        (entry.events.live(), entry.snapshot.live())
    };
    let events = events.map(|live| {
        let sealed = super::log::EventLog::sealed_from(&live);
        (live, sealed)
    });
    let snapshot = snapshot.map(|live| {
        let sealed = super::sealed::Sealed::seal(&*live);
        (live, sealed)
    });
    let mut runs = lock(runs);
    let Some(entry) = runs.get_mut(run_id) else {
        return;
    };
    if let Some((live, Some(sealed))) = events {
        entry.events.replace_with(&live, sealed);
    }
    if let Some((live, Some(sealed))) = snapshot {
        entry.snapshot.replace_with(&live, sealed);
    }
}
