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
//!
//! A renewal can miss a lease without anyone else taking it: the run's own
//! last commit (finished, paused, awaiting) frees its lease, and may land
//! between the heartbeat's reading of the held leases and the store's
//! answer. Only a lease another process holds is worth a warning ([`Loss`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
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
    /// Places reserved for leases being asked for ([`Place`]); changed
    /// only under `held`'s lock, so held + reserved is read as one.
    reserved: AtomicUsize,
    heartbeat: OnceLock<AbortHandle>,
}

/// A place reserved in this process's room (`RuntimeBuilder::max_driven_runs`)
/// for one run whose lease is being asked for. It is taken before the
/// store is asked, so a start and the sweeper never both fill the last
/// place; it becomes the run's lease ([`Leases::hold`]) or is given back
/// when dropped.
pub(crate) struct Place<'a> {
    leases: &'a Leases,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let _held = self.leases.lock();
        self.leases.reserved.fetch_sub(1, Ordering::Relaxed);
    }
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
            reserved: AtomicUsize::new(0),
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

    /// Reserves up to `want` places, as many as a room of `max` runs has
    /// left beside the leases held and the places already reserved.
    pub(crate) fn reserve(&self, max: usize, want: usize) -> Vec<Place<'_>> {
        let held = self.lock();
        let reserved = self.reserved.load(Ordering::Relaxed);
        let places = max.saturating_sub(held.len() + reserved).min(want);
        self.reserved.store(reserved + places, Ordering::Relaxed);
        drop(held);
        (0..places).map(|_| Place { leases: self }).collect()
    }

    /// Records a lease granted just now at `epoch`, in the `place` reserved
    /// for it (none when the run is driven here regardless of room: taken
    /// back by a person's request).
    pub(crate) fn hold(&self, run_id: &RunId, epoch: u64, place: Option<Place<'_>>) {
        let mut held = self.lock();
        held.insert(
            run_id.clone(),
            Held {
                epoch,
                trusted_until: Instant::now() + self.ttl,
                task: None,
            },
        );
        if let Some(place) = place {
            // The place is the lease now: counted once, in `held`.
            self.reserved.fetch_sub(1, Ordering::Relaxed);
            std::mem::forget(place);
        }
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

    /// Renews every held lease once; returns the leases the store did not
    /// renew, each with why.
    async fn renew(&self, store: &dyn RunStore, clock: &dyn Clock) -> Vec<(RunId, Loss)> {
        let leases: Vec<HeldLease> = self
            .lock()
            .iter()
            .map(|(run_id, h)| HeldLease {
                run_id: run_id.clone(),
                epoch: h.epoch,
            })
            .collect();
        if leases.is_empty() {
            return Vec::new();
        }
        let started = Instant::now();
        let expires_at = clock.now().saturating_add(self.ttl);
        let lost = match store.renew_leases(&self.owner, &leases, expires_at).await {
            Ok(lost) => lost,
            Err(e) => {
                tracing::warn!(error = %e, "renewing leases failed");
                return Vec::new();
            }
        };
        let (mut report, suspects) = self.settle(&leases, lost, started);
        for HeldLease { run_id, .. } in suspects {
            let loss = match store.load_run(&run_id).await {
                Ok(Some(run)) => match run.lease_owner {
                    Some(holder) if holder != self.owner => Loss::Taken { holder },
                    Some(_) => Loss::Retaken,
                    None => Loss::Freed {
                        status: run.record.status.as_str(),
                    },
                },
                // A finished run the store no longer keeps.
                Ok(None) => Loss::Freed { status: "gone" },
                Err(e) => Loss::Unknown {
                    error: e.to_string(),
                },
            };
            report.push((run_id, loss));
        }
        report
    }

    /// Applies a renewal begun at `started` of `leases`, of which the
    /// store renewed all but `lost`: the renewed ones are trusted one more
    /// TTL, the lost ones no more. Returns the lost leases this process let
    /// go of meanwhile (they finished, paused, await, or were taken again
    /// at a newer epoch here, and are none of the heartbeat's business),
    /// and the ones still held at the renewed epoch, whose loss the store
    /// must explain.
    fn settle(
        &self,
        leases: &[HeldLease],
        lost: Vec<RunId>,
        started: Instant,
    ) -> (Vec<(RunId, Loss)>, Vec<HeldLease>) {
        let mut held = self.lock();
        for lease in leases {
            if let Some(h) = held.get_mut(&lease.run_id)
                && h.epoch == lease.epoch
            {
                h.trusted_until = started + self.ttl;
            }
        }
        let mut let_go = Vec::new();
        let mut suspects = Vec::new();
        for run_id in lost {
            let Some(epoch) = leases.iter().find(|l| l.run_id == run_id).map(|l| l.epoch) else {
                continue;
            };
            match held.get_mut(&run_id) {
                Some(h) if h.epoch == epoch => {
                    h.trusted_until = started;
                    suspects.push(HeldLease { run_id, epoch });
                }
                _ => let_go.push((run_id, Loss::LetGo)),
            }
        }
        (let_go, suspects)
    }
}

/// Why the heartbeat could not renew a lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Loss {
    /// This process let go of the run between reading its leases and the
    /// store's answer: its driver ended, or it holds the run at a newer epoch.
    LetGo,
    /// The run's own last commit freed the lease (it finished, paused or
    /// awaits): its driver is ending.
    Freed {
        /// The run's stored status (`gone` when no longer stored).
        status: &'static str,
    },
    /// This process took the run again at a newer epoch.
    Retaken,
    /// Another process holds the lease.
    Taken {
        /// The holder's owner id.
        holder: String,
    },
    /// The store could not say who holds the lease.
    Unknown {
        /// Why.
        error: String,
    },
}

impl Loss {
    /// Logs the loss of `run_id`'s lease: a warning only when another
    /// process (perhaps) drives the run now.
    fn log(&self, run_id: &RunId) {
        match self {
            Loss::Taken { holder } => {
                tracing::warn!(%run_id, %holder, "lease lost: another process drives the run now");
            }
            Loss::Unknown { error } => {
                tracing::warn!(%run_id, %error, "lease lost: reading its holder failed");
            }
            Loss::LetGo => {
                tracing::debug!(%run_id, "lease not renewed: the run was let go meanwhile");
            }
            Loss::Freed { status } => {
                tracing::debug!(%run_id, %status, "lease not renewed: the run's last commit freed it");
            }
            Loss::Retaken => {
                tracing::debug!(%run_id, "lease not renewed: taken again here at a newer epoch");
            }
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
        for (run_id, loss) in leases.renew(&*store, &*clock).await {
            loss.log(&run_id);
        }
    }
}

#[cfg(test)]
#[path = "leases_tests.rs"]
mod tests;
