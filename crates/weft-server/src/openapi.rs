//! The OpenAPI document of the API (utoipa), served at `/openapi.json`.

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::dto::{
    AnswerAccepted, AwaitView, CancelRun, CreateSession, EndedSession, Health, PhaseSchema,
    ProvideAnswer, RunList, RunStatusSchema, RunView, SessionList, SessionView, StartRun,
};
use crate::elicit_schema::{
    ElicitationActionSchema, ElicitationAnswerSchema, ElicitationItemSchema, ElicitationModeSchema,
};
use crate::error::{FieldError, Problem};
use crate::{control, events, runs, sessions};

#[derive(OpenApi)]
#[openapi(
    info(title = "weft", description = "Durable LLM-agent runs over HTTP: sessions, runs, events (SSE) and human-in-the-loop answers."),
    paths(
        runs::health,
        sessions::create_session,
        sessions::list_sessions,
        sessions::get_session,
        sessions::end_session,
        runs::start_run,
        runs::list_runs,
        runs::get_run,
        events::run_events,
        control::answer_await,
        control::pause_run,
        control::continue_run,
        control::cancel_run,
    ),
    components(schemas(
        AnswerAccepted, AwaitView, CancelRun, CreateSession, EndedSession, FieldError, Health,
        PhaseSchema, Problem, ProvideAnswer, RunList, RunStatusSchema, RunView, SessionList,
        SessionView, StartRun, ElicitationItemSchema, ElicitationModeSchema,
        ElicitationAnswerSchema, ElicitationActionSchema,
    )),
    modifiers(&BearerAuth),
    tags(
        (name = "sessions", description = "Conversations holding runs"),
        (name = "runs", description = "Runs, their events and their awaits"),
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
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The OpenAPI document of every endpoint and schema the server exposes.
pub fn openapi() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// `GET /openapi.json`.
pub(crate) async fn serve_document() -> Json<utoipa::openapi::OpenApi> {
    Json(openapi())
}
