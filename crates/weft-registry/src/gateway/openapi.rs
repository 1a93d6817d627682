//! The gateway's OpenAPI document (utoipa), served at `/openapi.json`.

use axum::Json;
use utoipa::OpenApi;

use super::routes;
use crate::catalog::{ToolSchema, ToolsetRecord};
use crate::dto::{
    CallMeta, CallRequest, CallResponse, PongRequest, PongResponse, Problem, RegisterRequest,
    RegisterResponse, ToolsetInfo, ToolsetList, ToolsetView,
};

#[derive(OpenApi)]
#[openapi(
    info(title = "weft registry", description = "The tool registry gateway: toolset registration, health, discovery and calls over Redis Streams."),
    paths(
        routes::healthz, routes::register, routes::unregister, routes::pong, routes::list,
        routes::search, routes::get_toolset, routes::call,
    ),
    components(schemas(
        CallMeta, CallRequest, CallResponse, PongRequest, PongResponse, Problem, RegisterRequest,
        RegisterResponse, ToolSchema, ToolsetInfo, ToolsetList, ToolsetRecord, ToolsetView,
    )),
    tags(
        (name = "providers", description = "Registration and health"),
        (name = "discovery", description = "Toolsets and their tools"),
        (name = "calls", description = "Calling tools"),
        (name = "health", description = "Liveness"),
    )
)]
struct ApiDoc;

/// The OpenAPI document of the gateway.
pub fn openapi() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

pub(super) async fn serve() -> Json<utoipa::openapi::OpenApi> {
    Json(openapi())
}
