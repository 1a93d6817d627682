//! The served agents over A2A, behind the tenant tokens:
//! `GET /a2a/{agent}/.well-known/agent-card.json` and the JSON-RPC
//! endpoints `POST /a2a/{agent}` (A2A 1.0) and `POST /a2a/{agent}/v0.3`
//! (0.3; each takes both releases' methods),
//! as `weft a2a serve` answers them (`weft_a2a`), with these differences:
//!
//! - Every request needs a tenant's bearer token (the card too: which
//!   agents and tools a server has is for its tenants, as `GET /v1/agents`
//!   is); the card says so (an HTTP bearer scheme, required).
//! - A task is one of the caller's runs: it carries the caller's tenant
//!   label, another tenant's task is not found, and starting one counts
//!   against the caller's run quotas as `POST /v1/runs` does (past one:
//!   JSON-RPC error -32000, `RESOURCE_EXHAUSTED`).
//! - A `contextId` must name a session of the caller's (a task's context,
//!   or a session made with `POST /v1/sessions`); without one, a task
//!   starts in a new session. Session ids are the server's to choose here,
//!   as everywhere in this API.
//!
//! A stream counts as a request in flight for its tenant while it is open;
//! at most [`weft_a2a::MAX_STREAMS`] are open per process.

use std::sync::Arc;

use async_trait::async_trait;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::{Json, Response};
use weft_a2a::rpc::{RpcError, refused};
use weft_a2a::{AgentCard, App, Service, Skill, Tenancy};
use weft_core::tool::Labels;
use weft_runtime::{Runtime, StartRequest};

use crate::AppState;
use crate::auth::Tenant;
use crate::error::{ApiError, Problem};
use crate::{listing, runs};

/// The path the A2A routes are under, before the agent id.
pub const A2A_PATH: &str = "/a2a";

/// The agent's A2A Agent Card: its interfaces (1.0 at `/a2a/{agent}`, 0.3
/// at `/a2a/{agent}/v0.3`), one skill for the agent and one per tool, and
/// the bearer scheme every request needs.
#[utoipa::path(
    get, path = "/a2a/{agent}/.well-known/agent-card.json", tag = "a2a",
    params(("agent" = String, Path, description = "The agent")),
    responses(
        (status = 200, description = "The Agent Card (A2A 1.0, with 0.3's fields)", body = Object),
        (status = 401, description = "No valid bearer token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such agent on this server", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn agent_card(
    State(state): State<AppState>,
    _tenant: Tenant,
    Path(agent): Path<String>,
    headers: HeaderMap,
) -> Result<Json<serde_json::Value>, ApiError> {
    let served = state.runtime.agent(&agent).ok_or_else(|| unknown(&agent))?;
    let description = format!("The weft agent `{agent}`");
    let mut skills = vec![Skill::new(&agent, &agent, &description, &["agent"])];
    // A toolset that cannot list its tools now is left out of the card.
    for tool in served.tools().await.unwrap_or_default() {
        let name = tool.name.to_string();
        let tags = ["tool", tool.name.toolset()];
        skills.push(Skill::new(&name, &name, &tool.description, &tags));
    }
    let base = format!("{}{A2A_PATH}/{agent}", public_base(&state, &headers));
    let card = AgentCard::new(&agent, &description, &base, skills).with_bearer();
    Ok(Json(
        serde_json::to_value(card).map_err(|e| ApiError::Internal(e.into()))?,
    ))
}

/// The 404 for an agent this server does not serve.
fn unknown(agent: &str) -> ApiError {
    ApiError::NotFound(format!(
        "no agent `{}` is served here (GET /v1/agents lists them)",
        weft_a2a::rpc::clip(agent)
    ))
}

/// A JSON-RPC endpoint of the agent at `$path`, documented with `$doc`:
/// each answers one JSON-RPC response, or for the streaming methods
/// server-sent events each holding one; a refusal is a JSON-RPC error in a
/// 200.
macro_rules! rpc_endpoint {
    ($name:ident, $path:tt, $doc:literal) => {
        #[doc = $doc]
        #[utoipa::path(
            post, path = $path, tag = "a2a",
            params(("agent" = String, Path, description = "The agent")),
            request_body(content = Object, description = "A JSON-RPC 2.0 request", content_type = "application/json"),
            responses(
                (status = 200, description = "A JSON-RPC response, or its stream", content(
                    (Object = "application/json"),
                    (String = "text/event-stream"),
                )),
                (status = 401, description = "No valid bearer token", body = Problem, content_type = "application/problem+json"),
                (status = 404, description = "No such agent on this server", body = Problem, content_type = "application/problem+json"),
            ),
            security(("bearer" = []))
        )]
        pub(crate) async fn $name(
            state: State<AppState>,
            tenant: Tenant,
            agent: Path<String>,
            headers: HeaderMap,
            body: Body,
        ) -> Result<Response, ApiError> {
            answer(state, tenant, agent, headers, body).await
        }
    };
}

rpc_endpoint!(
    endpoint,
    "/a2a/{agent}",
    "The agent's A2A 1.0 JSON-RPC endpoint (`SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`, `SubscribeToTask`, with `A2A-Version: 1.0`; 0.3's methods too)."
);
rpc_endpoint!(
    endpoint_v03,
    "/a2a/{agent}/v0.3",
    "The agent's A2A 0.3 JSON-RPC endpoint (`message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe`), at the URL a 0.3 card names."
);

async fn answer(
    State(state): State<AppState>,
    tenant: Tenant,
    Path(agent): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    if state.runtime.agent(&agent).is_none() {
        return Err(unknown(&agent));
    }
    let tenancy = Arc::new(TenantTasks {
        state: state.clone(),
        tenant,
    });
    let app = Arc::new(App {
        service: Service {
            runtime: state.runtime.clone(),
            agent_id: agent,
            tenancy,
        },
        card: Arc::default(),
        streams: state.a2a_streams.clone(),
    });
    Ok(weft_a2a::dispatch::handle(app, &headers, body).await)
}

/// The URL clients reach this server at: `--public-url`, or the request's
/// `Host` over plain HTTP.
fn public_base(state: &AppState, headers: &HeaderMap) -> String {
    if let Some(url) = &state.public_url {
        return url.trim_end_matches('/').to_owned();
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
        })
        .unwrap_or("localhost");
    format!("http://{host}")
}

/// A tenant's tasks: its runs, in its sessions, under its quotas.
struct TenantTasks {
    state: AppState,
    tenant: Tenant,
}

#[async_trait]
impl Tenancy for TenantTasks {
    fn owns(&self, labels: &Labels) -> bool {
        self.tenant.owns(labels)
    }

    async fn start(
        &self,
        runtime: &Runtime,
        agent: &str,
        mut request: StartRequest,
    ) -> Result<(), RpcError> {
        let (state, tenant) = (&self.state, &self.tenant);
        // Held until the run is stored: this start counts as unfinished.
        let permit = state.quotas.reserve_start(tenant).map_err(rpc_error)?;
        let usage = listing::quota_usage(state, tenant, permit.limits())
            .await
            .map_err(rpc_error)?;
        permit.admit(&usage).map_err(rpc_error)?;
        let context = request.session_id.take();
        let asked = context.as_ref().map(|c| c.as_str().to_owned());
        let session = match runs::session_for_run(state, tenant, asked).await {
            Ok(session) => session,
            Err(ApiError::NotFound(_)) => {
                return Err(RpcError::invalid_params(format!(
                    "contextId `{}` is not a context of yours: leave it out to start a new one",
                    context
                        .map(|c| weft_a2a::rpc::clip(c.as_str()))
                        .unwrap_or_default()
                )));
            }
            Err(e) => return Err(rpc_error(e)),
        };
        request.session_id = Some(session.session_id);
        request.labels = tenant.label(std::mem::take(&mut request.labels));
        runtime.start(agent, request).await.map_err(refused)?;
        Ok(())
    }
}

/// The API's refusal of a start as a JSON-RPC error (a server failure is
/// logged, not sent).
fn rpc_error(e: ApiError) -> RpcError {
    match e {
        ApiError::TooManyRequests {
            detail,
            retry_after,
        } => RpcError::exhausted(format!("{detail}; retry after {retry_after} s")),
        ApiError::BadRequest { detail, .. } | ApiError::Conflict(detail) => {
            RpcError::invalid_params(detail)
        }
        ApiError::NotFound(detail) => RpcError::invalid_params(detail),
        other => {
            tracing::error!(error = %other, "an A2A task could not start");
            RpcError::internal("the task could not start; the server logged why")
        }
    }
}
