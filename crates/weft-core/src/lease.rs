//! Leases: who may drive a run. A run is driven only by the holder of its
//! lease, a (owner, epoch, expiry) triple the store keeps beside the run.
//!
//! Taking a lease (creating a run leased, [`acquire`], or claiming orphans)
//! raises its epoch; every commit of a driver carries the epoch it was given
//! (its fence), and the store refuses a commit whose epoch is no longer the
//! run's with [`StoreError::LeaseLost`](crate::store::StoreError::LeaseLost),
//! in the same transaction that would have written it. So a driver that lost
//! its lease (its process stalled past the expiry and another took over)
//! cannot write again, whatever its clock says.
//!
//! The holder keeps its leases by renewing them before they expire; a lease
//! whose holder died expires and any live process may take it over. A commit
//! that leaves the run not running (awaiting, paused, finished) frees the
//! lease with it: whoever continues the run next takes a new one.
//!
//! [`acquire`]: crate::store::RunStore::acquire_lease

use serde::{Deserialize, Serialize};

use crate::RunId;
use crate::time::Timestamp;

/// A lease to take or renew: for `owner`, until `expires_at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseRequest<'a> {
    /// Who asks: one id per process, never shared between processes.
    pub owner: &'a str,
    /// When the lease lapses unless renewed.
    pub expires_at: Timestamp,
}

/// The answer to a request for a run's lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "claim")]
pub enum LeaseClaim {
    /// The lease is the caller's, with this fencing epoch.
    Granted {
        /// The epoch every commit of the caller must carry.
        epoch: u64,
    },
    /// Another owner holds an unexpired lease.
    Held {
        /// The holder.
        owner: String,
        /// When its lease lapses unless renewed.
        expires_at: Timestamp,
    },
}

/// A lease the caller holds: the run and the epoch it was granted.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HeldLease {
    /// The run.
    pub run_id: RunId,
    /// Its fencing epoch.
    pub epoch: u64,
}
