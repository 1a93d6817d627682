//! Fair shares of the server's connections: how many requests one tenant
//! may have in flight ([`Shares`]), and how many connections one peer
//! address may hold open before it has authenticated ([`Peers`]).
//!
//! A request in flight holds a connection busy, and a busy connection is
//! never closed for room (see `crowd`): without a share, one tenant that
//! trickles the bodies of enough requests holds every connection and locks
//! everyone out. With one, its request past the share is answered 429 as
//! soon as its token is read, before its body, and its connection is free
//! again. A tenant's share counts a request from its token's check until
//! its response body ends, event streams included.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::ApiError;

/// Seconds a client over its share is told to wait before trying again.
const RETRY_AFTER: u64 = 1;

/// Counts held per key, each up to a cap.
struct Counts<K> {
    cap: usize,
    held: Mutex<HashMap<K, usize>>,
}

impl<K: std::hash::Hash + Eq + Clone> Counts<K> {
    fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(1),
            held: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<K, usize>> {
        // Plain counters; a panic elsewhere leaves them usable.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes one of `key`'s places; false when it holds its cap.
    fn take(&self, key: &K) -> bool {
        let mut held = self.lock();
        let count = held.entry(key.clone()).or_default();
        if *count >= self.cap {
            return false;
        }
        *count += 1;
        true
    }

    fn give_back(&self, key: &K) {
        let mut held = self.lock();
        if let Some(count) = held.get_mut(key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                held.remove(key);
            }
        }
    }
}

/// Requests in flight per tenant, each tenant up to a cap.
pub(crate) struct Shares(Counts<String>);

impl Shares {
    /// Shares of at most `cap` requests in flight per tenant (at least one).
    pub(crate) fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self(Counts::new(cap)))
    }
}

/// A request's place in its tenant's share, given back when dropped.
pub(crate) struct SharePermit {
    shares: Arc<Shares>,
    tenant: String,
}

impl Drop for SharePermit {
    fn drop(&mut self) {
        self.shares.0.give_back(&self.tenant);
    }
}

/// Set on each request by the accept loop: the tenant's check fills it,
/// and it is kept until the response body ends.
#[derive(Clone)]
pub(crate) struct ShareSlot {
    shares: Arc<Shares>,
    permit: Arc<Mutex<Option<SharePermit>>>,
}

impl ShareSlot {
    pub(crate) fn new(shares: Arc<Shares>) -> Self {
        Self {
            shares,
            permit: Arc::default(),
        }
    }

    /// Counts the request in `tenant`'s share (once per request); a 429
    /// when the tenant already has its share in flight.
    pub(crate) fn take(&self, tenant: &str) -> Result<(), ApiError> {
        let mut permit = self.permit.lock().unwrap_or_else(|e| e.into_inner());
        if permit.is_some() {
            return Ok(());
        }
        if !self.shares.0.take(&tenant.to_owned()) {
            return Err(ApiError::TooManyRequests {
                detail: format!(
                    "this tenant may have {} requests in flight",
                    self.shares.0.cap
                ),
                retry_after: RETRY_AFTER,
            });
        }
        *permit = Some(SharePermit {
            shares: self.shares.clone(),
            tenant: tenant.to_owned(),
        });
        Ok(())
    }
}

/// Open connections per peer address, each address up to a cap.
pub(crate) struct Peers(Counts<IpAddr>);

impl Peers {
    /// At most `cap` open connections per address (at least one).
    pub(crate) fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self(Counts::new(cap)))
    }

    /// Counts a connection from `addr`; `None` when the address holds its
    /// cap already.
    pub(crate) fn join(self: &Arc<Self>, addr: IpAddr) -> Option<PeerPlace> {
        self.0.take(&addr).then(|| PeerPlace {
            peers: self.clone(),
            addr,
        })
    }
}

/// A connection's place in its peer address's count, left when dropped.
pub(crate) struct PeerPlace {
    peers: Arc<Peers>,
    addr: IpAddr,
}

impl Drop for PeerPlace {
    fn drop(&mut self) {
        self.peers.0.give_back(&self.addr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_past_its_share_is_refused_until_a_request_ends() {
        let shares = Shares::new(2);
        let a1 = ShareSlot::new(shares.clone());
        let a2 = ShareSlot::new(shares.clone());
        let a3 = ShareSlot::new(shares.clone());
        assert!(a1.take("a").is_ok());
        // A second check of the same request takes no second place.
        assert!(a1.take("a").is_ok());
        assert!(a2.take("a").is_ok());
        assert!(matches!(
            a3.take("a"),
            Err(ApiError::TooManyRequests { .. })
        ));
        // Another tenant has a share of its own.
        assert!(ShareSlot::new(shares.clone()).take("b").is_ok());
        drop(a1);
        assert!(a3.take("a").is_ok());
    }

    #[test]
    fn a_peer_past_its_cap_is_refused_until_a_connection_closes() {
        let peers = Peers::new(1);
        let here = IpAddr::from([127, 0, 0, 1]);
        let first = peers.join(here);
        assert!(first.is_some());
        assert!(peers.join(here).is_none());
        assert!(peers.join(IpAddr::from([127, 0, 0, 2])).is_some());
        drop(first);
        assert!(peers.join(here).is_some());
    }
}
