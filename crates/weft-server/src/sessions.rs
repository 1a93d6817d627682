//! Session handlers: create, list, get, end and delete a tenant's sessions.
//!
//! Ending a session marks it ended in the store first (so no new run can
//! start on it), then cancels its unfinished runs through the runtime.
//! Deleting one does the same and erases its transcript and memory in the
//! store's write that ends it.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use weft_core::SessionId;
use weft_core::session::{ListedSession, SessionFilter, SessionRecord};
use weft_core::store::{ListCursor, RunFilter};

use crate::access::{check_labels, owned_session};
use crate::auth::Tenant;
use crate::dto::{
    CreateSession, EndedSession, NoOptions, SessionList, SessionQuery, SessionView, SkippedSession,
};
use crate::error::{ApiError, Problem};
use crate::json::OptionalJsonBody;
use crate::{AppState, control, listing, now};

/// Creates a session for the caller's tenant.
#[utoipa::path(
    post, path = "/v1/sessions", tag = "sessions",
    request_body(content = Option<CreateSession>, description = "Optional; the id is always generated"),
    responses(
        (status = 201, description = "Created", body = SessionView),
        (status = 400, description = "Malformed request, or labels past a limit (as for a run: at most 64, keys of 1 to 128 bytes, values of at most 1,024 bytes; `errors[].code` names the limit)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn create_session(
    State(state): State<AppState>,
    tenant: Tenant,
    OptionalJsonBody(body): OptionalJsonBody<CreateSession>,
) -> Result<impl IntoResponse, ApiError> {
    check_labels(&body.labels)?;
    let session_id = state.new_id("ses");
    let record = SessionRecord::new(
        SessionId::new(session_id.clone()),
        tenant.label(body.labels),
        now(),
    );
    state.sessions.create_session(&record).await?;
    let location = format!("/v1/sessions/{session_id}");
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(SessionView::from(record)),
    ))
}

/// Lists the caller's sessions, newest first: at most `limit` of them and
/// at most 4 MiB of JSON (a page that reaches it ends early, with a
/// `next_cursor`). A session whose stored row cannot be read is left out
/// and marked in `skipped`; the list goes on past it.
#[utoipa::path(
    get, path = "/v1/sessions", tag = "sessions", params(SessionQuery),
    responses(
        (status = 200, description = "The sessions", body = SessionList),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn list_sessions(
    State(state): State<AppState>,
    tenant: Tenant,
    query: Result<Query<SessionQuery>, QueryRejection>,
) -> Result<Json<SessionList>, ApiError> {
    let Query(query) = query?;
    let size = listing::page_size(query.limit);
    let filter = SessionFilter {
        include_ended: query.include_ended,
        limit: Some(size),
        before: listing::cursor(query.cursor.as_deref())?,
        ..SessionFilter::default()
    };
    let mut page: Vec<Entry> = listing::sessions(&state, &tenant, filter)
        .await?
        .into_iter()
        .map(Entry::of)
        .collect();
    // A page cut at its byte budget continues after its last entry.
    let size = match listing::keep_within_budget(&mut page) {
        true => 0,
        false => size,
    };
    let next_cursor = listing::next_cursor(&page, size, |e| e.cursor.clone());
    let (mut sessions, mut skipped) = (Vec::new(), Vec::new());
    for entry in page {
        match entry.view {
            Ok(view) => sessions.push(view),
            Err(skip) => skipped.push(skip),
        }
    }
    Ok(Json(SessionList {
        sessions,
        skipped,
        next_cursor,
    }))
}

/// One entry of a page of sessions: a session's view, or the mark of a row
/// that did not decode, with the cursor after it. It serializes as the
/// view or the mark, for the page's byte budget.
struct Entry {
    cursor: ListCursor,
    view: Result<SessionView, SkippedSession>,
}

impl Entry {
    fn of(row: ListedSession) -> Self {
        let cursor = row.cursor();
        let view = match row {
            ListedSession::Session(record) => Ok(SessionView::from(record)),
            ListedSession::Corrupt {
                session_id, error, ..
            } => Err(SkippedSession {
                session_id: session_id.to_string(),
                corrupt: true,
                error: crate::clip::clip(&error, 2 * crate::clip::QUOTE_CHARS),
            }),
        };
        Self { cursor, view }
    }
}

impl serde::Serialize for Entry {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.view {
            Ok(view) => view.serialize(serializer),
            Err(skip) => skip.serialize(serializer),
        }
    }
}

/// One of the caller's sessions.
#[utoipa::path(
    get, path = "/v1/sessions/{session_id}", tag = "sessions",
    params(("session_id" = String, Path, description = "The session")),
    responses(
        (status = 200, description = "The session", body = SessionView),
        (status = 404, description = "No such session for this tenant", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn get_session(
    State(state): State<AppState>,
    tenant: Tenant,
    Path(session_id): Path<String>,
) -> Result<Json<SessionView>, ApiError> {
    let session = owned_session(&state, &tenant, &session_id).await?;
    Ok(Json(session.into()))
}

/// Ends one of the caller's sessions and cancels its unfinished runs.
#[utoipa::path(
    post, path = "/v1/sessions/{session_id}/end", tag = "sessions",
    params(("session_id" = String, Path, description = "The session")),
    request_body(content = Option<NoOptions>, description = "Optional: none, or `{}`"),
    responses(
        (status = 200, description = "The session ended; its runs were cancelled", body = EndedSession),
        (status = 404, description = "No such session for this tenant", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn end_session(
    State(state): State<AppState>,
    tenant: Tenant,
    Path(session_id): Path<String>,
    OptionalJsonBody(NoOptions {}): OptionalJsonBody<NoOptions>,
) -> Result<Json<EndedSession>, ApiError> {
    close(&state, &tenant, &session_id, false).await
}

/// Deletes one of the caller's sessions: ends it, cancels its unfinished
/// runs, and erases its transcript and memory (its runs stay).
#[utoipa::path(
    delete, path = "/v1/sessions/{session_id}", tag = "sessions",
    params(("session_id" = String, Path, description = "The session")),
    responses(
        (status = 200, description = "The session ended and its history and memory were erased; its runs were cancelled", body = EndedSession),
        (status = 404, description = "No such session for this tenant", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn delete_session(
    State(state): State<AppState>,
    tenant: Tenant,
    Path(session_id): Path<String>,
) -> Result<Json<EndedSession>, ApiError> {
    close(&state, &tenant, &session_id, true).await
}

/// Ends (or deletes) a session, then cancels its unfinished runs.
async fn close(
    state: &AppState,
    tenant: &Tenant,
    session_id: &str,
    delete: bool,
) -> Result<Json<EndedSession>, ApiError> {
    let session = owned_session(state, tenant, session_id).await?;
    let ended = if delete {
        state
            .sessions
            .delete_session(&session.session_id, now())
            .await?
    } else {
        state
            .sessions
            .end_session(&session.session_id, now())
            .await?
    };
    // Rows that do not decode are cancelled too (a cancel quarantines a
    // run whose state cannot be read), rather than failing the end.
    let unfinished = state
        .runtime
        .store()
        .list_run_rows(&RunFilter {
            session_id: Some(session.session_id.clone()),
            statuses: listing::UNFINISHED.to_vec(),
            ..RunFilter::default()
        })
        .await?;
    let mut cancelled_runs = Vec::new();
    let mut uncancelled_runs = Vec::new();
    for row in unfinished {
        let run_id = row.run_id();
        match control::cancel(state, run_id, "the session was ended").await {
            Ok(_) => cancelled_runs.push(run_id.to_string()),
            // It finished on its own between the listing and the cancel.
            Err(ApiError::Conflict(_)) if finished(state, run_id).await => {}
            Err(e) => {
                tracing::warn!(%run_id, error = %e, "cannot cancel a run of an ended session");
                uncancelled_runs.push(run_id.to_string());
            }
        }
    }
    Ok(Json(EndedSession {
        session: ended.into(),
        cancelled_runs,
        uncancelled_runs,
    }))
}

/// Whether the run has ended, read from its head (so a run whose state
/// cannot be read, quarantined by the cancel, counts as ended).
async fn finished(state: &AppState, run_id: &weft_core::RunId) -> bool {
    matches!(
        state.runtime.store().run_head(run_id, weft_core::prompt::TENANT_LABEL).await,
        Ok(Some(h)) if h.status.is_some_and(weft_core::store::RunStatus::is_finished)
    )
}
