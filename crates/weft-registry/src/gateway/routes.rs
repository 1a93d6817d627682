//! The gateway's request handlers; every error is a [`Problem`] saying what
//! was wrong.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::Deserialize;

use super::Gateway;
use super::auth::Who;
use super::problem::{ApiError, ApiResult, forbidden, not_found};
use crate::access::Principal;
use crate::admission::{self, Admission};
use crate::catalog::{Ownership, PongOutcome, Registration, ToolsetRecord};
use crate::dto::{
    CallRequest, CallResponse, PongRequest, PongResponse, Problem, RegisterRequest,
    RegisterResponse, ToolsetInfo, ToolsetList, ToolsetView,
};
use crate::schema::PayloadSchema;
use crate::wire::{self, ToolCallMessage, ToolCallMeta};

/// Liveness.
#[utoipa::path(get, path = "/healthz", tag = "health", security(()), responses((status = 200, description = "alive")))]
pub(crate) async fn healthz() -> &'static str {
    "ok"
}

/// Registers (or re-registers) a toolset; rotates its registration token.
/// Needs a provider token whose scope names the toolset; a toolset another
/// provider registered is refused (409).
#[utoipa::path(post, path = "/v1/toolsets", tag = "providers", request_body = RegisterRequest,
    responses((status = 200, body = RegisterResponse), (status = 400, body = Problem),
        (status = 401, body = Problem), (status = 403, body = Problem), (status = 409, body = Problem)))]
pub(crate) async fn register(
    State(gw): State<Gateway>,
    Who(who): Who,
    body: Result<Json<RegisterRequest>, JsonRejection>,
) -> ApiResult<RegisterResponse> {
    let Json(req) = body?;
    check_name("toolset name", &req.name)?;
    may_provide(&who, &req.name)?;
    if req.tools.is_empty() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "validation_error",
            "a toolset needs at least one tool",
        ));
    }
    for t in &req.tools {
        check_name("tool name", &t.name)?;
        PayloadSchema::compile(&t.payload_schema).map_err(|m| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "validation_error",
                format!("tool `{}` has an invalid payload schema: {m}", t.name),
            )
        })?;
        for (what, schema) in [("result", &t.result_schema), ("sidecar", &t.sidecar_schema)] {
            if let Some(s) = schema {
                PayloadSchema::compile(s).map_err(|m| {
                    ApiError::new(
                        StatusCode::BAD_REQUEST,
                        "validation_error",
                        format!("tool `{}` has an invalid {what} schema: {m}", t.name),
                    )
                })?;
            }
        }
    }
    let record = ToolsetRecord {
        name: req.name.clone(),
        description: req.description,
        version: req.version,
        tags: req.tags,
        tools: req.tools,
        registered_at: super::clock::now_rfc3339(),
    };
    let token = uuid::Uuid::new_v4().simple().to_string();
    let stale_ms = u64::try_from(gw.config.stale_after().as_millis()).unwrap_or(u64::MAX);
    let max_queue = req.max_queue.unwrap_or(gw.config.max_queue).max(1);
    let reg = Registration {
        token: &token,
        stale_ms,
        max_queue,
        owner: who.owner(),
        ttl_ms: gw.config.registration_ttl_ms(),
    };
    if gw.catalog.save(&record, reg).await? == Ownership::NotOwner {
        return Err(taken(&record.name));
    }
    Ok(Json(RegisterResponse {
        registered_at: record.registered_at,
        registration_token: token,
    }))
}

/// Deletes a toolset: an admin deletes any; a provider unregisters only a
/// toolset of its scope that it registered itself.
#[utoipa::path(delete, path = "/v1/toolsets/{name}", tag = "providers",
    responses((status = 204), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 404, body = Problem)))]
pub(crate) async fn unregister(
    State(gw): State<Gateway>,
    Who(who): Who,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    if !who.is_admin() {
        may_provide(&who, &name)?;
    }
    match gw.catalog.delete_owned(&name, who.owner()).await? {
        Ownership::Done => Ok(StatusCode::NO_CONTENT),
        Ownership::Unknown => Err(not_found(format!("toolset `{name}` is not registered"))),
        Ownership::NotOwner => Err(forbidden(format!(
            "toolset `{name}` was registered by another provider; only an admin token deletes it"
        ))),
    }
}

/// Answers a health ping; a ping of an older registration is ignored.
#[utoipa::path(post, path = "/v1/toolsets/{name}/pong", tag = "providers", request_body = PongRequest,
    responses((status = 200, body = PongResponse), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem)))]
pub(crate) async fn pong(
    State(gw): State<Gateway>,
    Who(who): Who,
    Path(name): Path<String>,
    body: Result<Json<PongRequest>, JsonRejection>,
) -> ApiResult<PongResponse> {
    may_provide(&who, &name)?;
    let Json(req) = body?;
    match gw
        .catalog
        .record_pong(
            &name,
            &req.ping_id,
            who.owner(),
            gw.config.registration_ttl_ms(),
        )
        .await?
    {
        PongOutcome::NotOwner => Err(taken(&name)),
        PongOutcome::Recorded => Ok(Json(PongResponse { accepted: true })),
        PongOutcome::Stale => Ok(Json(PongResponse { accepted: false })),
        PongOutcome::Unknown => Err(not_found(format!("toolset `{name}` is not registered"))),
    }
}

/// Filter for the toolset list.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub(crate) struct ListQuery {
    /// Only toolsets with this tag.
    tag: Option<String>,
}

/// Lists toolsets.
#[utoipa::path(get, path = "/v1/toolsets", tag = "discovery", params(ListQuery),
    responses((status = 200, body = ToolsetList), (status = 401, body = Problem), (status = 403, body = Problem)))]
pub(crate) async fn list(
    State(gw): State<Gateway>,
    Who(who): Who,
    Query(q): Query<ListQuery>,
) -> ApiResult<ToolsetList> {
    may_discover(&who)?;
    let all = gw.catalog.list().await?;
    let toolsets = all
        .iter()
        .filter(|t| q.tag.as_ref().is_none_or(|tag| t.tags.contains(tag)))
        .map(ToolsetInfo::from)
        .collect();
    Ok(Json(ToolsetList { toolsets }))
}

/// Search terms.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub(crate) struct SearchQuery {
    /// Words matched against names, descriptions, tags and tool names.
    q: String,
}

/// Searches toolsets.
#[utoipa::path(get, path = "/v1/search", tag = "discovery", params(SearchQuery),
    responses((status = 200, body = ToolsetList), (status = 401, body = Problem), (status = 403, body = Problem)))]
pub(crate) async fn search(
    State(gw): State<Gateway>,
    Who(who): Who,
    Query(q): Query<SearchQuery>,
) -> ApiResult<ToolsetList> {
    may_discover(&who)?;
    let needle = q.q.to_lowercase();
    let all = gw.catalog.list().await?;
    let toolsets = all
        .iter()
        .filter(|t| {
            t.name.to_lowercase().contains(&needle)
                || t.description.to_lowercase().contains(&needle)
                || t.tags.iter().any(|g| g.to_lowercase().contains(&needle))
                || t.tools.iter().any(|tool| {
                    tool.name.to_lowercase().contains(&needle)
                        || tool.description.to_lowercase().contains(&needle)
                })
        })
        .map(ToolsetInfo::from)
        .collect();
    Ok(Json(ToolsetList { toolsets }))
}

/// One toolset with its tools, schemas and health.
#[utoipa::path(get, path = "/v1/toolsets/{name}", tag = "discovery",
    responses((status = 200, body = ToolsetView), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem)))]
pub(crate) async fn get_toolset(
    State(gw): State<Gateway>,
    Who(who): Who,
    Path(name): Path<String>,
) -> ApiResult<ToolsetView> {
    may_discover(&who)?;
    let Some(toolset) = gw.catalog.get(&name).await? else {
        return Err(not_found(format!("toolset `{name}` is not registered")));
    };
    let state = gw.catalog.state(&name).await?;
    Ok(Json(ToolsetView {
        toolset,
        healthy: state.as_ref().is_some_and(|s| s.healthy()),
        pong_age_ms: state.map_or(i64::MAX, |s| s.pong_age_ms),
    }))
}

/// Calls a tool: validates the payload, admits and publishes the call, and
/// answers its `tool_use_id` (the result arrives on its result stream).
#[utoipa::path(post, path = "/v1/toolsets/{name}/tools/{tool}/call", tag = "calls", request_body = CallRequest,
    responses((status = 200, body = CallResponse), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem),
        (status = 413, body = Problem), (status = 429, body = Problem), (status = 503, body = Problem)))]
pub(crate) async fn call(
    State(gw): State<Gateway>,
    Who(who): Who,
    Path((name, tool)): Path<(String, String)>,
    body: Result<Json<CallRequest>, JsonRejection>,
) -> ApiResult<CallResponse> {
    if !who.may_call() {
        return Err(forbidden("only a caller token calls tools".into()));
    }
    let Json(req) = body?;
    let Some(toolset) = gw.catalog.get(&name).await? else {
        return Err(not_found(format!("toolset `{name}` is not registered")));
    };
    let full = if tool.contains('.') {
        tool.clone()
    } else {
        format!("{name}.{tool}")
    };
    let Some(spec) = toolset
        .tools
        .iter()
        .find(|t| t.name == full || t.name == tool)
    else {
        return Err(not_found(format!("toolset `{name}` has no tool `{tool}`")));
    };
    if req.meta.run_id.is_empty() || req.meta.session_id.is_empty() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "meta.run_id and meta.session_id are required",
        ));
    }
    let schema = PayloadSchema::compile(&spec.payload_schema).map_err(|m| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("stored schema: {m}"),
        )
    })?;
    if let Err(issues) = schema.validate(&req.payload) {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            "validation_error",
            format!("the payload of `{}` does not match its schema", spec.name),
            issues,
        ));
    }
    let tool_use_id = req
        .meta
        .tool_call_id
        .clone()
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let msg = ToolCallMessage {
        kind: wire::TYPE_CALL.to_owned(),
        tool_use_id: tool_use_id.clone(),
        tool: spec.name.clone(),
        payload: Some(wire::raw(&req.payload)),
        meta: Some(ToolCallMeta {
            run_id: req.meta.run_id,
            session_id: req.meta.session_id,
            turn_id: req.meta.turn_id.unwrap_or_default(),
            tool_call_id: req.meta.tool_call_id.unwrap_or_default(),
            parent_tool_call_id: req.meta.parent_tool_call_id.unwrap_or_default(),
        }),
        // Nobody reads the result once its stream expired.
        deadline_ms: Some(wire::deadline_in(gw.config.result_ttl)),
        ..Default::default()
    };
    let bytes = wire::encode(&msg);
    if bytes.len() > gw.config.max_payload_bytes {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!(
                "the call is {} bytes; the limit is {}",
                bytes.len(),
                gw.config.max_payload_bytes
            ),
        ));
    }
    let ttl = u64::try_from(gw.config.result_ttl.as_millis()).unwrap_or(u64::MAX);
    match admission::admit(
        &gw.redis,
        &gw.config.namespace,
        &name,
        &tool_use_id,
        &bytes,
        ttl,
        admission::GroupStart::Oldest,
    )
    .await?
    {
        Admission::Published(_) => Ok(Json(CallResponse {
            tool_use_id,
            published: true,
        })),
        Admission::Reattach => Ok(Json(CallResponse {
            tool_use_id,
            published: false,
        })),
        Admission::UnknownToolset => Err(not_found(format!("toolset `{name}` is not registered"))),
        Admission::Unhealthy { pong_age_ms } => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "service_unavailable",
            format!("no healthy provider for `{name}` (last pong {pong_age_ms} ms ago)"),
        )),
        Admission::QueueFull { depth, max } => Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "queue_full",
            format!("`{name}` has {depth} queued calls (limit {max})"),
        )),
    }
}

fn check_name(what: &str, name: &str) -> Result<(), ApiError> {
    let ok = !name.is_empty()
        && name.len() <= 256
        && !name.chars().any(|c| {
            c.is_whitespace() || c.is_control() || matches!(c, '*' | '?' | '[' | ']' | '/')
        });
    if ok {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "validation_error",
            format!(
                "invalid {what} `{name}`: 1 to 256 characters, no spaces, control characters, `*?[]/`"
            ),
        ))
    }
}

fn may_discover(who: &Principal) -> Result<(), ApiError> {
    if who.may_discover() {
        Ok(())
    } else {
        Err(forbidden(
            "a provider token cannot list or read toolsets; use a caller token".into(),
        ))
    }
}

fn may_provide(who: &Principal, toolset: &str) -> Result<(), ApiError> {
    if who.may_provide(toolset) {
        Ok(())
    } else {
        Err(forbidden(format!(
            "`{}` may not register, pong or unregister toolset `{toolset}`",
            who.name
        )))
    }
}

fn taken(toolset: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "conflict",
        format!("toolset `{toolset}` is registered by another provider"),
    )
}
