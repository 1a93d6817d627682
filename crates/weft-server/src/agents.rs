//! The agents this server serves: `GET /v1/agents` lists their ids, paged
//! in id order, and [`unknown_agent`] is the 400 a start naming any other
//! agent gets, listing the first [`NAMED_IN_ERROR`] served agents so a
//! client sees what it may ask for.
//!
//! Every tenant is served the same agents; the list still needs a tenant's
//! token, like every `/v1` route.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Tenant;
use crate::error::ApiError;
use crate::{AppState, listing};

/// How many served agents a 400 for an unknown agent names.
pub(crate) const NAMED_IN_ERROR: usize = 20;

/// One served agent.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AgentView {
    /// The agent's id, as `POST /v1/runs` takes it.
    pub id: String,
}

/// One page of the served agents, by id.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AgentList {
    /// The agents.
    pub agents: Vec<AgentView>,
    /// Pass as `cursor` for the next page; absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `GET /v1/agents` query parameters.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AgentQuery {
    /// At most this many agents (default 50, at most 500).
    pub limit: Option<u32>,
    /// Continue after the page that gave this `next_cursor`.
    pub cursor: Option<String>,
}

/// Lists the agents this server runs, by id.
#[utoipa::path(
    get, path = "/v1/agents", tag = "agents", params(AgentQuery),
    responses(
        (status = 200, description = "The agents", body = AgentList),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn list_agents(
    State(state): State<AppState>,
    _tenant: Tenant,
    query: Result<Query<AgentQuery>, QueryRejection>,
) -> Result<Json<AgentList>, ApiError> {
    let Query(query) = query?;
    let size = listing::page_size(query.limit) as usize;
    let after = query.cursor.unwrap_or_default();
    let rest: Vec<&str> = state
        .runtime
        .agent_ids()
        .into_iter()
        .map(|id| id.as_str())
        .filter(|id| after.is_empty() || *id > after.as_str())
        .collect();
    let page = &rest[..rest.len().min(size)];
    let next_cursor = (rest.len() > page.len())
        .then(|| page.last().map(|id| (*id).to_owned()))
        .flatten();
    Ok(Json(AgentList {
        agents: page
            .iter()
            .map(|id| AgentView {
                id: (*id).to_owned(),
            })
            .collect(),
        next_cursor,
    }))
}

/// The 400 for a start naming `agent`, which this server does not serve:
/// it names the first [`NAMED_IN_ERROR`] served agents, and how many more.
pub(crate) fn unknown_agent(state: &AppState, agent: &str) -> ApiError {
    let ids = state.runtime.agent_ids();
    let named: Vec<String> = ids
        .iter()
        .take(NAMED_IN_ERROR)
        .map(|id| format!("`{}`", id.as_str()))
        .collect();
    let served = match ids.len() {
        0 => "this server serves no agent".to_owned(),
        n if n > NAMED_IN_ERROR => format!(
            "served agents: {} and {} more (GET /v1/agents lists them all)",
            named.join(", "),
            n - NAMED_IN_ERROR
        ),
        _ => format!("served agents: {}", named.join(", ")),
    };
    // The name is quoted short: it is the client's own text.
    let shown: String = agent.chars().take(128).collect();
    ApiError::field("agent", format!("unknown agent `{shown}`; {served}"))
}
