//! The OpenAPI document of the API (utoipa), served at `/openapi.json`.
//!
//! Each handler's annotation lists its success and the errors particular to
//! it (409s, 429s, what a 404 or 400 means there), never the ones every
//! route of its kind gives alike (a 401 for a missing token). [`ProblemResponses`] then
//! adds the errors every route of a kind can give, each an
//! `application/problem+json` [`Problem`]: 400, 401 and 500 on every `/v1`
//! route, 404 where the path names a resource, 408, 413 and 415 where a
//! body is read (every POST), and 503 where the runtime is asked to act on a run
//! (every POST under `/v1/runs`). [`RequestIdHeaders`] documents the
//! request id on every operation: the optional `x-request-id` request
//! header and the `x-request-id` header of every response.

use axum::Json;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{Operation, ParameterBuilder, ParameterIn};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Object, Ref, RefOr, Required, ResponseBuilder, Type};
use utoipa::{Modify, OpenApi};

use crate::agents::{AgentList, AgentView};
use crate::await_schema::{
    AwaitAnswerSchema, AwaitItemSchema, ExternalToolCallSchema, QuestionOptionSchema,
    QuestionSchema, ToolOutputSchema, ToolResultBodySchema, ToolResultKindSchema,
};
use crate::dto::{
    AnswerAccepted, AwaitView, CancelRun, CreateSession, EndedSession, Health, NoOptions,
    PhaseSchema, ProvideAnswer, RunList, RunStatusSchema, RunView, SessionList, SessionView,
    SkippedRun, SkippedSession, StartRun,
};
use crate::elicit_schema::{
    ElicitationActionSchema, ElicitationAnswerSchema, ElicitationItemSchema, ElicitationModeSchema,
};
use crate::error::{FieldError, PROBLEM_JSON, Problem};
use crate::event_schema::{PromptScopeSchema, RunEventSchema, UsageSchema};
use crate::message_schema::{
    MediaKindSchema, MediaSourceSchema, MessageSchema, PartSchema, ResourceBodySchema, RoleSchema,
    RunInputSchema,
};
use crate::outcome_schema::{
    RunFailureSchema, RunOutcomeSchema, TerminationReasonSchema, TerminationSchema,
};
use crate::prompts::{ClearPrompt, PromptCleared, PromptList, PromptView, SetPrompt};
use crate::{a2a, agents, control, events, metrics, prompts, runs, sessions};

#[derive(OpenApi)]
#[openapi(
    info(title = "weft", description = "Durable LLM-agent runs over HTTP: sessions, runs, events (SSE) and human-in-the-loop answers. The run viewer served at `/ui/` (HTML, scripts and styles) is a browser client of this API, not part of it, and is not described here."),
    paths(
        runs::health,
        serve_document,
        metrics::serve_metrics,
        agents::list_agents,
        sessions::create_session,
        sessions::list_sessions,
        sessions::get_session,
        sessions::end_session,
        sessions::delete_session,
        runs::start_run,
        runs::list_runs,
        runs::get_run,
        events::run_events,
        control::answer_await,
        control::pause_run,
        control::continue_run,
        control::cancel_run,
        prompts::list_prompts,
        prompts::set_prompt,
        prompts::clear_prompt,
        a2a::agent_card,
        a2a::endpoint,
        a2a::endpoint_v03,
    ),
    components(schemas(
        AgentList, AgentView, AnswerAccepted, AwaitView, CancelRun, CreateSession, EndedSession, FieldError, Health,
        NoOptions, PhaseSchema, Problem, ProvideAnswer, RunList, RunStatusSchema, RunView,
        SessionList, SessionView, SkippedRun, SkippedSession, StartRun, ElicitationItemSchema, ElicitationModeSchema,
        ElicitationAnswerSchema, ElicitationActionSchema, RunInputSchema, MessageSchema,
        RoleSchema, PartSchema, ResourceBodySchema, MediaSourceSchema, MediaKindSchema, AwaitItemSchema,
        QuestionSchema, QuestionOptionSchema, ExternalToolCallSchema, AwaitAnswerSchema,
        ToolOutputSchema, ToolResultBodySchema, ToolResultKindSchema, RunEventSchema,
        RunOutcomeSchema, RunFailureSchema, TerminationSchema, TerminationReasonSchema,
        UsageSchema, SetPrompt, ClearPrompt, PromptCleared, PromptView, PromptList,
        PromptScopeSchema,
    )),
    modifiers(&BearerAuth, &ProblemResponses, &RequestIdHeaders),
    tags(
        (name = "agents", description = "The agents this server runs"),
        (name = "sessions", description = "Conversations holding runs"),
        (name = "runs", description = "Runs, their events and their awaits"),
        (name = "prompts", description = "The caller's prompt overrides"),
        (name = "health", description = "Liveness and this document"),
        (name = "operations", description = "Metrics for the operator's scraper"),
        (name = "a2a", description = "The agents as A2A agents (JSON-RPC; see the A2A specification)"),
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
        components.add_security_scheme(
            "metrics_bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The operator's metrics token (`WEFT_METRICS_TOKEN`), not a tenant token",
                    ))
                    .build(),
            ),
        );
    }
}

/// Adds the problem responses every route of a kind can give; see the
/// module doc.
struct ProblemResponses;

impl Modify for ProblemResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (path, item) in openapi.paths.paths.iter_mut() {
            if !path.starts_with("/v1/") {
                continue;
            }
            let names_resource = path.contains('{');
            if let Some(op) = item.get.as_mut() {
                add_common(op, names_resource);
            }
            if let Some(op) = item.delete.as_mut() {
                add_common(op, names_resource);
            }
            if let Some(op) = item.post.as_mut() {
                add_common(op, names_resource);
                add(
                    op,
                    "408",
                    "The body did not arrive within the body-read timeout",
                );
                add(op, "413", "The body is larger than the limit");
                add(op, "415", "The body is not `application/json`");
                if path.starts_with("/v1/runs") {
                    add(op, "503", "A toolset or the runtime is unavailable");
                }
            }
        }
    }
}

/// Documents the request id on every operation (see `requests`): the
/// optional `x-request-id` request header, and the `x-request-id` header
/// of each of its responses. Runs after [`ProblemResponses`], so the
/// problem responses it adds carry the header too.
struct RequestIdHeaders;

impl Modify for RequestIdHeaders {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            for op in [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.options,
                &mut item.head,
                &mut item.patch,
                &mut item.trace,
            ]
            .into_iter()
            .flatten()
            {
                add_request_id(op);
            }
        }
    }
}

/// The request id's header name, as the server reads and writes it.
const REQUEST_ID_HEADER: &str = "x-request-id";

fn add_request_id(op: &mut Operation) {
    let params = op.parameters.get_or_insert_with(Vec::new);
    if !params
        .iter()
        .any(|p| p.name == REQUEST_ID_HEADER && p.parameter_in == ParameterIn::Header)
    {
        params.push(
            ParameterBuilder::new()
                .name(REQUEST_ID_HEADER)
                .parameter_in(ParameterIn::Header)
                .required(Required::False)
                .description(Some(
                    "An id for this request, 1 to 64 visible ASCII characters; used as the \
                     request's id when well-formed, else a fresh one is made",
                ))
                .schema(Some(
                    utoipa::openapi::ObjectBuilder::new()
                        .schema_type(Type::String)
                        .min_length(Some(1))
                        .max_length(Some(64)),
                ))
                .build(),
        );
    }
    for response in op.responses.responses.values_mut() {
        if let RefOr::T(response) = response {
            response
                .headers
                .entry(REQUEST_ID_HEADER.to_owned())
                .or_insert_with(|| {
                    HeaderBuilder::new()
                        .schema(Object::with_type(Type::String))
                        .description(Some(
                            "The request's id: the client's well-formed `x-request-id`, else a \
                         fresh one; problem bodies name it as `request_id`",
                        ))
                        .build()
                });
        }
    }
}

fn add_common(op: &mut Operation, names_resource: bool) {
    add(op, "400", "Malformed request");
    add(op, "401", "Missing or unknown token");
    if names_resource {
        add(op, "404", "No such resource for this tenant");
    }
    add(op, "500", "The store failed");
}

/// Adds a problem response for `status` unless the operation has one.
fn add(op: &mut Operation, status: &str, description: &str) {
    if op.responses.responses.contains_key(status) {
        return;
    }
    let content = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name("Problem")))
        .build();
    let response = ResponseBuilder::new()
        .description(description)
        .content(PROBLEM_JSON, content)
        .build();
    op.responses
        .responses
        .insert(status.to_owned(), response.into());
}

/// The OpenAPI document of every endpoint and schema the server exposes.
pub fn openapi() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "health",
    responses((status = 200, description = "The OpenAPI 3.1 document of this API", body = Object)))]
pub(crate) async fn serve_document() -> Json<utoipa::openapi::OpenApi> {
    Json(openapi())
}
