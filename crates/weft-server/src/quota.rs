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
//! - Starts per minute are a token bucket per tenant in this process (as
//!   many tokens as the per-minute rate, refilled evenly): one process
//!   admits at most that many starts in any minute, so N processes behind a
//!   balancer admit up to N times the rate. A start refused for the
//!   unfinished-runs cap gives its token back.
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

use crate::auth::Tenant;
use crate::error::ApiError;

/// What each tenant may use; every quota is on by default, and `None` turns
/// one off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TenantQuotas {
    /// Runs running, awaiting or paused at once (default 100).
    pub max_unfinished_runs: Option<NonZeroU32>,
    /// Runs started per minute (default 600).
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

/// The quotas and what each tenant uses of them in this process.
pub(crate) struct Quotas {
    limits: TenantQuotas,
    tenants: Mutex<HashMap<String, Usage>>,
}

/// One tenant's use.
#[derive(Debug, Default)]
struct Usage {
    /// Start tokens left, as of `refilled`.
    tokens: f64,
    refilled: Option<Instant>,
    /// Starts reserved and not yet stored.
    starting: u32,
    /// Open event streams.
    streams: u32,
}

impl Quotas {
    pub(crate) fn new(limits: TenantQuotas) -> Arc<Self> {
        Arc::new(Self {
            limits,
            tenants: Mutex::new(HashMap::new()),
        })
    }

    /// Takes a start token and reserves a start for `tenant`; a 429 when
    /// the tenant started its per-minute share already. The reservation
    /// lasts until the returned [`StartPermit`] drops.
    pub(crate) fn reserve_start(
        self: &Arc<Self>,
        tenant: &Tenant,
    ) -> Result<StartPermit, ApiError> {
        let mut tenants = self.lock();
        let usage = tenants.entry(tenant.0.clone()).or_default();
        let took_token = match self.limits.runs_per_minute {
            Some(rate) => {
                let per_second = f64::from(rate.get()) / 60.0;
                let now = Instant::now();
                let elapsed = usage
                    .refilled
                    .map_or(f64::INFINITY, |t| now.duration_since(t).as_secs_f64());
                usage.tokens = (usage.tokens + elapsed * per_second).min(f64::from(rate.get()));
                usage.refilled = Some(now);
                if usage.tokens < 1.0 {
                    let wait = ((1.0 - usage.tokens) / per_second).ceil();
                    return Err(ApiError::TooManyRequests {
                        detail: format!("this tenant may start {rate} runs per minute"),
                        retry_after: (wait as u64).max(1),
                    });
                }
                usage.tokens -= 1.0;
                true
            }
            None => false,
        };
        usage.starting += 1;
        Ok(StartPermit {
            quotas: self.clone(),
            tenant: tenant.0.clone(),
            took_token,
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
    took_token: bool,
}

impl StartPermit {
    /// Admits the start when the tenant's `stored` unfinished runs plus the
    /// starts reserved in this process (this one included) fit the cap;
    /// otherwise gives the start token back and answers 429.
    pub(crate) fn admit(&mut self, stored: usize) -> Result<(), ApiError> {
        let Some(cap) = self.quotas.limits.max_unfinished_runs else {
            return Ok(());
        };
        let mut over = false;
        let mut refund = false;
        self.quotas.with_usage(&self.tenant, |usage| {
            let total = stored.saturating_add(usage.starting as usize);
            over = total > cap.get() as usize;
            if over && self.took_token {
                usage.tokens += 1.0;
                refund = true;
            }
        });
        if refund {
            self.took_token = false;
        }
        if over {
            return Err(ApiError::TooManyRequests {
                detail: format!("this tenant may have {cap} unfinished runs"),
                retry_after: RETRY_CAPPED.as_secs(),
            });
        }
        Ok(())
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
