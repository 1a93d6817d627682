//! The in-memory store's event logs: appending with the store contract's
//! rules (duplicates skipped, a conflicting duplicate or a gap refused), and the compact form a
//! finished run's log is kept in.
//!
//! A live run's events are kept as values, ready to read. Once the run has
//! finished its log is sealed ([`Sealed`]: compressed JSON, a fraction of
//! the memory of the values; see [`super::sealer`]), and decoded again only
//! when it is read. A sealed log that gets more events is opened first.

use std::sync::Arc;

use weft_core::RunId;
use weft_core::event::RunEvent;
use weft_core::store::StoreError;

use super::sealed::Sealed;

/// A run's events, oldest first.
#[derive(Debug)]
pub(super) enum EventLog {
    /// Kept as values (shared with the sealer while it encodes them).
    Live(Arc<Vec<RunEvent>>),
    /// Kept compactly, with the last sequence number.
    Sealed {
        last_seq: u64,
        events: Sealed<Vec<RunEvent>>,
    },
}

impl Default for EventLog {
    fn default() -> Self {
        Self::Live(Arc::default())
    }
}

impl EventLog {
    /// The sequence number of the last event (0 when there is none).
    pub(super) fn last_seq(&self) -> u64 {
        match self {
            Self::Live(events) => events.last().map_or(0, |e| e.seq),
            Self::Sealed { last_seq, .. } => *last_seq,
        }
    }

    /// Appends `events`: stored sequence numbers are skipped when their
    /// event is the stored one; other content under a stored number, or a
    /// gap, is an error and nothing is appended.
    pub(super) fn append(&mut self, run_id: &RunId, events: &[RunEvent]) -> Result<(), StoreError> {
        let first_new = self.last_seq();
        let mut last = first_new;
        for e in events {
            if e.seq <= last {
                if self.stored(run_id, e.seq)?.is_some_and(|kept| kept != *e) {
                    return Err(StoreError::SequenceConflict {
                        run_id: run_id.clone(),
                        seq: e.seq,
                    });
                }
                continue;
            }
            if e.seq != last + 1 {
                return Err(StoreError::SequenceGap {
                    run_id: run_id.clone(),
                    last,
                    seq: e.seq,
                });
            }
            last = e.seq;
        }
        if last == first_new {
            return Ok(());
        }
        self.open(run_id)?
            .extend(events.iter().filter(|e| e.seq > first_new).cloned());
        Ok(())
    }

    /// The live events, shared; `None` when the log is sealed.
    pub(super) fn live(&self) -> Option<Arc<Vec<RunEvent>>> {
        match self {
            Self::Live(events) => Some(events.clone()),
            Self::Sealed { .. } => None,
        }
    }

    /// The compact form of `events`; `None` when they cannot be encoded.
    pub(super) fn sealed_from(events: &[RunEvent]) -> Option<Self> {
        Some(Self::Sealed {
            last_seq: events.last().map_or(0, |e| e.seq),
            events: Sealed::seal(events)?,
        })
    }

    /// Takes `sealed` in place of the live events `were`, if the log still
    /// holds exactly those (events appended meanwhile keep it live).
    pub(super) fn replace_with(&mut self, were: &Arc<Vec<RunEvent>>, sealed: Self) {
        if let Self::Live(events) = self
            && Arc::ptr_eq(events, were)
        {
            *self = sealed;
        }
    }

    /// Up to `limit` events after sequence number `after`.
    pub(super) fn read(
        &self,
        run_id: &RunId,
        after: u64,
        limit: Option<u32>,
    ) -> Result<Vec<RunEvent>, StoreError> {
        let page = |events: &[RunEvent]| {
            let start = events.partition_point(|e| e.seq <= after);
            let end = limit.map_or(events.len(), |l| {
                start.saturating_add(l as usize).min(events.len())
            });
            events[start..end].to_vec()
        };
        match self {
            Self::Live(events) => Ok(page(events.as_slice())),
            Self::Sealed { events, .. } => Ok(page(&decode(run_id, events)?)),
        }
    }

    /// The stored event with sequence number `seq`.
    fn stored(&self, run_id: &RunId, seq: u64) -> Result<Option<RunEvent>, StoreError> {
        Ok(self
            .read(run_id, seq.saturating_sub(1), Some(1))?
            .into_iter()
            .find(|e| e.seq == seq))
    }

    /// The log as values, decoding a sealed one.
    fn open(&mut self, run_id: &RunId) -> Result<&mut Vec<RunEvent>, StoreError> {
        if let Self::Sealed { events, .. } = self {
            *self = Self::Live(Arc::new(decode(run_id, events)?));
        }
        match self {
            Self::Live(events) => Ok(Arc::make_mut(events)),
            Self::Sealed { .. } => Err(StoreError::Corrupt {
                message: format!("events of run `{run_id}` stayed sealed"),
            }),
        }
    }
}

fn decode(run_id: &RunId, events: &Sealed<Vec<RunEvent>>) -> Result<Vec<RunEvent>, StoreError> {
    events.open().map_err(|e| StoreError::Corrupt {
        message: format!("events of run `{run_id}` cannot be decoded: {e}"),
    })
}

/// The error for a run the store does not have.
pub(super) fn not_found(run_id: &RunId) -> StoreError {
    StoreError::RunNotFound {
        run_id: run_id.clone(),
    }
}
