//! The JSON-RPC endpoint: the body read under [`MAX_BODY`], the method
//! routed by name to its release (1.0's `SendMessage`, ... behind an
//! `A2A-Version: 1.x` header; 0.3's `message/send`, ...), its params read
//! in that release's shapes, and the answer written in them: one JSON-RPC
//! response, or, for the streaming methods, server-sent events each
//! holding one (an error before the stream starts is a plain response).

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Json, Response};
use futures_util::StreamExt;
use serde_json::Value;

use super::App;
use super::follow::follow;
use super::rpc::{self, Request, RpcError};
use super::tasks::trim_history;
use super::v03;
use super::wire::{SendMessageRequest, SendMessageResponse, StreamResponse, Task, TaskRequest};

/// The largest request body read (1 MiB).
pub const MAX_BODY: usize = 1 << 20;

/// Which release a method is of; its answers are written in its shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Release {
    V10,
    V03,
}

/// What a method is.
enum Method {
    Send,
    Stream,
    Get,
    Cancel,
    Subscribe,
    Push,
    Unsupported,
}

fn method(name: &str) -> Option<(Release, Method)> {
    use Method as M;
    use Release::{V03, V10};
    Some(match name {
        "SendMessage" => (V10, M::Send),
        "SendStreamingMessage" => (V10, M::Stream),
        "GetTask" => (V10, M::Get),
        "CancelTask" => (V10, M::Cancel),
        "SubscribeToTask" => (V10, M::Subscribe),
        "CreateTaskPushNotificationConfig"
        | "GetTaskPushNotificationConfig"
        | "ListTaskPushNotificationConfigs"
        | "DeleteTaskPushNotificationConfig" => (V10, M::Push),
        "ListTasks" | "GetExtendedAgentCard" => (V10, M::Unsupported),
        "message/send" => (V03, M::Send),
        "message/stream" => (V03, M::Stream),
        "tasks/get" => (V03, M::Get),
        "tasks/cancel" => (V03, M::Cancel),
        "tasks/resubscribe" => (V03, M::Subscribe),
        "tasks/pushNotificationConfig/set"
        | "tasks/pushNotificationConfig/get"
        | "tasks/pushNotificationConfig/list"
        | "tasks/pushNotificationConfig/delete" => (V03, M::Push),
        "agent/getAuthenticatedExtendedCard" => (V03, M::Unsupported),
        _ => return None,
    })
}

/// A 1.0 method needs `A2A-Version: 1.x`; none sent means 0.3.
fn check_version(headers: &HeaderMap, name: &str) -> Result<(), RpcError> {
    let asked = headers
        .get("a2a-version")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .unwrap_or("0.3");
    let major = asked.split('.').next().unwrap_or_default();
    if major == "1" {
        Ok(())
    } else {
        Err(RpcError::version(asked, name))
    }
}

/// `POST /` and `POST /v0.3`.
pub async fn endpoint(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    handle(app, &headers, body).await
}

/// Answers one JSON-RPC request to `app`'s agent, as its caller sees it.
pub async fn handle(app: Arc<App>, headers: &HeaderMap, body: Body) -> Response {
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(bytes) => bytes,
        Err(_) => {
            let e = RpcError::invalid_request(format!(
                "the body could not be read whole, or is larger than {MAX_BODY} bytes"
            ));
            return Json(rpc::failure(&Value::Null, &e)).into_response();
        }
    };
    let request = match rpc::read(&bytes) {
        Ok(request) => request,
        Err((id, e)) => return Json(rpc::failure(&id, &e)).into_response(),
    };
    let Some((release, what)) = method(&request.method) else {
        let e = RpcError::method_not_found(&request.method);
        return Json(rpc::failure(&request.id, &e)).into_response();
    };
    if release == Release::V10
        && let Err(e) = check_version(headers, &request.method)
    {
        return Json(rpc::failure(&request.id, &e)).into_response();
    }
    let answer = match what {
        Method::Stream => return stream(app, request, release).await,
        Method::Subscribe => return subscribe(app, request, release).await,
        Method::Send => send(&app, &request, release).await,
        Method::Get => get(&app, &request).await,
        Method::Cancel => cancel(&app, &request).await,
        Method::Push => Err(RpcError::push_not_supported()),
        Method::Unsupported => Err(RpcError::unsupported(format!(
            "`{}` is not offered by this agent",
            request.method
        ))),
    };
    let body = match answer {
        Ok(Answer::Task(task)) => {
            let result = match release {
                Release::V10 => serde_json::to_value(SendMessageResponse::Task(task)),
                Release::V03 => serde_json::to_value(v03::task(&task)),
            };
            rpc::success(&request.id, result.unwrap_or_default())
        }
        Ok(Answer::Bare(task)) => {
            let result = match release {
                Release::V10 => serde_json::to_value(task),
                Release::V03 => serde_json::to_value(v03::task(&task)),
            };
            rpc::success(&request.id, result.unwrap_or_default())
        }
        Err(e) => rpc::failure(&request.id, &e),
    };
    Json(body).into_response()
}

/// A method's result: a send's task (1.0 wraps it as `{"task": ...}`) or a
/// task as it is (get, cancel).
enum Answer {
    Task(Task),
    Bare(Task),
}

fn send_params(request: &Request, release: Release) -> Result<SendMessageRequest, RpcError> {
    match release {
        Release::V10 => rpc::params(request),
        Release::V03 => rpc::params::<v03::SendParams>(request)?.into_wire(),
    }
}

async fn send(app: &App, request: &Request, release: Release) -> Result<Answer, RpcError> {
    let params = send_params(request, release)?;
    let sent = app.service.send(&params).await?;
    let config = params.configuration.unwrap_or_default();
    let task = if config.return_immediately || !sent.moving {
        app.service.get(&sent.task_id).await?
    } else {
        app.service.settle(&sent.task_id).await?
    };
    Ok(Answer::Task(trim_history(task, config.history_length)))
}

async fn get(app: &App, request: &Request) -> Result<Answer, RpcError> {
    let params: TaskRequest = rpc::params(request)?;
    let task = app.service.get(&params.id).await?;
    Ok(Answer::Bare(trim_history(task, params.history_length)))
}

async fn cancel(app: &App, request: &Request) -> Result<Answer, RpcError> {
    let params: TaskRequest = rpc::params(request)?;
    Ok(Answer::Bare(app.service.cancel(&params.id).await?))
}

async fn stream(app: Arc<App>, request: Request, release: Release) -> Response {
    let sent = match send_params(&request, release) {
        Ok(params) => app.service.send(&params).await,
        Err(e) => Err(e),
    };
    match sent {
        Ok(sent) => events(app, request.id, sent.task_id, release),
        Err(e) => Json(rpc::failure(&request.id, &e)).into_response(),
    }
}

async fn subscribe(app: Arc<App>, request: Request, release: Release) -> Response {
    let checked = match rpc::params::<TaskRequest>(&request) {
        Ok(params) => app
            .service
            .get(&params.id)
            .await
            .map(|task| (params.id, task)),
        Err(e) => Err(e),
    };
    match checked {
        Ok((_, task)) if task.status.state.is_terminal() => {
            let e = RpcError::unsupported(format!(
                "task `{}` has ended: there is nothing to subscribe to",
                task.id
            ));
            Json(rpc::failure(&request.id, &e)).into_response()
        }
        Ok((id, _)) => events(app, request.id, id, release),
        Err(e) => Json(rpc::failure(&request.id, &e)).into_response(),
    }
}

/// The task's stream as server-sent events, each one JSON-RPC response.
fn events(app: Arc<App>, id: Value, task_id: String, release: Release) -> Response {
    let Ok(permit) = app.streams.clone().try_acquire_owned() else {
        let e = RpcError::internal("too many open streams; try again later");
        return Json(rpc::failure(&id, &e)).into_response();
    };
    let events = follow(app.service.clone(), task_id).map(move |event: StreamResponse| {
        let _held = &permit;
        let result = match release {
            Release::V10 => serde_json::to_value(&event).unwrap_or_default(),
            Release::V03 => v03::event(&event),
        };
        let data = rpc::success(&id, result).to_string();
        Ok::<_, Infallible>(Event::default().data(data))
    });
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}
