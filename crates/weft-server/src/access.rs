//! What every handler checks before it acts: that a run or session named in
//! the path is the caller's (another tenant's is a 404, like a missing one,
//! and as quick: its state is never read), and that ids and labels chosen by a client are acceptable.
//!
//! A run or session whose stored row does not decode is a typed
//! [`ApiError::CorruptRun`] or [`ApiError::CorruptSession`] for its own
//! tenant only: its tenant is read from the raw row, so for every other
//! tenant it is a 404 like any run or session that is not theirs.

use weft_core::prompt::TENANT_LABEL;
use weft_core::session::{SessionError, SessionRecord};
use weft_core::store::{RunStatus, StoreError, StoredRun};
use weft_core::tool::Labels;
use weft_core::{RunId, SessionId};
use weft_runtime::RuntimeError;

use crate::AppState;
use crate::auth::Tenant;
use crate::error::{ApiError, FieldError};

/// The longest id a client may choose.
const MAX_ID_LEN: usize = 128;

/// The caller's run `run_id`; 404 when absent or another tenant's.
pub(crate) async fn owned_run(
    state: &AppState,
    tenant: &Tenant,
    run_id: &str,
) -> Result<StoredRun, ApiError> {
    let id = RunId::new(run_id);
    // The owner is read first, from the row's head: another tenant's run
    // costs what a missing one does (one small read, its state never
    // decoded), so how long a 404 takes does not tell that the run exists.
    match state.runtime.store().run_head(&id, TENANT_LABEL).await {
        Ok(Some(head)) if head.label.as_deref() == Some(tenant.0.as_str()) => {}
        Ok(_) => return Err(RuntimeError::RunNotFound(id).into()),
        Err(e) => return Err(e.into()),
    }
    match state.runtime.store().load_run(&id).await {
        Ok(Some(stored)) if tenant.owns(&stored.record.labels) => Ok(stored),
        Ok(_) => Err(RuntimeError::RunNotFound(id).into()),
        Err(StoreError::Corrupt { message }) => Err(corrupt_run(state, tenant, id, &message).await),
        Err(e) => Err(e.into()),
    }
}

/// The error for run `id`, which does not decode (`message`): typed for
/// its tenant, a 404 for anyone else.
async fn corrupt_run(state: &AppState, tenant: &Tenant, id: RunId, message: &str) -> ApiError {
    let head = match state.runtime.store().run_head(&id, TENANT_LABEL).await {
        Ok(Some(head)) => head,
        Ok(None) => return RuntimeError::RunNotFound(id).into(),
        Err(e) => return e.into(),
    };
    let owner: Labels = head
        .label
        .into_iter()
        .map(|t| (TENANT_LABEL.to_owned(), t))
        .collect();
    if !tenant.owns(&owner) {
        return RuntimeError::RunNotFound(id).into();
    }
    tracing::warn!(run_id = %id, error = message, "a stored run cannot be read");
    ApiError::CorruptRun {
        run_id: id.to_string(),
        ended: head.quarantined.is_some() || head.status.is_some_and(RunStatus::is_finished),
        quarantined: head.quarantined.is_some(),
    }
}

/// The caller's session `session_id`; 404 when absent or another tenant's.
/// A session whose stored row does not decode is a typed
/// [`ApiError::CorruptSession`] for its own tenant only (its tenant read
/// from the raw row), a 404 for anyone else.
pub(crate) async fn owned_session(
    state: &AppState,
    tenant: &Tenant,
    session_id: &str,
) -> Result<SessionRecord, ApiError> {
    let id = SessionId::new(session_id);
    match state.sessions.get_session(&id).await {
        Ok(Some(s)) if tenant.owns(&s.labels) => Ok(s),
        Ok(_) => Err(SessionError::NotFound { session_id: id }.into()),
        Err(SessionError::Corrupt { message, .. }) => {
            Err(corrupt_session(state, tenant, id, &message).await)
        }
        Err(e) => Err(e.into()),
    }
}

/// The error for session `id`, which does not decode (`message`): typed
/// for its tenant, a 404 for anyone else.
async fn corrupt_session(
    state: &AppState,
    tenant: &Tenant,
    id: SessionId,
    message: &str,
) -> ApiError {
    let head = match state.sessions.session_head(&id, TENANT_LABEL).await {
        Ok(Some(head)) => head,
        Ok(None) => return SessionError::NotFound { session_id: id }.into(),
        Err(e) => return e.into(),
    };
    let owner: Labels = head
        .label
        .into_iter()
        .map(|t| (TENANT_LABEL.to_owned(), t))
        .collect();
    if !tenant.owns(&owner) {
        return SessionError::NotFound { session_id: id }.into();
    }
    tracing::warn!(session_id = %id, error = message, "a stored session cannot be read");
    ApiError::CorruptSession {
        session_id: id.to_string(),
    }
}

/// The most labels a client may give a run.
pub(crate) const MAX_LABELS: usize = 64;

/// The longest label key a client may give, in bytes.
pub(crate) const MAX_LABEL_KEY: usize = 128;

/// The longest label value a client may give, in bytes.
pub(crate) const MAX_LABEL_VALUE: usize = 1024;

/// Checks a client's labels: at most [`MAX_LABELS`]; keys of 1 to
/// [`MAX_LABEL_KEY`] bytes, without `"`, `\` or control characters, and
/// outside the reserved `weft.` namespace; values of at most
/// [`MAX_LABEL_VALUE`] bytes. A 400 names the limit (its `code`) and quotes
/// at most a short prefix of the key.
pub(crate) fn check_labels(labels: &Labels) -> Result<(), ApiError> {
    if labels.len() > MAX_LABELS {
        return Err(label_error(
            "labels".to_owned(),
            format!("at most {MAX_LABELS} labels, not {}", labels.len()),
            "too_many_labels",
        ));
    }
    for (key, value) in labels {
        let field = format!("labels.{}", crate::clip::clip(key, 64));
        if key.is_empty()
            || key.len() > MAX_LABEL_KEY
            || key.chars().any(|c| c == '"' || c == '\\' || c.is_control())
        {
            return Err(label_error(
                field,
                format!(
                    "a label key is 1 to {MAX_LABEL_KEY} bytes, without `\"`, `\\` or control characters"
                ),
                "bad_label_key",
            ));
        }
        if key.starts_with("weft.") {
            return Err(label_error(
                field,
                "label keys starting with `weft.` are reserved".to_owned(),
                "reserved_label",
            ));
        }
        if value.len() > MAX_LABEL_VALUE {
            return Err(label_error(
                field,
                format!(
                    "a label value is at most {MAX_LABEL_VALUE} bytes, not {}",
                    value.len()
                ),
                "label_value_too_long",
            ));
        }
    }
    Ok(())
}

fn label_error(field: String, message: String, code: &str) -> ApiError {
    ApiError::BadRequest {
        detail: format!("`{field}`: {message}"),
        errors: vec![FieldError {
            field,
            message,
            code: Some(code.to_owned()),
        }],
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
