//! Event fan-out: a run's log buffer, its live subscribers and their catch-up.
//!
//! Events get their sequence number when they are emitted and wait in the
//! run's pending buffer until a commit stores them; only then, and only when
//! someone subscribed, are they broadcast. So no subscriber ever sees an
//! event a crash could take back, and a sequence number a client saw is never
//! reused. A subscriber takes a receiver, then reads committed events from
//! the store; merging both by sequence number gives every event exactly once,
//! in order. With no subscriber, emitting an event is a push onto a vector.
//! Streamed assistant text is merged while it waits, one event per commit.
//!
//! A run driven by another process (or by none yet) has no local driver to
//! broadcast: its subscribers read the store every [`EVENT_POLL`], backing
//! off while nothing happens.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use tokio::sync::{Notify, broadcast};
use weft_core::RunId;
use weft_core::event::{EventKind, RunEvent};
use weft_core::ids::ToolCallId;
use weft_core::message::Thinking;
use weft_core::model::{ModelSummary, Usage};
use weft_core::planner::PlannerEvents;
use weft_core::run::{RunMachine, RunOutcome};
use weft_core::tool::Labels;

use crate::clock::Clock;
use crate::error::RuntimeError;
use crate::inbox::Inbox;

mod stream;

pub use stream::{CATCH_UP_PAGE, EventStream};

const CHANNEL_CAPACITY: usize = 1024;

/// Largest assistant text one event grows to by merging streamed deltas.
const MAX_MERGED_CHUNK: usize = 16 * 1024;

/// The per-run state shared by the driver, the event sink and subscribers.
pub(crate) struct RunShared {
    pub(crate) run_id: RunId,
    log: Mutex<LogState>,
    pub(crate) cancel: tokio_util::sync::CancellationToken,
    /// The epoch of the driver task that owns the run now; 0 when none does.
    owner: AtomicU64,
    /// Why the run was asked to cancel.
    cancel_reason: Mutex<Option<String>>,
    /// Set by `Runtime::pause`; the driver pauses at its next step.
    pub(crate) pause_requested: AtomicBool,
    /// Set once when the run ends (or its driver fails).
    pub(crate) finished: OnceLock<Result<RunOutcome, RuntimeError>>,
    /// Wakes outcome waiters when `finished` is set.
    pub(crate) done: Notify,
    /// Serializes the control of this run (answer, pause, continue, cancel,
    /// recover) with a driver's final commit and release of the run, so a
    /// control call sees the run either still driven or already stored.
    pub(crate) control: Arc<tokio::sync::Mutex<()>>,
    /// Open while the driver executes a batch: elicitations of running
    /// tools and answers to them go through it.
    pub(crate) inbox: Inbox,
}

#[derive(Default)]
struct LogState {
    /// The last sequence number handed out.
    seq: u64,
    pending: Vec<RunEvent>,
    /// The last sequence number a commit was tried with. Those events may
    /// be stored even when the commit reported a failure, so they are never
    /// extended afterwards: a retry must send them unchanged.
    tried: u64,
    committing: Option<Arc<Vec<RunEvent>>>,
    tx: Option<broadcast::Sender<Arc<RunEvent>>>,
}

impl LogState {
    /// Numbers the event and keeps it for the next commit. Assistant text
    /// that follows assistant text in the same commit extends that event
    /// (up to [`MAX_MERGED_CHUNK`] bytes), so a streamed answer is stored
    /// and delivered as one event per commit, not one per token.
    fn push(&mut self, at: weft_core::Timestamp, kind: EventKind) {
        if let EventKind::AssistantChunk { text } = &kind
            && let Some(RunEvent {
                kind: EventKind::AssistantChunk { text: last },
                seq,
                ..
            }) = self.pending.last_mut()
            && *seq > self.tried
            && last.len() + text.len() <= MAX_MERGED_CHUNK
        {
            last.push_str(text);
            return;
        }
        self.seq += 1;
        self.pending.push(RunEvent {
            seq: self.seq,
            at,
            kind,
        });
    }
}

impl RunShared {
    pub(crate) fn new(run_id: RunId, seq: u64) -> Self {
        Self {
            run_id,
            log: Mutex::new(LogState {
                seq,
                ..LogState::default()
            }),
            cancel: tokio_util::sync::CancellationToken::new(),
            owner: AtomicU64::new(0),
            cancel_reason: Mutex::new(None),
            pause_requested: AtomicBool::new(false),
            finished: OnceLock::new(),
            done: Notify::new(),
            control: Arc::new(tokio::sync::Mutex::new(())),
            inbox: Inbox::default(),
        }
    }

    /// Whether a driver task owns the run.
    pub(crate) fn is_driven(&self) -> bool {
        self.owner.load(Ordering::Acquire) != 0
    }

    /// Records that the driver with `epoch` owns the run.
    pub(crate) fn claim(&self, epoch: u64) {
        self.owner.store(epoch, Ordering::Release);
    }

    /// The epoch of the driver that owns the run; 0 when none does.
    pub(crate) fn driven_at(&self) -> u64 {
        self.owner.load(Ordering::Acquire)
    }

    /// Releases the run if the driver with `epoch` still owns it; false when
    /// a newer driver took over.
    pub(crate) fn release(&self, epoch: u64) -> bool {
        self.owner
            .compare_exchange(epoch, 0, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Asks the driver to cancel the run.
    pub(crate) fn request_cancel(&self, reason: &str) {
        *self.cancel_reason.lock().unwrap_or_else(|e| e.into_inner()) = Some(reason.to_owned());
        self.cancel.cancel();
    }

    /// Why the run was asked to cancel.
    pub(crate) fn cancel_reason(&self) -> String {
        self.cancel_reason
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_else(|| "cancelled by request".to_owned())
    }

    fn lock(&self) -> MutexGuard<'_, LogState> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends an event at `at`, broadcasting it to live subscribers.
    pub(crate) fn emit(&self, clock: &dyn Clock, kind: EventKind) {
        let at = clock.now();
        self.lock().push(at, kind);
    }

    /// Appends the events `machine` produced and the driver has not yet
    /// collected, in the machine's order.
    pub(crate) fn collect(&self, clock: &dyn Clock, machine: &mut RunMachine) {
        if !machine.has_events() {
            return;
        }
        // One reading of the clock and one lock for all of them.
        let at = clock.now();
        let mut log = self.lock();
        for kind in machine.drain_events() {
            log.push(at, kind);
        }
    }

    /// Restarts the log after `seq`, the run's last stored event, dropping
    /// what was never committed (for a run no task drives here).
    pub(crate) fn reset_log_to(&self, seq: u64) {
        let mut log = self.lock();
        log.seq = seq;
        log.pending.clear();
        log.committing = None;
    }

    /// Whether events wait for a commit.
    pub(crate) fn has_pending(&self) -> bool {
        !self.lock().pending.is_empty()
    }

    /// The last sequence number handed out.
    pub(crate) fn seq(&self) -> u64 {
        self.lock().seq
    }

    /// Moves the pending events into the committing slot and returns them.
    pub(crate) fn begin_commit(&self) -> Arc<Vec<RunEvent>> {
        let mut log = self.lock();
        let events = Arc::new(std::mem::take(&mut log.pending));
        if let Some(e) = events.last() {
            log.tried = e.seq;
        }
        log.committing = Some(events.clone());
        events
    }

    /// Ends the commit begun last: stored events go to live subscribers;
    /// events a failed commit did not store wait for the next one.
    pub(crate) fn end_commit(&self, stored: bool) {
        let mut log = self.lock();
        let Some(events) = log.committing.take() else {
            return;
        };
        if !stored {
            let later = std::mem::take(&mut log.pending);
            log.pending = Arc::unwrap_or_clone(events);
            log.pending.extend(later);
            return;
        }
        if let Some(tx) = &log.tx
            && tx.receiver_count() > 0
        {
            for e in events.iter() {
                let _ = tx.send(Arc::new(e.clone()));
            }
        }
    }

    /// Whether anyone is subscribed.
    pub(crate) fn has_subscribers(&self) -> bool {
        self.lock()
            .tx
            .as_ref()
            .is_some_and(|tx| tx.receiver_count() > 0)
    }

    pub(super) fn subscribe(&self) -> broadcast::Receiver<Arc<RunEvent>> {
        self.lock()
            .tx
            .get_or_insert_with(|| broadcast::channel(CHANNEL_CAPACITY).0)
            .subscribe()
    }
}

/// The [`PlannerEvents`] sink of one run.
pub(crate) struct Sink<'a> {
    pub(crate) shared: &'a RunShared,
    pub(crate) clock: &'a dyn Clock,
}

impl PlannerEvents for Sink<'_> {
    fn assistant_chunk(&self, text: &str) {
        self.shared.emit(
            self.clock,
            EventKind::AssistantChunk {
                text: text.to_owned(),
            },
        );
    }

    fn tool_call_args_delta(&self, call_id: &ToolCallId, tool: &str, delta: &str) {
        self.shared.emit(
            self.clock,
            EventKind::ToolCallArgsDelta {
                tool_call_id: call_id.clone(),
                tool: tool.to_owned(),
                delta: delta.to_owned(),
            },
        );
    }

    fn thinking_block(&self, thinking: &Thinking) {
        self.shared.emit(
            self.clock,
            EventKind::Thinking {
                thinking: thinking.clone(),
            },
        );
    }

    fn planner_thought(&self, text: &str, labels: &Labels) {
        self.shared.emit(
            self.clock,
            EventKind::PlannerThought {
                text: text.to_owned(),
                labels: labels.clone(),
            },
        );
    }

    fn usage_delta(&self, usage: &Usage) {
        self.shared
            .emit(self.clock, EventKind::Usage { usage: *usage });
    }

    fn model_output(&self, model: &str, output: &ModelSummary) {
        self.shared.emit(
            self.clock,
            EventKind::ModelOutput {
                model: model.to_owned(),
                output: Box::new(output.clone()),
            },
        );
    }

    fn prompt_rendered(&self, rendered: &weft_core::prompt::PromptRendered) {
        self.shared.emit(
            self.clock,
            EventKind::PromptRendered {
                template_id: rendered.template_id.clone(),
                version: rendered.version.clone(),
                override_scope: rendered.override_scope.clone().map(Box::new),
            },
        );
    }
}

#[cfg(test)]
mod tests;
