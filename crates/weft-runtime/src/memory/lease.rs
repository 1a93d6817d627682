//! A run's lease as the in-memory store keeps it: the same rules as the SQL
//! stores' lease columns (see `weft_core::lease`).

use weft_core::Timestamp;
use weft_core::lease::{LeaseClaim, LeaseRequest};

/// Owner, epoch and expiry of one run's lease; no owner means free.
#[derive(Debug, Default)]
pub(super) struct Lease {
    owner: Option<String>,
    pub(super) epoch: u64,
    pub(super) expires_at: Timestamp,
}

impl Lease {
    /// A lease granted to `request` at `epoch`.
    pub(super) fn granted(request: LeaseRequest<'_>, epoch: u64) -> Self {
        Self {
            owner: Some(request.owner.to_owned()),
            epoch,
            expires_at: request.expires_at,
        }
    }

    /// Who holds it, if anyone.
    pub(super) fn owner(&self) -> Option<&str> {
        self.owner.as_deref()
    }

    /// Whether anyone may take it at `now`: free, or expired.
    pub(super) fn is_free(&self, now: Timestamp) -> bool {
        self.owner.is_none() || self.expires_at <= now
    }

    /// Takes the lease for `request`, raising the epoch; returns the new epoch.
    pub(super) fn take(&mut self, request: LeaseRequest<'_>) -> u64 {
        *self = Self::granted(request, self.epoch + 1);
        self.epoch
    }

    /// Takes the lease if it is free, expired or `request.owner`'s already.
    pub(super) fn acquire(&mut self, request: LeaseRequest<'_>, now: Timestamp) -> LeaseClaim {
        match &self.owner {
            Some(owner) if owner != request.owner && self.expires_at > now => LeaseClaim::Held {
                owner: owner.clone(),
                expires_at: self.expires_at,
            },
            _ => LeaseClaim::Granted {
                epoch: self.take(request),
            },
        }
    }

    /// Extends the lease if `owner` still holds it at `epoch`.
    pub(super) fn renew(&mut self, owner: &str, epoch: u64, expires_at: Timestamp) -> bool {
        let held = self.epoch == epoch && self.owner.as_deref() == Some(owner);
        if held {
            self.expires_at = expires_at;
        }
        held
    }

    /// Frees the lease if it is still at `epoch`.
    pub(super) fn release(&mut self, epoch: u64) {
        if self.epoch == epoch {
            self.free();
        }
    }

    /// Frees the lease, keeping its epoch.
    pub(super) fn free(&mut self) {
        self.owner = None;
        self.expires_at = Timestamp::from_millis(0);
    }
}
