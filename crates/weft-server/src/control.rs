//! Run control handlers: answer an await, pause, continue and cancel.
//!
//! Pause, continue and cancel are one handler body ([`control_run`]) over a
//! [`Control`], which says what to ask the runtime and what the stored run
//! looks like once the request took effect.
//!
//! The runtime serializes each call with the run's driver (a per-run lock
//! the driver holds across its last commit and its release of the run), so
//! one call suffices: it either signals the driver, which applies the change
//! at its next step, or changes the stored run.

use axum::Json;
use axum::extract::{Path, State};
use weft_core::run::AwaitProgress;
use weft_core::store::StoredRun;
use weft_core::{AwaitItemId, RunId};
use weft_runtime::{Runtime, RuntimeError};

use crate::AppState;
use crate::access::owned_run;
use crate::auth::Tenant;
use crate::dto::{AnswerAccepted, CancelRun, NoOptions, ProvideAnswer, RunView};
use crate::error::{ApiError, Problem};
use crate::json::{JsonBody, OptionalJsonBody};

/// Answers one item of a run's await; the run continues once every item is
/// answered. An elicitation (a running tool's question) is handed to the tool.
#[utoipa::path(
    post, path = "/v1/runs/{run_id}/answers", tag = "runs",
    params(("run_id" = String, Path, description = "The run")),
    request_body = ProvideAnswer,
    responses(
        (status = 200, description = "Accepted", body = AnswerAccepted),
        (status = 400, description = "Unknown item, or an answer that does not fit it; the run stays paused", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run for this tenant", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The item is already answered, the run awaits nothing, or a running tool's question whose driver died (recovery withdraws it)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn answer_await(
    State(state): State<AppState>,
    tenant: Tenant,
    Path(run_id): Path<String>,
    JsonBody(body): JsonBody<ProvideAnswer>,
) -> Result<Json<AnswerAccepted>, ApiError> {
    let stored = owned_run(&state, &tenant, &run_id).await?;
    let progress = state
        .runtime
        .answer(
            &stored.record.run_id,
            &AwaitItemId::new(body.item_id),
            body.answer,
        )
        .await?;
    let remaining = match progress {
        AwaitProgress::Pending { remaining } => remaining,
        AwaitProgress::Satisfied => 0,
    };
    Ok(Json(AnswerAccepted {
        remaining,
        satisfied: remaining == 0,
    }))
}

/// Pauses a run (a driven run pauses at its next step).
#[utoipa::path(
    post, path = "/v1/runs/{run_id}/pause", tag = "runs",
    params(("run_id" = String, Path, description = "The run")),
    request_body(content = Option<NoOptions>, description = "Optional: none, or `{}`"),
    responses(
        (status = 200, description = "Paused, or pausing at the next step", body = RunView),
        (status = 404, description = "No such run for this tenant", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Finished or already paused", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn pause_run(
    State(state): State<AppState>,
    tenant: Tenant,
    Path(run_id): Path<String>,
    OptionalJsonBody(NoOptions {}): OptionalJsonBody<NoOptions>,
) -> Result<Json<RunView>, ApiError> {
    control_run(&state, &tenant, &run_id, Control::Pause).await
}

/// Continues a paused run.
#[utoipa::path(
    post, path = "/v1/runs/{run_id}/continue", tag = "runs",
    params(("run_id" = String, Path, description = "The run")),
    request_body(content = Option<NoOptions>, description = "Optional: none, or `{}`"),
    responses(
        (status = 200, description = "Continued", body = RunView),
        (status = 404, description = "No such run for this tenant", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Not paused, or finished", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn continue_run(
    State(state): State<AppState>,
    tenant: Tenant,
    Path(run_id): Path<String>,
    OptionalJsonBody(NoOptions {}): OptionalJsonBody<NoOptions>,
) -> Result<Json<RunView>, ApiError> {
    control_run(&state, &tenant, &run_id, Control::Continue).await
}

/// Cancels a run.
#[utoipa::path(
    post, path = "/v1/runs/{run_id}/cancel", tag = "runs",
    params(("run_id" = String, Path, description = "The run")),
    request_body(content = Option<CancelRun>, description = "Optional"),
    responses(
        (status = 200, description = "Cancelled, or cancelling", body = RunView),
        (status = 404, description = "No such run for this tenant", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Finished; also a run whose stored data cannot be read (it is failed with reason `corrupt_state`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn cancel_run(
    State(state): State<AppState>,
    tenant: Tenant,
    Path(run_id): Path<String>,
    OptionalJsonBody(body): OptionalJsonBody<CancelRun>,
) -> Result<Json<RunView>, ApiError> {
    let reason = body
        .reason
        .unwrap_or_else(|| "cancelled by request".to_owned());
    control_run(
        &state,
        &tenant,
        &run_id,
        Control::Cancel { reason: &reason },
    )
    .await
}

/// Cancels a run through the runtime and returns it.
pub(crate) async fn cancel(
    state: &AppState,
    run_id: &RunId,
    reason: &str,
) -> Result<StoredRun, ApiError> {
    apply(state, run_id, Control::Cancel { reason }).await
}

/// A change of a run's course that the runtime may apply late.
#[derive(Debug, Clone, Copy)]
enum Control<'a> {
    /// Pause at the next step.
    Pause,
    /// Continue a paused run.
    Continue,
    /// Cancel, for `reason`.
    Cancel { reason: &'a str },
}

impl Control<'_> {
    /// Asks the runtime for the change.
    async fn call(self, runtime: &Runtime, run_id: &RunId) -> Result<(), RuntimeError> {
        match self {
            Control::Pause => runtime.pause(run_id).await,
            Control::Continue => runtime.continue_run(run_id).await,
            Control::Cancel { reason } => runtime.cancel(run_id, reason).await,
        }
    }
}

/// Applies `control` to the caller's run `run_id` and answers with the run.
async fn control_run(
    state: &AppState,
    tenant: &Tenant,
    run_id: &str,
    control: Control<'_>,
) -> Result<Json<RunView>, ApiError> {
    let id = match owned_run(state, tenant, run_id).await {
        Ok(stored) => stored.record.run_id,
        Err(ApiError::CorruptRun {
            run_id,
            ended,
            quarantined,
        }) => {
            return Err(corrupt(state, run_id, (ended, quarantined), control).await);
        }
        Err(e) => return Err(e),
    };
    let stored = apply(state, &id, control).await?;
    Ok(Json(RunView::new(stored.record, Some(&stored.snapshot))))
}

/// The answer to `control` of the caller's run `run_id`, whose stored row
/// cannot be read (`ended`, `quarantined` so far): no change applies to
/// it, so an unfinished one is quarantined on the way (the runtime fails it
/// with reason `corrupt_state`), and the answer is a 409, the run having
/// ended.
async fn corrupt(
    state: &AppState,
    run_id: String,
    (ended, mut quarantined): (bool, bool),
    control: Control<'_>,
) -> ApiError {
    if !ended {
        let id = RunId::new(run_id.as_str());
        match control.call(&state.runtime, &id).await {
            Err(RuntimeError::Finished(_)) => quarantined = true,
            Err(e) => return e.into(),
            Ok(()) => {
                return ApiError::CorruptRun {
                    run_id,
                    ended,
                    quarantined,
                };
            }
        }
    }
    let why = match quarantined {
        true => "it is failed with reason `corrupt_state`, its stored data being unreadable",
        false => "its stored data cannot be read",
    };
    ApiError::Conflict(format!("run `{run_id}` has ended: {why}"))
}

/// Asks the runtime for `control` and returns the run as stored after it
/// (still `running` when its driver applies the change at its next step).
async fn apply(
    state: &AppState,
    run_id: &RunId,
    control: Control<'_>,
) -> Result<StoredRun, ApiError> {
    control.call(&state.runtime, run_id).await?;
    load(state, run_id).await
}

async fn load(state: &AppState, run_id: &RunId) -> Result<StoredRun, ApiError> {
    state
        .runtime
        .store()
        .load_run(run_id)
        .await?
        .ok_or_else(|| RuntimeError::RunNotFound(run_id.clone()).into())
}
