//! A run's events as Server-Sent Events: caught up from any sequence number
//! (`Last-Event-ID` or `?after=N`), then live, ending after `run_finished`.
//!
//! Each SSE event carries `id: <seq>`, `event: <type>` and the JSON of the
//! [`RunEvent`] as `data`. The stream is the runtime's [`EventStream`]
//! (stored events, then live ones, wherever the run is driven), read
//! [`AppState::catch_up_page`] events at a time: the next page is read only
//! once the client has taken the last one (a slow client holds back the
//! reading, not the memory), so a catch-up from far back costs one page of
//! memory however long the log, and every event arrives once, in order. Each tenant holds at most `max_event_streams` streams open in one
//! process (`quota`); past that a new stream is a 429.

use std::convert::Infallible;
use std::pin::Pin;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use weft_core::RunId;
use weft_core::event::RunEvent;
use weft_runtime::EventStream;

use crate::AppState;
use crate::access::owned_run;
use crate::auth::Tenant;
use crate::dto::EventsQuery;
use crate::error::{ApiError, Problem};
use crate::event_schema::RunEventSchema;
use crate::quota::StreamPermit;

/// Streams a run's events.
#[utoipa::path(
    get, path = "/v1/runs/{run_id}/events", tag = "runs",
    params(
        ("run_id" = String, Path, description = "The run"),
        ("Last-Event-ID" = Option<u64>, Header, description = "Catch up on the events after this sequence number"),
        EventsQuery,
    ),
    responses(
        (status = 200, description = "`text/event-stream`: each frame is `id: <seq>`, `event: <type>`, `data: <RunEvent JSON>`; the stream ends after `run_finished`. A failure while streaming is a last frame `event: error` whose data is a Problem", content_type = "text/event-stream", body = RunEventSchema),
        (status = 400, description = "Bad Last-Event-ID", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run for this tenant", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "The tenant holds its maximum of open event streams; see `Retry-After`", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn run_events(
    State(state): State<AppState>,
    tenant: Tenant,
    Path(run_id): Path<String>,
    headers: HeaderMap,
    query: Result<Query<EventsQuery>, QueryRejection>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let Query(query) = query?;
    let stored = owned_run(&state, &tenant, &run_id).await?;
    let after = match headers.get("last-event-id") {
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| ApiError::field("Last-Event-ID", "must be an event sequence number"))?,
        None => query.after.unwrap_or(0),
    };
    let permit = state.quotas.open_stream(&tenant)?;
    let run_id = stored.record.run_id;
    let events = state
        .runtime
        .subscribe_paged(&run_id, after, state.catch_up_page)
        .await?;
    let follow = Follow {
        run_id,
        events,
        done: false,
        shutdown: Box::pin(state.shutting_down()),
        _permit: permit,
        _open: state.metrics.stream_opened(),
    };
    let stream =
        futures_util::stream::unfold(
            follow,
            |mut f| async move { f.next().await.map(|e| (Ok(e), f)) },
        );
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// Follows one run's events until it finishes or the server shuts down.
struct Follow {
    run_id: RunId,
    events: EventStream,
    /// Whether the stream is over (the run finished, or an error was sent).
    done: bool,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send>>,
    /// Counts this stream against the tenant's cap while it lives.
    _permit: StreamPermit,
    /// Counts this stream in the open-streams gauge while it lives.
    _open: crate::metrics::OpenStream,
}

impl Follow {
    /// The next SSE event, or `None` when the run finished or the server stops.
    async fn next(&mut self) -> Option<Event> {
        if self.done {
            return None;
        }
        let next = tokio::select! {
            () = &mut self.shutdown => return None,
            next = self.events.next() => next,
        };
        match next? {
            Ok(event) => Some(sse_event(&event)),
            Err(e) => Some(self.fail(e.into())),
        }
    }

    /// An `error` event carrying the problem; the stream ends after it.
    fn fail(&mut self, error: ApiError) -> Event {
        self.done = true;
        let problem = error.problem();
        if error.status().is_server_error() {
            tracing::error!(run_id = %self.run_id, error = %error, "event stream failed");
        }
        Event::default()
            .event("error")
            .data(serde_json::to_string(&problem).unwrap_or_default())
    }
}

fn sse_event(event: &RunEvent) -> Event {
    let data = serde_json::to_value(event).unwrap_or_default();
    let kind = data
        .get("type")
        .and_then(|t| t.as_str())
        .unwrap_or("event")
        .to_owned();
    Event::default()
        .id(event.seq.to_string())
        .event(kind)
        .data(data.to_string())
}
