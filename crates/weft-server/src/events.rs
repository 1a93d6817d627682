//! A run's events as Server-Sent Events: caught up from any sequence number
//! (`Last-Event-ID` or `?after=N`), then live, ending after `run_finished`.
//!
//! Each SSE event carries `id: <seq>`, `event: <type>` and the JSON of the
//! [`RunEvent`] as `data`. The runtime's [`EventStream`] follows a run
//! wherever it is driven (from the store for a run driven elsewhere); should
//! it end before `run_finished`, [`Follow`] polls the store and subscribes
//! again after the last delivered sequence number, so a client sees one
//! stream throughout.
//!
//! Catch-up is paged: before each subscription the stream reads the stored
//! log itself, [`AppState::catch_up_page`] events at a time, and reads the
//! next page only once the client has taken the last one (a slow client
//! holds back the reading, not the memory). It subscribes to live events
//! once a page comes back short, so a catch-up from far back costs one page
//! of memory however long the log, and every event still arrives once, in
//! order. Each tenant holds at most `max_event_streams` streams open in one
//! process (`quota`); past that a new stream is a 429.

use std::collections::VecDeque;
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
use crate::event_schema::RunEventSchema;
use crate::quota::StreamPermit;

/// How often a stream over a run that no task drives checks for new events.
const POLL_INTERVAL: Duration = Duration::from_millis(250);

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
    let follow = Follow {
        cursor: Cursor {
            runtime: state.runtime.clone(),
            run_id: stored.record.run_id,
            last: after,
            page: state.catch_up_page.get(),
            backlog: VecDeque::new(),
            caught_up: false,
            stream: None,
            done: false,
        },
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
    cursor: Cursor,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send>>,
    /// Counts this stream against the tenant's cap while it lives.
    _permit: StreamPermit,
    /// Counts this stream in the open-streams gauge while it lives.
    _open: crate::metrics::OpenStream,
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
    /// The last sequence number delivered.
    last: u64,
    /// How many stored events to read at a time.
    page: u32,
    /// Stored events read and not yet delivered: at most one page.
    backlog: VecDeque<RunEvent>,
    /// Whether the stored log was read to its end since the last
    /// subscription ended.
    caught_up: bool,
    stream: Option<EventStream>,
    done: bool,
}

impl Cursor {
    /// One attempt: an event, or `None` to go around again.
    async fn step(&mut self) -> Option<Event> {
        if let Some(event) = self.backlog.pop_front() {
            return Some(self.deliver(&event));
        }
        if self.stream.is_none() && !self.caught_up {
            let read = self
                .runtime
                .store()
                .read_events(&self.run_id, self.last, Some(self.page));
            return match read.await {
                Ok(page) => {
                    self.caught_up = page.len() < self.page as usize;
                    self.backlog = page.into();
                    None
                }
                Err(e) => Some(self.fail(e.into())),
            };
        }
        let stream = match &mut self.stream {
            Some(s) => s,
            None => match self.runtime.subscribe(&self.run_id, self.last).await {
                Ok(s) => self.stream.insert(s),
                Err(e) => return Some(self.fail(e.into())),
            },
        };
        match stream.next().await {
            Some(Ok(event)) => Some(self.deliver(&event)),
            Some(Err(e)) => Some(self.fail(e.into())),
            None => {
                self.stream = None;
                self.caught_up = false;
                match self.runtime.store().load_run(&self.run_id).await {
                    // Finished, and every event up to `last` delivered:
                    // the client caught up from past the end.
                    Ok(Some(r)) if r.record.status.is_finished() && self.delivered_all(&r) => {
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

    /// `event` as SSE, now delivered.
    fn deliver(&mut self, event: &RunEvent) -> Event {
        self.last = event.seq;
        self.done = event.kind.is_terminal();
        sse_event(event)
    }

    fn delivered_all(&self, stored: &weft_core::store::StoredRun) -> bool {
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
