//! Run control handlers: pause, resume and cancel, and the retry that makes
//! them reliable right after a run's driver stopped.
//!
//! The runtime decides between signalling a run's driver and changing the
//! stored run by whether a driver task still owns the run. A driver releases
//! the run a moment *after* committing an await or a pause, and a signal sent
//! in that window is lost (the call still returns `Ok`). [`settle`] works
//! around it from outside the runtime: when a call on a run that no driver
//! should own (stored status other than `running`) had no visible effect, it
//! waits briefly and calls again.

use std::future::Future;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use weft_core::RunId;
use weft_core::store::{RunStatus, StoredRun};
use weft_runtime::RuntimeError;

use crate::AppState;
use crate::auth::Tenant;
use crate::dto::{CancelRun, RunView};
use crate::error::{ApiError, Problem};
use crate::json::OptionalJsonBody;
use crate::runs::owned_run;

/// How many times a control call is made before its answer is taken as final.
const ATTEMPTS: u32 = 20;
/// The pause between attempts.
const RETRY_DELAY: Duration = Duration::from_millis(10);

/// Pauses a run (a driven run pauses at its next step).
#[utoipa::path(
    post, path = "/v1/runs/{run_id}/pause", tag = "runs",
    params(("run_id" = String, Path, description = "The run")),
    responses(
        (status = 200, description = "Paused, or pausing at the next step", body = RunView),
        (status = 401, description = "Missing or unknown token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run for this tenant", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Finished or already paused", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn pause_run(
    State(state): State<AppState>,
    tenant: Tenant,
    Path(run_id): Path<String>,
) -> Result<Json<RunView>, ApiError> {
    let id = owned_run(&state, &tenant, &run_id).await?.record.run_id;
    let runtime = &state.runtime;
    let stored = settle(
        &state,
        &id,
        || runtime.pause(&id),
        |s| s.snapshot.is_paused(),
        |_, _| false,
    )
    .await?;
    Ok(view(stored))
}

/// Resumes a paused run.
#[utoipa::path(
    post, path = "/v1/runs/{run_id}/resume", tag = "runs",
    params(("run_id" = String, Path, description = "The run")),
    responses(
        (status = 200, description = "Resumed", body = RunView),
        (status = 401, description = "Missing or unknown token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run for this tenant", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Not paused, or finished", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn resume_run(
    State(state): State<AppState>,
    tenant: Tenant,
    Path(run_id): Path<String>,
) -> Result<Json<RunView>, ApiError> {
    let id = owned_run(&state, &tenant, &run_id).await?.record.run_id;
    let runtime = &state.runtime;
    let stored = settle(
        &state,
        &id,
        || runtime.resume(&id),
        |s| !s.snapshot.is_paused(),
        // A driver that just committed the pause has not let go of the run
        // yet and the runtime reports it as not paused.
        |e, s| matches!(e, RuntimeError::NotPaused(_)) && s.snapshot.is_paused(),
    )
    .await?;
    Ok(view(stored))
}

/// Cancels a run.
#[utoipa::path(
    post, path = "/v1/runs/{run_id}/cancel", tag = "runs",
    params(("run_id" = String, Path, description = "The run")),
    request_body(content = CancelRun, description = "Optional"),
    responses(
        (status = 200, description = "Cancelled, or cancelling", body = RunView),
        (status = 401, description = "Missing or unknown token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run for this tenant", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Finished, or driven by another process", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn cancel_run(
    State(state): State<AppState>,
    tenant: Tenant,
    Path(run_id): Path<String>,
    OptionalJsonBody(body): OptionalJsonBody<CancelRun>,
) -> Result<Json<RunView>, ApiError> {
    let id = owned_run(&state, &tenant, &run_id).await?.record.run_id;
    let reason = body
        .reason
        .unwrap_or_else(|| "cancelled by request".to_owned());
    let stored = cancel(&state, &id, &reason).await?;
    Ok(view(stored))
}

/// Cancels a run through the runtime (see [`settle`]) and returns it.
pub(crate) async fn cancel(
    state: &AppState,
    run_id: &RunId,
    reason: &str,
) -> Result<StoredRun, ApiError> {
    let runtime = &state.runtime;
    settle(
        state,
        run_id,
        || runtime.cancel(run_id, reason),
        |s| s.record.status.is_finished(),
        |_, _| false,
    )
    .await
}

/// Calls `op` until the stored run shows its effect (`settled`), the run is
/// driven (the driver applies the change at its next step), or attempts run
/// out. An error on the first call is final unless `race` says it comes from
/// a driver that is releasing the run; an error on a later call means an
/// earlier call took effect late when the run is `settled`.
async fn settle<'a, F, Fut>(
    state: &AppState,
    run_id: &RunId,
    op: F,
    settled: impl Fn(&StoredRun) -> bool,
    race: impl Fn(&RuntimeError, &StoredRun) -> bool,
) -> Result<StoredRun, ApiError>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<(), RuntimeError>> + 'a,
{
    let mut attempt = 1;
    loop {
        let result = op().await;
        let stored = load(state, run_id).await?;
        let last = attempt >= ATTEMPTS;
        match result {
            Ok(()) if settled(&stored) || stored.record.status == RunStatus::Running || last => {
                return Ok(stored);
            }
            Ok(()) => {}
            Err(_) if attempt > 1 && settled(&stored) => return Ok(stored),
            Err(e) if !last && race(&e, &stored) => {}
            Err(e) => return Err(e.into()),
        }
        attempt += 1;
        tokio::time::sleep(RETRY_DELAY).await;
    }
}

async fn load(state: &AppState, run_id: &RunId) -> Result<StoredRun, ApiError> {
    state
        .runtime
        .store()
        .load_run(run_id)
        .await?
        .ok_or_else(|| RuntimeError::RunNotFound(run_id.clone()).into())
}

fn view(stored: StoredRun) -> Json<RunView> {
    Json(RunView::new(stored.record, Some(&stored.snapshot)))
}
