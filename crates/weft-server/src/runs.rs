//! Run handlers: start, get and list a tenant's runs; and the health check.
//! Answering, pausing, continuing and cancelling a run are in `control`.
//!
//! Every handler that names a run loads it first and answers 404 unless it
//! carries the caller's tenant label, before touching the runtime. A start
//! passes the tenant's quotas (`quota`) before anything is created.

use std::str::FromStr;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use weft_core::session::{SessionError, SessionRecord};
use weft_core::store::{RunFilter, RunStatus};
use weft_core::{AgentId, RunId, SessionId};
use weft_runtime::{RuntimeError, StartRequest};

use crate::access::{check_id, check_labels, owned_run, owned_session};
use crate::auth::Tenant;
use crate::dto::{Health, RunList, RunQuery, RunView, StartRun};
use crate::error::{ApiError, Problem};
use crate::json::JsonBody;
use crate::{AppState, agents, listing, now};

/// Reports that the server is up.
#[utoipa::path(get, path = "/healthz", tag = "health",
    responses((status = 200, description = "Up", body = Health)))]
pub(crate) async fn health() -> Json<Health> {
    Json(Health {
        status: "ok".to_owned(),
    })
}

/// Starts a run of an agent on one of the caller's sessions.
#[utoipa::path(
    post, path = "/v1/runs", tag = "runs", request_body = StartRun,
    responses(
        (status = 201, description = "Started", body = RunView),
        (status = 400, description = "Malformed request, unknown agent, or labels past a limit: at most 64 labels, keys of 1 to 128 bytes (no `\"`, `\\` or control characters, not `weft.*`), values of at most 1,024 bytes; the problem's `errors[].code` names the limit (`too_many_labels`, `bad_label_key`, `reserved_label`, `label_value_too_long`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The session belongs to another tenant", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The session has ended", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "The tenant has its maximum of unfinished runs, or started its runs per minute; see `Retry-After`", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn start_run(
    State(state): State<AppState>,
    tenant: Tenant,
    JsonBody(body): JsonBody<StartRun>,
) -> Result<impl IntoResponse, ApiError> {
    check_labels(&body.labels)?;
    if state.runtime.agent(&body.agent).is_none() {
        return Err(agents::unknown_agent(&state, &body.agent));
    }
    let messages = body.input.into_messages()?;
    // Held until the run is stored: this start counts as unfinished.
    let permit = state.quotas.reserve_start(&tenant)?;
    permit.admit(&listing::quota_usage(&state, &tenant, permit.limits()).await?)?;
    let session = session_for_run(&state, &tenant, body.session_id).await?;
    let request = StartRequest {
        session_id: Some(session.session_id.clone()),
        messages,
        labels: tenant.label(body.labels),
        run_id: Some(RunId::new(state.new_id("run"))),
        policy: None,
    };
    let handle = match state.runtime.start(&body.agent, request).await {
        Ok(handle) => handle,
        Err(RuntimeError::SessionEnded(id)) => return Err(ended(&id)),
        Err(e) => return Err(e.into()),
    };
    let run_id = handle.run_id().clone();
    tracing::info!(run_id = %run_id, agent = %body.agent, "run started");
    let view = match state.runtime.store().load_run(&run_id).await? {
        Some(stored) => RunView::new(stored.record, Some(&stored.snapshot)),
        None => return Err(RuntimeError::RunNotFound(run_id).into()),
    };
    let location = format!("/v1/runs/{}", view.run_id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(view),
    ))
}

/// One of the caller's runs: its record, outcome, await items and how
/// many child runs it started. A run whose stored data cannot be read is a
/// 500 problem of type `urn:weft:problem:corrupt-run` naming it (for its
/// own tenant only; for any other it is a 404).
#[utoipa::path(
    get, path = "/v1/runs/{run_id}", tag = "runs",
    params(("run_id" = String, Path, description = "The run")),
    responses(
        (status = 200, description = "The run", body = RunView),
        (status = 404, description = "No such run for this tenant", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn get_run(
    State(state): State<AppState>,
    tenant: Tenant,
    Path(run_id): Path<String>,
) -> Result<Json<RunView>, ApiError> {
    let stored = owned_run(&state, &tenant, &run_id).await?;
    let children = listing::child_count(&state, &tenant, &stored.record.run_id).await?;
    let mut view = RunView::new(stored.record, Some(&stored.snapshot));
    view.child_count = Some(children);
    Ok(Json(view))
}

/// Lists the caller's runs, newest first: at most `limit` of them and at
/// most 4 MiB of JSON (a page that reaches it ends early, with a
/// `next_cursor`). A run whose stored row cannot be read is listed in
/// `skipped`, not in `runs`, and the list goes on past it.
#[utoipa::path(
    get, path = "/v1/runs", tag = "runs", params(RunQuery),
    responses(
        (status = 200, description = "The runs", body = RunList),
        (status = 400, description = "Unknown status, or a label filter that is not `key=value` pairs", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn list_runs(
    State(state): State<AppState>,
    tenant: Tenant,
    query: Result<Query<RunQuery>, QueryRejection>,
) -> Result<Json<RunList>, ApiError> {
    let Query(query) = query?;
    let mut statuses = Vec::new();
    for word in query.status.iter().flat_map(|s| s.split(',')) {
        let word = word.trim();
        if word.is_empty() {
            continue;
        }
        let status = RunStatus::from_str(word).map_err(|_| {
            ApiError::field(
                "status",
                format!("unknown run status `{}`", crate::clip::clip(word, 64)),
            )
        })?;
        statuses.push(status);
    }
    let size = listing::page_size(query.limit);
    let filter = RunFilter {
        session_id: query.session_id.map(SessionId::new),
        agent_id: query.agent.filter(|a| !a.is_empty()).map(AgentId::new),
        labels: listing::labels(query.label.as_deref())?,
        statuses,
        limit: Some(size),
        before: listing::cursor(query.cursor.as_deref())?,
        created_since: None,
    };
    let page = listing::run_page(&state, &tenant, filter, size).await?;
    Ok(Json(RunList {
        runs: page.runs,
        skipped: page.skipped,
        next_cursor: page.next_cursor,
    }))
}

/// The open session a new run goes on: the caller's existing session, or a
/// new one created for the caller when the id is unknown.
pub(crate) async fn session_for_run(
    state: &AppState,
    tenant: &Tenant,
    session_id: Option<String>,
) -> Result<SessionRecord, ApiError> {
    let Some(session_id) = session_id else {
        let id = SessionId::new(state.new_id("ses"));
        let record = SessionRecord::new(id, tenant.label(Default::default()), now());
        state.sessions.create_session(&record).await?;
        return Ok(record);
    };
    let id = SessionId::new(check_id("session_id", session_id)?);
    let session = owned_session(state, tenant, id.as_str()).await?;
    if session.is_ended() {
        return Err(ended(&id));
    }
    Ok(session)
}

fn ended(session_id: &SessionId) -> ApiError {
    SessionError::Ended {
        session_id: session_id.clone(),
    }
    .into()
}
