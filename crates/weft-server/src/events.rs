//! A run's events as Server-Sent Events: replayed from any sequence number
//! (`Last-Event-ID` or `?after=N`), then live, ending after `run_finished`.
//!
//! Each SSE event carries `id: <seq>`, `event: <type>` and the JSON of the
//! [`RunEvent`] as `data`. The runtime's [`EventStream`] ends early for a run
//! that no task drives (awaiting, paused, or driven by another process);
//! [`Follow`] then polls the store and subscribes again after the last
//! delivered sequence number, so a client sees one stream across pauses.

use std::convert::Infallible;
use std::pin::Pin;
use std::time::Duration;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use weft_core::RunId;
use weft_core::event::RunEvent;
use weft_runtime::{EventStream, Runtime};

use crate::AppState;
use crate::access::owned_run;
use crate::auth::Tenant;
use crate::dto::EventsQuery;
use crate::error::{ApiError, Problem};

/// How often a stream over a run that no task drives checks for new events.
const POLL_INTERVAL: Duration = Duration::from_millis(250);

/// Streams a run's events.
#[utoipa::path(
    get, path = "/v1/runs/{run_id}/events", tag = "runs",
    params(
        ("run_id" = String, Path, description = "The run"),
        ("Last-Event-ID" = Option<u64>, Header, description = "Replay events after this sequence number"),
        EventsQuery,
    ),
    responses(
        (status = 200, description = "`text/event-stream`: `id: <seq>`, `event: <type>`, `data: <event json>`; ends after `run_finished`", content_type = "text/event-stream", body = String),
        (status = 400, description = "Bad Last-Event-ID", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or unknown token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run for this tenant", body = Problem, content_type = "application/problem+json"),
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
    let follow = Follow {
        cursor: Cursor {
            runtime: state.runtime.clone(),
            run_id: stored.record.run_id,
            last: after,
            stream: None,
            done: false,
        },
        shutdown: Box::pin(state.shutting_down()),
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
    cursor: Cursor,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send>>,
}

impl Follow {
    /// The next SSE event, or `None` when the run finished or the server stops.
    async fn next(&mut self) -> Option<Event> {
        while !self.cursor.done {
            let step = tokio::select! {
                () = &mut self.shutdown => return None,
                step = self.cursor.step() => step,
            };
            if let Some(event) = step {
                return Some(event);
            }
        }
        None
    }
}

/// Where a follower is in a run's log, across re-subscriptions.
struct Cursor {
    runtime: Runtime,
    run_id: RunId,
    last: u64,
    stream: Option<EventStream>,
    done: bool,
}

impl Cursor {
    /// One attempt: an event, or `None` to go around again.
    async fn step(&mut self) -> Option<Event> {
        let stream = match &mut self.stream {
            Some(s) => s,
            None => match self.runtime.subscribe(&self.run_id, self.last).await {
                Ok(s) => self.stream.insert(s),
                Err(e) => return Some(self.fail(e.into())),
            },
        };
        match stream.next().await {
            Some(Ok(event)) => {
                self.last = event.seq;
                self.done = event.kind.is_terminal();
                Some(sse_event(&event))
            }
            Some(Err(e)) => Some(self.fail(e.into())),
            None => {
                self.stream = None;
                match self.runtime.store().load_run(&self.run_id).await {
                    // Finished, and every event up to `last` delivered:
                    // the client replayed from past the end.
                    Ok(Some(r)) if r.record.status.is_finished() && self.caught_up(&r) => {
                        self.done = true;
                        None
                    }
                    Ok(Some(_)) => {
                        tokio::time::sleep(POLL_INTERVAL).await;
                        None
                    }
                    Ok(None) => Some(self.fail(ApiError::NotFound(format!(
                        "run `{}` not found",
                        self.run_id
                    )))),
                    Err(e) => Some(self.fail(e.into())),
                }
            }
        }
    }

    fn caught_up(&self, stored: &weft_core::store::StoredRun) -> bool {
        self.last >= stored.snapshot.event_seq()
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
