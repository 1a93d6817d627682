//! What every handler checks before it acts: that a run or session named in
//! the path is the caller's (another tenant's is a 404, like a missing one),
//! and that ids and labels chosen by a client are acceptable.

use weft_core::session::{SessionError, SessionRecord};
use weft_core::store::StoredRun;
use weft_core::tool::Labels;
use weft_core::{RunId, SessionId};
use weft_runtime::RuntimeError;

use crate::AppState;
use crate::auth::Tenant;
use crate::error::ApiError;

/// The longest id a client may choose.
const MAX_ID_LEN: usize = 128;

/// The caller's run `run_id`; 404 when absent or another tenant's.
pub(crate) async fn owned_run(
    state: &AppState,
    tenant: &Tenant,
    run_id: &str,
) -> Result<StoredRun, ApiError> {
    let id = RunId::new(run_id);
    match state.runtime.store().load_run(&id).await? {
        Some(stored) if tenant.owns(&stored.record.labels) => Ok(stored),
        _ => Err(RuntimeError::RunNotFound(id).into()),
    }
}

/// The caller's session `session_id`; 404 when absent or another tenant's.
pub(crate) async fn owned_session(
    state: &AppState,
    tenant: &Tenant,
    session_id: &str,
) -> Result<SessionRecord, ApiError> {
    let id = SessionId::new(session_id);
    match state.sessions.get_session(&id).await? {
        Some(s) if tenant.owns(&s.labels) => Ok(s),
        _ => Err(SessionError::NotFound { session_id: id }.into()),
    }
}

/// Rejects client labels in the reserved `weft.` namespace.
pub(crate) fn check_labels(labels: &Labels) -> Result<(), ApiError> {
    match labels.keys().find(|k| k.starts_with("weft.")) {
        Some(key) => Err(ApiError::field(
            format!("labels.{key}"),
            "label keys starting with `weft.` are reserved",
        )),
        None => Ok(()),
    }
}

/// Checks an id chosen by a client: non-empty, short, printable, no `/`.
pub(crate) fn check_id(field: &str, id: String) -> Result<String, ApiError> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':'));
    if ok {
        Ok(id)
    } else {
        Err(ApiError::field(
            field,
            format!("must be 1 to {MAX_ID_LEN} characters: letters, digits, `.`, `_`, `-` or `:`"),
        ))
    }
}
