//! Per-tenant quotas ([`TenantQuotas`]): how many unfinished runs a tenant
//! may have, how many runs it may start per minute, and how many event
//! streams it may hold open. A request over a quota is a 429 problem with
//! `Retry-After`.
//!
//! Where each count lives, and why:
//!
//! - Unfinished runs are counted in the store (runs of the tenant that are
//!   running, awaiting or paused), so the cap holds for the tenant as a whole
//!   when several server processes share one store, and survives restarts
//!   and recoveries. An in-process counter would know neither the other
//!   processes' runs nor when a run finishes elsewhere. The store is read
//!   after a start is reserved here ([`Quotas::reserve_start`]), and starts
//!   this process has admitted but not yet stored count too, so within one
//!   process the cap is never exceeded; processes racing each other may go
//!   over it by the starts in flight at the same instant.
//! - Starts per minute are counted in the store too: the tenant's runs
//!   created in the last 60 s (a sliding window, read with the tenant
//!   index), plus the starts this process has admitted but not yet stored.
//!   So the rate holds for the tenant across every server on the store, as
//!   the unfinished-runs cap does, with the same allowance for processes
//!   racing each other. A refused start is never stored; `Retry-After` is
//!   when the oldest start in the window leaves it, and until then this
//!   process refuses the tenant's starts without reading the store again.
//! - Event streams are counted in this process: a stream holds a socket and
//!   a task here, and ends when its connection does. A stream whose client
//!   vanished is noticed when the next write fails (at the latest at the
//!   next keep-alive comment, every 15 s).
//!
//! The map holds one entry per tenant that made a counted request; tenants
//! come from the configured tokens, so it stays small.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use weft_core::Timestamp;

use crate::auth::Tenant;
use crate::error::ApiError;

/// What each tenant may use; every quota is on by default, and `None` turns
/// one off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TenantQuotas {
    /// Runs running, awaiting or paused at once (default 100).
    pub max_unfinished_runs: Option<NonZeroU32>,
    /// Runs started in any 60 s (default 600).
    pub runs_per_minute: Option<NonZeroU32>,
    /// Event streams (SSE) open at once in one process (default 64).
    pub max_event_streams: Option<NonZeroU32>,
}

impl Default for TenantQuotas {
    fn default() -> Self {
        Self {
            max_unfinished_runs: NonZeroU32::new(100),
            runs_per_minute: NonZeroU32::new(600),
            max_event_streams: NonZeroU32::new(64),
        }
    }
}

/// How long a client over the unfinished-runs or streams cap is told to wait.
const RETRY_CAPPED: Duration = Duration::from_secs(5);

/// How often at most a tenant's unfinished runs that no sweep claims are
/// checked for a state that cannot be read, when they fill its cap.
pub(crate) const UNREADABLE_CHECK: Duration = RETRY_CAPPED;

/// The window the start rate counts in.
pub(crate) const RATE_WINDOW: Duration = Duration::from_secs(60);

/// The quotas and what each tenant uses of them in this process.
pub(crate) struct Quotas {
    limits: TenantQuotas,
    tenants: Mutex<HashMap<String, Usage>>,
}

/// One tenant's use in this process.
#[derive(Debug, Default)]
struct Usage {
    /// Starts reserved and not yet stored.
    starting: u32,
    /// Until when the start rate is known to be used up (the oldest start
    /// in the window leaves it then): starts are refused without reading
    /// the store, so a client that ignores `Retry-After` costs nothing.
    rate_full_until: Option<Instant>,
    /// Open event streams.
    streams: u32,
    /// When its unfinished runs were last checked for a state that cannot
    /// be read (see `listing::unfinished_runs`).
    unreadable_checked: Option<Instant>,
}

impl Quotas {
    pub(crate) fn new(limits: TenantQuotas) -> Arc<Self> {
        Arc::new(Self {
            limits,
            tenants: Mutex::new(HashMap::new()),
        })
    }

    /// Reserves a start for `tenant` until the returned [`StartPermit`]
    /// drops; [`StartPermit::admit`] then checks it against the quotas. A
    /// 429 at once while the tenant's start rate is known to be used up.
    pub(crate) fn reserve_start(
        self: &Arc<Self>,
        tenant: &Tenant,
    ) -> Result<StartPermit, ApiError> {
        let mut tenants = self.lock();
        let usage = tenants.entry(tenant.0.clone()).or_default();
        if let (Some(until), Some(rate)) = (usage.rate_full_until, self.limits.runs_per_minute) {
            let left = until.saturating_duration_since(Instant::now());
            if !left.is_zero() {
                return Err(rate_refusal(rate, left));
            }
            usage.rate_full_until = None;
        }
        usage.starting += 1;
        Ok(StartPermit {
            quotas: self.clone(),
            tenant: tenant.0.clone(),
        })
    }

    /// Opens an event stream for `tenant`; a 429 at the cap. The stream
    /// counts until the returned [`StreamPermit`] drops.
    pub(crate) fn open_stream(self: &Arc<Self>, tenant: &Tenant) -> Result<StreamPermit, ApiError> {
        let mut tenants = self.lock();
        let usage = tenants.entry(tenant.0.clone()).or_default();
        if let Some(cap) = self.limits.max_event_streams
            && usage.streams >= cap.get()
        {
            return Err(ApiError::TooManyRequests {
                detail: format!("this tenant may hold {cap} event streams open"),
                retry_after: RETRY_CAPPED.as_secs(),
            });
        }
        usage.streams += 1;
        Ok(StreamPermit {
            quotas: self.clone(),
            tenant: tenant.0.clone(),
        })
    }

    /// Whether `tenant`'s unfinished runs may be checked for a state that
    /// cannot be read now: not within [`UNREADABLE_CHECK`] of the last
    /// check, so a client retrying at its cap costs one check per period.
    pub(crate) fn may_check_unreadable(&self, tenant: &Tenant) -> bool {
        let mut tenants = self.lock();
        let usage = tenants.entry(tenant.0.clone()).or_default();
        let now = Instant::now();
        if usage
            .unreadable_checked
            .is_some_and(|at| now.saturating_duration_since(at) < UNREADABLE_CHECK)
        {
            return false;
        }
        usage.unreadable_checked = Some(now);
        true
    }

    /// The quotas applied.
    pub(crate) fn limits(&self) -> TenantQuotas {
        self.limits
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Usage>> {
        // The map holds counts only; a panic elsewhere leaves them usable.
        self.tenants.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn with_usage(&self, tenant: &str, f: impl FnOnce(&mut Usage)) {
        if let Some(usage) = self.lock().get_mut(tenant) {
            f(usage);
        }
    }
}

/// A reserved start; see [`Quotas::reserve_start`].
pub(crate) struct StartPermit {
    quotas: Arc<Quotas>,
    tenant: String,
}

/// What the store holds of a tenant, for [`StartPermit::admit`].
pub(crate) struct Stored {
    /// Its unfinished runs (0 when they are not capped).
    pub(crate) unfinished: usize,
    /// When its runs created within [`RATE_WINDOW`] of `now` were created,
    /// newest first (at most as many as the rate).
    pub(crate) recent_starts: Vec<Timestamp>,
    /// The time the window ends at.
    pub(crate) now: Timestamp,
}

impl StartPermit {
    /// The quotas [`admit`](Self::admit) checks.
    pub(crate) fn limits(&self) -> TenantQuotas {
        self.quotas.limits
    }

    /// Admits the start when the tenant's stored runs plus the starts
    /// reserved in this process (this one included) fit both quotas;
    /// otherwise answers 429.
    pub(crate) fn admit(&self, stored: &Stored) -> Result<(), ApiError> {
        let mut starting = 0;
        self.quotas
            .with_usage(&self.tenant, |usage| starting = usage.starting as usize);
        if let Some(cap) = self.quotas.limits.max_unfinished_runs
            && stored.unfinished.saturating_add(starting) > cap.get() as usize
        {
            return Err(ApiError::TooManyRequests {
                detail: format!("this tenant may have {cap} unfinished runs"),
                retry_after: RETRY_CAPPED.as_secs(),
            });
        }
        if let Some(rate) = self.quotas.limits.runs_per_minute
            && stored.recent_starts.len().saturating_add(starting) > rate.get() as usize
        {
            // The oldest start in the window frees a place when it leaves;
            // with only this process's starts in flight, in a second.
            let window = u64::try_from(RATE_WINDOW.as_millis()).unwrap_or(u64::MAX);
            let wait = match stored.recent_starts.last() {
                Some(oldest) if stored.recent_starts.len() >= rate.get() as usize => {
                    let leaves = oldest.as_millis().saturating_add(window);
                    Duration::from_millis(leaves.saturating_sub(stored.now.as_millis()))
                }
                _ => Duration::ZERO,
            };
            if !wait.is_zero() {
                self.quotas.with_usage(&self.tenant, |usage| {
                    usage.rate_full_until = Some(Instant::now() + wait);
                });
            }
            return Err(rate_refusal(rate, wait));
        }
        Ok(())
    }
}

/// The 429 for a start over the rate, to be tried again after `wait`.
fn rate_refusal(rate: NonZeroU32, wait: Duration) -> ApiError {
    ApiError::TooManyRequests {
        detail: format!("this tenant may start {rate} runs per minute"),
        retry_after: u64::try_from(wait.as_millis().div_ceil(1000))
            .unwrap_or(u64::MAX)
            .max(1),
    }
}

impl Drop for StartPermit {
    fn drop(&mut self) {
        self.quotas
            .with_usage(&self.tenant, |u| u.starting = u.starting.saturating_sub(1));
    }
}

/// An open event stream; see [`Quotas::open_stream`].
pub(crate) struct StreamPermit {
    quotas: Arc<Quotas>,
    tenant: String,
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        self.quotas
            .with_usage(&self.tenant, |u| u.streams = u.streams.saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant() -> Tenant {
        Tenant("t".into())
    }

    #[tokio::test]
    async fn a_full_start_window_is_refused_without_reading_the_store_again() {
        let quotas = Quotas::new(TenantQuotas {
            runs_per_minute: NonZeroU32::new(2),
            ..TenantQuotas::default()
        });
        let now = Timestamp::from_millis(100_000);
        // Two starts stored 50 s and 10 s ago: the window is full for 10 s.
        let full = Stored {
            unfinished: 0,
            recent_starts: vec![
                Timestamp::from_millis(90_000),
                Timestamp::from_millis(50_000),
            ],
            now,
        };
        let permit = quotas.reserve_start(&tenant()).unwrap();
        let Err(ApiError::TooManyRequests { retry_after, .. }) = permit.admit(&full) else {
            panic!("over the rate");
        };
        assert_eq!(retry_after, 10);
        drop(permit);
        // Refused at once now, before any store read.
        let Err(ApiError::TooManyRequests { retry_after, .. }) = quotas.reserve_start(&tenant())
        else {
            panic!("refused while the window is full");
        };
        assert!((1..=10).contains(&retry_after), "{retry_after}");
        // Another tenant is not affected.
        assert!(quotas.reserve_start(&Tenant("u".into())).is_ok());
    }

    #[tokio::test]
    async fn starts_in_flight_here_count_toward_the_rate() {
        let quotas = Quotas::new(TenantQuotas {
            runs_per_minute: NonZeroU32::new(2),
            ..TenantQuotas::default()
        });
        let stored = Stored {
            unfinished: 0,
            recent_starts: vec![Timestamp::from_millis(1)],
            now: Timestamp::from_millis(2),
        };
        let first = quotas.reserve_start(&tenant()).unwrap();
        assert!(first.admit(&stored).is_ok());
        let second = quotas.reserve_start(&tenant()).unwrap();
        assert!(second.admit(&stored).is_err(), "one stored, two in flight");
        drop((first, second));
        // Refused for starts in flight only: nothing is remembered.
        assert!(quotas.reserve_start(&tenant()).is_ok());
    }
}
