//! The gateway's OpenAPI document (utoipa), served at `/openapi.json`,
//! with its bearer security scheme required by every operation but `/healthz`.

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::routes;
use crate::catalog::{ToolSchema, ToolsetRecord};
use crate::dto::{
    CallMeta, CallRequest, CallResponse, PongRequest, PongResponse, Problem, RegisterRequest,
    RegisterResponse, ToolsetInfo, ToolsetList, ToolsetView,
};

#[derive(OpenApi)]
#[openapi(
    info(title = "weft registry", description = "The tool registry gateway: toolset registration, health, discovery and calls over Redis Streams."),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
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

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "A caller, provider or admin token of `WEFT_REGISTRY_TOKENS`",
                    ))
                    .build(),
            ),
        );
    }
}

/// The OpenAPI document of the gateway.
pub fn openapi() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

pub(super) async fn serve() -> Json<utoipa::openapi::OpenApi> {
    Json(openapi())
}
