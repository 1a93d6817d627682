//! Prompt override handlers: list, set and clear the caller's overrides.
//!
//! Every override a tenant sets is scoped to that tenant (its runs carry
//! the tenant's label), so no tenant can set, see or clear another's; a
//! session in the scope must be one of the caller's sessions. Templates
//! are checked (they parse, and are not too long) before they are stored.
//! Listings are paged in the store's order with an opaque cursor.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use weft_core::prompt::{PromptError, check_template, template_version};
use weft_core::session::{PromptCursor, PromptFilter, PromptOverride, PromptScope};
use weft_core::tool::Labels;

use crate::access::{check_labels, owned_session};
use crate::auth::Tenant;
use crate::error::{ApiError, Problem};
use crate::json::JsonBody;
use crate::{AppState, listing, now};

/// The longest prompt name accepted.
const MAX_NAME_LEN: usize = 128;

/// `POST /v1/prompts`: sets an override of the caller's tenant.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetPrompt {
    /// The prompt's name (`system` is the model planner's system prompt).
    pub name: String,
    /// The MiniJinja template; a variable it names must be given when it renders.
    pub template: String,
    /// Only runs of this session (one of the caller's).
    #[serde(default)]
    pub session_id: Option<String>,
    /// Only runs carrying every one of these labels (`weft.*` keys are reserved).
    #[serde(default)]
    pub labels: Labels,
}

/// `POST /v1/prompts/clear`: clears the override with this name and scope.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClearPrompt {
    /// The prompt's name.
    pub name: String,
    /// The session of the override's scope.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The labels of the override's scope.
    #[serde(default)]
    pub labels: Labels,
}

/// Whether a clear removed an override.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PromptCleared {
    /// Whether an override with that name and scope existed.
    pub cleared: bool,
}

/// A prompt override of the caller's tenant.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PromptView {
    /// The prompt's name.
    pub name: String,
    /// The template.
    pub template: String,
    /// The version of the template (a hash of its text), as render events name it.
    pub version: String,
    /// The session of its scope, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The labels of its scope.
    pub labels: Labels,
    /// When it was last set, in milliseconds since the Unix epoch.
    pub updated_at: u64,
}

impl From<PromptOverride> for PromptView {
    fn from(o: PromptOverride) -> Self {
        Self {
            version: template_version(&o.template),
            name: o.name,
            template: o.template,
            session_id: o.scope.session_id.map(|s| s.to_string()),
            labels: o.scope.labels,
            updated_at: o.updated_at.as_millis(),
        }
    }
}

/// One page of the caller's overrides.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PromptList {
    /// The overrides, by name, then scope.
    pub prompts: Vec<PromptView>,
    /// Pass as `cursor` for the next page; absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `GET /v1/prompts` query parameters.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PromptQuery {
    /// Only overrides of this prompt.
    pub name: Option<String>,
    /// At most this many overrides (default 50, at most 500).
    pub limit: Option<u32>,
    /// Continue after the page that gave this `next_cursor`.
    pub cursor: Option<String>,
}

/// Lists the caller's prompt overrides.
#[utoipa::path(
    get, path = "/v1/prompts", tag = "prompts", params(PromptQuery),
    responses(
        (status = 200, description = "The overrides", body = PromptList),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn list_prompts(
    State(state): State<AppState>,
    tenant: Tenant,
    query: Result<Query<PromptQuery>, QueryRejection>,
) -> Result<Json<PromptList>, ApiError> {
    let Query(query) = query?;
    let size = listing::page_size(query.limit);
    let filter = PromptFilter {
        name: query.name,
        tenant: Some(tenant.0.clone()),
        limit: Some(size),
        after: query.cursor.as_deref().map(decode_cursor).transpose()?,
    };
    let page = state.sessions.list_prompt_overrides(&filter).await?;
    let next_cursor = (page.len() >= size as usize)
        .then(|| page.last().map(encode_cursor))
        .flatten();
    Ok(Json(PromptList {
        prompts: page.into_iter().map(PromptView::from).collect(),
        next_cursor,
    }))
}

/// Sets (or replaces) an override for the caller's tenant.
#[utoipa::path(
    post, path = "/v1/prompts", tag = "prompts", request_body = SetPrompt,
    responses(
        (status = 200, description = "The override, as stored", body = PromptView),
        (status = 400, description = "Malformed request, or a template that does not parse", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The scope names a session this tenant does not have", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn set_prompt(
    State(state): State<AppState>,
    tenant: Tenant,
    JsonBody(body): JsonBody<SetPrompt>,
) -> Result<Json<PromptView>, ApiError> {
    let name = check_name(body.name)?;
    check_template(&name, &body.template).map_err(template_error)?;
    let scope = scope(&state, &tenant, body.session_id, body.labels).await?;
    let stored = PromptOverride {
        name,
        scope,
        template: body.template,
        updated_at: now(),
    };
    state.sessions.set_prompt_override(&stored).await?;
    Ok(Json(stored.into()))
}

/// Clears one of the caller's overrides.
#[utoipa::path(
    post, path = "/v1/prompts/clear", tag = "prompts", request_body = ClearPrompt,
    responses(
        (status = 200, description = "Whether the override existed", body = PromptCleared),
        (status = 404, description = "The scope names a session this tenant does not have", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn clear_prompt(
    State(state): State<AppState>,
    tenant: Tenant,
    JsonBody(body): JsonBody<ClearPrompt>,
) -> Result<Json<PromptCleared>, ApiError> {
    let name = check_name(body.name)?;
    let scope = scope(&state, &tenant, body.session_id, body.labels).await?;
    let cleared = state.sessions.delete_prompt_override(&name, &scope).await?;
    Ok(Json(PromptCleared { cleared }))
}

/// The scope of an override of the caller's tenant.
async fn scope(
    state: &AppState,
    tenant: &Tenant,
    session_id: Option<String>,
    labels: Labels,
) -> Result<PromptScope, ApiError> {
    check_labels(&labels)?;
    let session_id = match session_id {
        Some(id) => Some(owned_session(state, tenant, &id).await?.session_id),
        None => None,
    };
    Ok(PromptScope {
        tenant: Some(tenant.0.clone()),
        session_id,
        labels,
    })
}

fn check_name(name: String) -> Result<String, ApiError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(name)
    } else {
        Err(ApiError::field(
            "name",
            format!("must be 1 to {MAX_NAME_LEN} characters: letters, digits, `.`, `_` or `-`"),
        ))
    }
}

fn template_error(e: PromptError) -> ApiError {
    ApiError::field("template", e.to_string())
}

/// The cursor of the page after the one ending with `last`.
fn encode_cursor(last: &PromptOverride) -> String {
    PromptCursor {
        name: last.name.clone(),
        scope: last.scope.clone(),
    }
    .encode()
}

fn decode_cursor(token: &str) -> Result<PromptCursor, ApiError> {
    PromptCursor::decode(token)
        .ok_or_else(|| ApiError::field("cursor", "is not a cursor this server handed out"))
}

#[cfg(test)]
mod tests {
    use weft_core::Timestamp;

    use super::*;

    #[test]
    fn cursors_round_trip_and_junk_is_refused() {
        let o = PromptOverride {
            name: "system".into(),
            scope: PromptScope {
                tenant: Some("acme".into()),
                ..PromptScope::default()
            },
            template: "t".into(),
            updated_at: Timestamp::from_millis(1),
        };
        let token = encode_cursor(&o);
        let back = decode_cursor(&token).ok();
        assert_eq!(back.map(|c| (c.name, c.scope)), Some((o.name, o.scope)));
        assert!(decode_cursor("zz").is_err());
        assert!(decode_cursor("abc").is_err());
        assert!(decode_cursor(&"ab".repeat(PromptCursor::MAX_TOKEN_LEN)).is_err());
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("system".into()).is_ok());
        assert!(check_name(String::new()).is_err());
        assert!(check_name("a/b".into()).is_err());
    }
}
