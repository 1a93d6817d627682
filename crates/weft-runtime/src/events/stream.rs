//! [`EventStream`]: one subscriber's view of a run's log, caught up from the
//! store page by page, then live from the run's broadcast while a task here
//! drives the run, or from the store otherwise, every [`EVENT_POLL`] backing
//! off to [`EVENT_POLL_MAX`] while nothing happens.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::broadcast;
use weft_core::RunId;
use weft_core::event::RunEvent;
use weft_core::store::RunStore;

use super::RunShared;
use crate::error::RuntimeError;

/// How often a subscriber of a run not driven here reads the store at
/// first; each read that finds nothing doubles the wait, up to
/// [`EVENT_POLL_MAX`], and an event sets it back. A thousand streams over
/// runs nobody drives (awaiting an answer, say) then cost the store a
/// thousand reads a second, not four thousand.
pub const EVENT_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// The longest wait between two reads of the store by a subscriber.
pub const EVENT_POLL_MAX: std::time::Duration = std::time::Duration::from_secs(1);

/// Most events one read of the stored log returns by default: catch-up
/// goes in pages, the next read only once the last page was taken.
pub const CATCH_UP_PAGE: std::num::NonZeroU32 = std::num::NonZeroU32::new(512).unwrap();

/// A run's events from a sequence number on: caught up from the store, then live.
/// Ends after the run's `RunFinished` event.
pub struct EventStream {
    run_id: RunId,
    store: Arc<dyn RunStore>,
    last: u64,
    /// Stored events read and not yet delivered: at most one page.
    backlog: VecDeque<RunEvent>,
    /// How many stored events one read takes.
    page: u32,
    rx: Option<broadcast::Receiver<Arc<RunEvent>>>,
    /// The run's live entry here: while a task here drives the run, its
    /// commits are broadcast; otherwise the store is read every [`EVENT_POLL`].
    shared: Option<std::sync::Weak<RunShared>>,
    /// Whether the run had finished when the stream opened: the stored log
    /// is then all there is.
    finished: bool,
    /// Whether the store may hold events not yet delivered or queued.
    stale: bool,
    /// The wait before the next read of the store, when polling.
    poll: std::time::Duration,
    done: bool,
}

impl EventStream {
    pub(crate) async fn open(
        store: Arc<dyn RunStore>,
        shared: Option<&Arc<RunShared>>,
        run_id: RunId,
        after: u64,
        page: std::num::NonZeroU32,
    ) -> Result<Self, RuntimeError> {
        let rx = shared.map(|s| s.subscribe());
        let mut stream = Self {
            run_id,
            store,
            last: after,
            backlog: VecDeque::new(),
            page: page.get(),
            rx,
            shared: shared.map(Arc::downgrade),
            finished: shared.is_none(),
            stale: true,
            poll: EVENT_POLL,
            done: false,
        };
        stream.refill().await?;
        Ok(stream)
    }

    /// The run this stream follows.
    pub fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// Reads the next page of the stored log after the last event delivered
    /// or queued; the store is stale again only after a full page.
    async fn refill(&mut self) -> Result<usize, RuntimeError> {
        let after = self.backlog.back().map_or(self.last, |e| e.seq);
        let page = self
            .store
            .read_events(&self.run_id, after, Some(self.page))
            .await?;
        let n = page.len();
        self.stale = n == self.page as usize;
        self.backlog.extend(page);
        Ok(n)
    }

    /// Whether a task in this process drives the run now.
    fn driven_here(&self) -> bool {
        self.shared
            .as_ref()
            .and_then(std::sync::Weak::upgrade)
            .is_some_and(|s| s.is_driven())
    }

    /// The next event, or `None` after the run finished (or, for a run that
    /// had finished when the stream opened, when the stored log is exhausted).
    pub async fn next(&mut self) -> Option<Result<RunEvent, RuntimeError>> {
        loop {
            if self.done {
                return None;
            }
            if let Some(e) = self.backlog.pop_front() {
                if e.seq <= self.last {
                    continue;
                }
                return Some(Ok(self.deliver(e)));
            }
            // A long catch-up is read page by page.
            if self.stale {
                match self.refill().await {
                    Ok(0) => self.poll = (self.poll * 2).min(EVENT_POLL_MAX),
                    Ok(_) => {
                        self.poll = EVENT_POLL;
                        continue;
                    }
                    Err(e) => return Some(Err(e)),
                }
            }
            if self.finished {
                self.done = true;
                return None;
            }
            let driven_here = self.driven_here();
            let received = match &mut self.rx {
                Some(rx) if driven_here => {
                    // A driver that stops driving here leaves no event to
                    // wake us: look at the store now and then all the same.
                    tokio::time::timeout(EVENT_POLL * 4, rx.recv()).await.ok()
                }
                _ => {
                    tokio::time::sleep(self.poll).await;
                    None
                }
            };
            match received {
                Some(Ok(e)) if e.seq == self.last + 1 => {
                    let e = Arc::unwrap_or_clone(e);
                    return Some(Ok(self.deliver(e)));
                }
                Some(Ok(e)) if e.seq <= self.last => {}
                // Skipped ahead, lagged or timed out: the store has every
                // committed event; the next refill catches up.
                Some(Ok(_) | Err(broadcast::error::RecvError::Lagged(_))) | None => {
                    self.stale = true
                }
                Some(Err(broadcast::error::RecvError::Closed)) => {
                    self.rx = None;
                    self.stale = true;
                }
            }
        }
    }

    fn deliver(&mut self, e: RunEvent) -> RunEvent {
        self.last = e.seq;
        if e.kind.is_terminal() {
            self.done = true;
        }
        e
    }
}
