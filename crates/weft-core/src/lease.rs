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

/// A pause or cancel asked of a run that another process drives, recorded
/// on the run in the store. The process holding the run's lease picks it up
/// (it polls for the requests on its runs) and applies it as if asked
/// directly; a request on a run nobody drives waits for whoever takes the
/// run over. A commit that leaves the run not running clears it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "control")]
pub enum ControlRequest {
    /// Pause at the next step.
    Pause,
    /// Cancel: stop the tools and finish.
    Cancel {
        /// Why, as given by whoever cancelled.
        reason: String,
    },
}

impl ControlRequest {
    /// Whether this request is a cancel (a cancel replaces a pending pause;
    /// a pause never replaces a pending cancel).
    pub fn is_cancel(&self) -> bool {
        matches!(self, Self::Cancel { .. })
    }
}

/// An answer to a running tool's question (an elicitation) of a run that
/// another process drives, recorded beside the run in the store. The lease
/// holder picks it up with its control requests, hands it to its driver
/// (which records, commits and passes it to the waiting tool, or refuses it
/// if the question is gone) and deletes it. A question is withdrawn when its
/// run is recovered, so an answer its driver never took dies with it; a
/// commit that leaves the run not running deletes what is left.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteAnswer {
    /// The run and the epoch of the lease holder it is handed to.
    pub held: HeldLease,
    /// The question answered.
    pub item: crate::ids::AwaitItemId,
    /// The answer.
    pub answer: crate::awaiting::AwaitAnswer,
}
