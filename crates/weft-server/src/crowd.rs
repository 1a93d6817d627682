//! The open connections, for the connection limit ([`Crowd`]).
//!
//! A fixed cap that refuses new connections lets whoever holds the most
//! sockets shut everyone else out: a client that opens the cap's worth of
//! idle connections and renews them as the timeouts close them keeps the
//! server unreachable. So at the cap a new connection takes the place of
//! the connection that has gone longest without a request in progress
//! (waiting for its headers, or idle between requests), which is closed.
//! Connections serving a request (event streams included) are never closed
//! for room; when every open connection is busy, the new one is refused.
//!
//! Under a flood, a client that connects and sends its request at once is
//! served: the flood's older sockets go first. A few places beyond the cap
//! are kept for health checks and metrics: a connection that takes one is
//! served those only, so a server whose every connection is busy still
//! answers its probes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::activity::{Activity, Phase};

/// The connections open now, up to a cap.
pub(crate) struct Crowd {
    cap: usize,
    /// Places beyond `cap` for probes only.
    reserve: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    open: HashMap<u64, Member>,
    /// How many of `open` hold a probe's place.
    reserved: usize,
}

struct Member {
    activity: Activity,
    evict: Arc<Notify>,
    /// Whether it holds a probe's place.
    reserved: bool,
}

/// Why a connection could not join.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Every open connection is serving a request.
    AllBusy,
}

impl Crowd {
    /// A crowd of at most `cap` connections (at least one), and `reserve`
    /// more for probes.
    pub(crate) fn new(cap: usize, reserve: usize) -> Arc<Self> {
        Arc::new(Self {
            cap: cap.max(1),
            reserve,
            inner: Mutex::new(Inner::default()),
        })
    }

    /// Adds a connection with `activity`, closing the longest-waiting
    /// connection without a request when the crowd is full. The returned
    /// place says when this connection is closed for room, and leaves the
    /// crowd when dropped.
    pub(crate) fn join(self: &Arc<Self>, activity: Activity) -> Result<Place, Refused> {
        let mut inner = self.lock();
        let mut reserved = false;
        if inner.open.len() - inner.reserved >= self.cap {
            let oldest = inner
                .open
                .iter()
                .filter(|(_, m)| !m.reserved)
                .filter_map(|(id, m)| waiting_since(m.activity.phase()).map(|since| (since, *id)))
                .min();
            match oldest {
                Some((_, id)) => {
                    if let Some(member) = inner.open.remove(&id) {
                        member.evict.notify_one();
                    }
                }
                None if inner.reserved < self.reserve => reserved = true,
                None => return Err(Refused::AllBusy),
            }
        }
        let id = inner.next_id;
        inner.next_id += 1;
        let evict = Arc::new(Notify::new());
        inner.reserved += usize::from(reserved);
        inner.open.insert(
            id,
            Member {
                activity,
                evict: evict.clone(),
                reserved,
            },
        );
        Ok(Place {
            crowd: self.clone(),
            id,
            evict,
            reserved,
        })
    }

    /// How many connections are open.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().open.len()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The map holds handles only; a panic elsewhere leaves it usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Since when a connection has had no request in progress, if it has none.
fn waiting_since(phase: Phase) -> Option<Instant> {
    match phase {
        Phase::AwaitingHead { since } | Phase::Idle { since } => Some(since),
        Phase::Busy { .. } => None,
    }
}

/// One connection's place in the [`Crowd`].
pub(crate) struct Place {
    crowd: Arc<Crowd>,
    id: u64,
    evict: Arc<Notify>,
    reserved: bool,
}

impl Place {
    /// Whether this connection holds a probe's place: it is served health
    /// checks and metrics only.
    pub(crate) fn is_reserved(&self) -> bool {
        self.reserved
    }

    /// Resolves when the connection is closed to make room for another.
    pub(crate) async fn evicted(&self) {
        self.evict.notified().await;
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut inner = self.crowd.lock();
        if let Some(member) = inner.open.remove(&self.id)
            && member.reserved
        {
            inner.reserved -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_crowd_makes_room_by_closing_the_longest_waiting() {
        let crowd = Crowd::new(2, 0);
        let older = Activity::new();
        let first = crowd.join(older.clone()).unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        let second = crowd.join(Activity::new()).unwrap();
        let third = crowd.join(Activity::new()).unwrap();
        assert_eq!(crowd.len(), 2);
        // The first, oldest, was told to close; the second was not.
        tokio::time::timeout(std::time::Duration::from_millis(1), first.evicted())
            .await
            .expect("the oldest is evicted");
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(1), second.evicted())
                .await
                .is_err()
        );
        drop(first);
        assert_eq!(crowd.len(), 2, "an evicted place has already left");
        drop((second, third));
        assert_eq!(crowd.len(), 0);
    }

    #[tokio::test]
    async fn busy_connections_are_never_closed_for_room() {
        let crowd = Crowd::new(2, 0);
        let a = Activity::new();
        let b = Activity::new();
        let _pa = crowd.join(a.clone()).unwrap();
        let _pb = crowd.join(b.clone()).unwrap();
        let _ga = a.begin_request();
        let gb = b.begin_request();
        assert!(matches!(crowd.join(Activity::new()), Err(Refused::AllBusy)));
        // Once b's request ends, b is idle and may go.
        drop(gb);
        assert!(crowd.join(Activity::new()).is_ok());
    }
}

#[cfg(test)]
mod reserve_tests {
    use super::*;

    #[tokio::test]
    async fn a_busy_crowd_still_has_its_probes_places() {
        let crowd = Crowd::new(1, 1);
        let a = Activity::new();
        let _pa = crowd.join(a.clone()).unwrap();
        let _busy = a.begin_request();
        let probe = crowd.join(Activity::new()).unwrap();
        assert!(probe.is_reserved());
        assert!(matches!(crowd.join(Activity::new()), Err(Refused::AllBusy)));
        drop(probe);
        let again = crowd.join(Activity::new()).unwrap();
        assert!(again.is_reserved(), "a probe's place is free again");
    }
}
