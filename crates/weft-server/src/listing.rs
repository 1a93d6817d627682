//! A tenant's runs and sessions as the store lists them: the list
//! endpoints and the unfinished-runs quota read through here and nowhere
//! else.
//!
//! The store's filters know no labels yet, so each listing reads every
//! tenant's matching rows and keeps the caller's, applying the limit after.
//! FIXME: once `RunFilter` and `SessionFilter` take labels that every
//! listed record must carry (pushed into the query, indexed), pass
//! `weft.tenant` and the limit down instead and drop the filtering here;
//! and count unfinished runs with a count query rather than a listing.

use weft_core::session::{SessionFilter, SessionRecord};
use weft_core::store::{RunFilter, RunRecord, RunStatus};

use crate::AppState;
use crate::auth::Tenant;
use crate::error::ApiError;

/// The statuses of a run that has not finished.
pub(crate) const UNFINISHED: [RunStatus; 3] =
    [RunStatus::Running, RunStatus::Awaiting, RunStatus::Paused];

/// The caller's runs matching `filter`, newest first (its `limit` applies
/// to the caller's runs).
pub(crate) async fn runs(
    state: &AppState,
    tenant: &Tenant,
    filter: RunFilter,
) -> Result<Vec<RunRecord>, ApiError> {
    let limit = filter.limit.map_or(usize::MAX, |l| l as usize);
    let all = state
        .runtime
        .store()
        .list_runs(&RunFilter {
            limit: None,
            ..filter
        })
        .await?;
    Ok(all
        .into_iter()
        .filter(|r| tenant.owns(&r.labels))
        .take(limit)
        .collect())
}

/// How many of the caller's runs are unfinished.
pub(crate) async fn unfinished_runs(state: &AppState, tenant: &Tenant) -> Result<usize, ApiError> {
    let filter = RunFilter {
        statuses: UNFINISHED.to_vec(),
        ..RunFilter::default()
    };
    Ok(runs(state, tenant, filter).await?.len())
}

/// The caller's sessions matching `filter`, newest first (its `limit`
/// applies to the caller's sessions).
pub(crate) async fn sessions(
    state: &AppState,
    tenant: &Tenant,
    filter: SessionFilter,
) -> Result<Vec<SessionRecord>, ApiError> {
    let limit = filter.limit.map_or(usize::MAX, |l| l as usize);
    let all = state
        .sessions
        .list_sessions(&SessionFilter {
            limit: None,
            ..filter
        })
        .await?;
    Ok(all
        .into_iter()
        .filter(|s| tenant.owns(&s.labels))
        .take(limit)
        .collect())
}
