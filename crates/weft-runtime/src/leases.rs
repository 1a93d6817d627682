//! The leases this process holds on the runs it drives (see
//! `weft_core::lease`), and the heartbeat that renews them.
//!
//! Every driver task holds its run's lease at an epoch, which each of its
//! commits carries as a fence. One heartbeat task per runtime renews all held
//! leases every third of the TTL, in one store call. A lease is trusted here
//! only until its last renewal (measured on tokio's monotonic clock) plus the
//! TTL: past that a driver starts no more tools, because another process may
//! already have taken the run over. A lease the store reports lost, or one
//! whose renewals stopped, ends its driver at its next step.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;

use tokio::task::AbortHandle;
use tokio::time::Instant;
use weft_core::lease::{HeldLease, LeaseRequest};
use weft_core::store::RunStore;
use weft_core::{RunId, Timestamp};

use crate::clock::Clock;

/// The default lease TTL: a run of a killed process continues elsewhere
/// within about this long.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(5);

/// The leases of one runtime.
pub(crate) struct Leases {
    /// This process's owner id: random, never shared between processes.
    pub(crate) owner: String,
    pub(crate) ttl: Duration,
    held: Mutex<HashMap<RunId, Held>>,
    heartbeat: OnceLock<AbortHandle>,
}

struct Held {
    epoch: u64,
    /// Until when the lease is surely still ours.
    trusted_until: Instant,
    /// The driver task, aborted when the runtime abandons its runs.
    task: Option<AbortHandle>,
}

impl Leases {
    pub(crate) fn new(ttl: Duration) -> Self {
        Self {
            owner: format!("{}/{}", std::process::id(), uuid::Uuid::new_v4().simple()),
            ttl,
            held: Mutex::new(HashMap::new()),
            heartbeat: OnceLock::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<RunId, Held>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A request for a lease expiring one TTL after `now`.
    pub(crate) fn request(&self, now: Timestamp) -> LeaseRequest<'_> {
        LeaseRequest {
            owner: &self.owner,
            expires_at: now.saturating_add(self.ttl),
        }
    }

    /// Records a lease granted just now at `epoch`.
    pub(crate) fn hold(&self, run_id: &RunId, epoch: u64) {
        self.lock().insert(
            run_id.clone(),
            Held {
                epoch,
                trusted_until: Instant::now() + self.ttl,
                task: None,
            },
        );
    }

    /// Records the task driving `run_id` at `epoch`.
    pub(crate) fn set_task(&self, run_id: &RunId, epoch: u64, task: AbortHandle) {
        if let Some(h) = self.lock().get_mut(run_id)
            && h.epoch == epoch
        {
            h.task = Some(task);
        }
    }

    /// Stops renewing the lease of `run_id` at `epoch`.
    pub(crate) fn forget(&self, run_id: &RunId, epoch: u64) {
        let mut held = self.lock();
        if held.get(run_id).is_some_and(|h| h.epoch == epoch) {
            held.remove(run_id);
        }
    }

    /// Whether a lease of `run_id` is held.
    pub(crate) fn holds(&self, run_id: &RunId) -> bool {
        self.lock().contains_key(run_id)
    }

    /// Whether no lease is held.
    pub(crate) fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// How many runs' leases this process holds.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether the lease of `run_id` at `epoch` is surely still ours.
    pub(crate) fn is_trusted(&self, run_id: &RunId, epoch: u64) -> bool {
        self.lock()
            .get(run_id)
            .is_some_and(|h| h.epoch == epoch && h.trusted_until > Instant::now())
    }

    /// Every held lease, with its driver task; none are held afterwards.
    pub(crate) fn take_all(&self) -> Vec<(HeldLease, Option<AbortHandle>)> {
        self.lock()
            .drain()
            .map(|(run_id, h)| {
                (
                    HeldLease {
                        run_id,
                        epoch: h.epoch,
                    },
                    h.task,
                )
            })
            .collect()
    }

    /// Starts the heartbeat once, on the current tokio runtime.
    pub(crate) fn start_heartbeat(
        self: &Arc<Self>,
        store: &Arc<dyn RunStore>,
        clock: &Arc<dyn Clock>,
    ) {
        self.heartbeat.get_or_init(|| {
            let task = heartbeat(Arc::downgrade(self), store.clone(), clock.clone());
            tokio::spawn(task).abort_handle()
        });
    }

    /// Stops the heartbeat (leases lapse unless freed).
    pub(crate) fn stop_heartbeat(&self) {
        if let Some(h) = self.heartbeat.get() {
            h.abort();
        }
    }

    /// Renews every held lease once.
    async fn renew(&self, store: &dyn RunStore, clock: &dyn Clock) {
        let leases: Vec<HeldLease> = self
            .lock()
            .iter()
            .map(|(run_id, h)| HeldLease {
                run_id: run_id.clone(),
                epoch: h.epoch,
            })
            .collect();
        if leases.is_empty() {
            return;
        }
        let started = Instant::now();
        let expires_at = clock.now().saturating_add(self.ttl);
        match store.renew_leases(&self.owner, &leases, expires_at).await {
            Ok(lost) => {
                let mut held = self.lock();
                for lease in &leases {
                    if let Some(h) = held.get_mut(&lease.run_id)
                        && h.epoch == lease.epoch
                    {
                        h.trusted_until = started + self.ttl;
                    }
                }
                for run_id in lost {
                    tracing::warn!(%run_id, "lease lost: another process drives the run now");
                    if let Some(h) = held.get_mut(&run_id) {
                        h.trusted_until = started;
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "renewing leases failed"),
        }
    }
}

impl Drop for Leases {
    fn drop(&mut self) {
        self.stop_heartbeat();
    }
}

async fn heartbeat(leases: Weak<Leases>, store: Arc<dyn RunStore>, clock: Arc<dyn Clock>) {
    let period = match leases.upgrade() {
        Some(l) => l.ttl / 3,
        None => return,
    };
    loop {
        tokio::time::sleep(period).await;
        let Some(leases) = leases.upgrade() else {
            return;
        };
        leases.renew(&*store, &*clock).await;
    }
}
