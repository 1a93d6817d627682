//! Database rows as weft values, and the log rule shared by the run event log
//! and the session transcript. Nothing here depends on the backend.

use weft_core::SessionId;
use weft_core::session::{
    ListedSession, PromptOverride, PromptScope, SessionError, SessionHead, SessionRecord,
    TranscriptEntry,
};
use weft_core::store::{ListedRun, RunHead, RunRecord, StoreError};

use crate::codec;

/// `runs` columns: run_id, agent_id, session_id, status, labels, created_at, updated_at.
pub(crate) type RunRow = (String, String, String, String, String, i64, i64);

/// The columns selected for a [`RunRow`].
pub(crate) const RUN_COLUMNS: &str =
    "run_id, agent_id, session_id, status, labels, created_at, updated_at";

/// `sessions` columns: session_id, labels, created_at, ended_at, transcript_seq.
pub(crate) type SessionRow = (String, String, i64, Option<i64>, i64);

/// The columns selected for a [`SessionRow`].
pub(crate) const SESSION_COLUMNS: &str = "session_id, labels, created_at, ended_at, transcript_seq";

/// `transcript` columns: seq, run_id, at, message.
pub(crate) type TranscriptRow = (i64, Option<String>, i64, String);

/// `prompt_overrides` columns: name, scope_tenant, scope_session, scope_labels, template, updated_at.
pub(crate) type PromptRow = (String, String, String, String, String, i64);

/// The columns selected for a [`PromptRow`].
pub(crate) const PROMPT_COLUMNS: &str =
    "name, scope_tenant, scope_session, scope_labels, template, updated_at";

/// A `runs` row as a record.
pub(crate) fn run_record(row: RunRow) -> Result<RunRecord, StoreError> {
    let (run_id, agent_id, session_id, status, labels, created_at, updated_at) = row;
    Ok(RunRecord {
        run_id: run_id.into(),
        agent_id: agent_id.into(),
        session_id: session_id.into(),
        status: codec::status(&status)?,
        labels: codec::from_json(&labels, "run labels")?,
        created_at: codec::ts(created_at, "created_at")?,
        updated_at: codec::ts(updated_at, "updated_at")?,
    })
}

/// A `runs` row as a listed run: its record, or what is known of it when
/// it does not decode.
pub(crate) fn listed_run(row: RunRow) -> ListedRun {
    let run_id = row.0.clone();
    let created_at = row.5;
    match run_record(row) {
        Ok(record) => ListedRun::Run(record),
        Err(e) => ListedRun::Corrupt {
            run_id: run_id.into(),
            created_at: weft_core::Timestamp::from_millis(u64::try_from(created_at).unwrap_or(0)),
            error: e.to_string(),
        },
    }
}

/// A run's head from its raw `labels` and `status` columns: the label
/// `key` is read from the labels as loose JSON, so a label of the wrong
/// type elsewhere does not hide it.
pub(crate) fn run_head(
    labels: &str,
    status: &str,
    key: &str,
    quarantined: Option<String>,
) -> RunHead {
    RunHead {
        label: label_of(labels, key),
        status: codec::status(status).ok(),
        quarantined,
    }
}

/// A `sessions` row as a record; a row that does not decode is a
/// [`SessionError::Corrupt`] naming its session.
pub(crate) fn session_record(row: SessionRow) -> Result<SessionRecord, SessionError> {
    let session_id = SessionId::from(row.0.clone());
    decode_session(row).map_err(|e| SessionError::Corrupt {
        session_id,
        message: corrupt_message(e),
    })
}

fn decode_session(row: SessionRow) -> Result<SessionRecord, StoreError> {
    let (session_id, labels, created_at, ended_at, transcript_seq) = row;
    Ok(SessionRecord {
        session_id: session_id.into(),
        labels: codec::from_json(&labels, "session labels")?,
        created_at: codec::ts(created_at, "created_at")?,
        ended_at: ended_at.map(|t| codec::ts(t, "ended_at")).transpose()?,
        transcript_seq: codec::uint(transcript_seq, "transcript_seq")?,
    })
}

/// What a decoding error says, without the "corrupt" preamble.
fn corrupt_message(e: StoreError) -> String {
    match e {
        StoreError::Corrupt { message } => message,
        other => other.to_string(),
    }
}

/// A `sessions` row as a listed session: its record, or what is known of
/// it when it does not decode.
pub(crate) fn listed_session(row: SessionRow) -> ListedSession {
    let session_id = SessionId::from(row.0.clone());
    let created_at = row.2;
    match decode_session(row) {
        Ok(record) => ListedSession::Session(record),
        Err(e) => ListedSession::Corrupt {
            session_id,
            created_at: weft_core::Timestamp::from_millis(u64::try_from(created_at).unwrap_or(0)),
            error: corrupt_message(e),
        },
    }
}

/// A session's head from its raw `labels` column, read as loose JSON.
pub(crate) fn session_head(labels: &str, key: &str) -> SessionHead {
    SessionHead {
        label: label_of(labels, key),
    }
}

/// The string value of label `key` in `labels`, read as loose JSON.
fn label_of(labels: &str, key: &str) -> Option<String> {
    serde_json::from_str::<serde_json::Value>(labels)
        .ok()
        .as_ref()
        .and_then(|l| l.get(key))
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
}

/// A `transcript` row as an entry.
pub(crate) fn transcript_entry(row: TranscriptRow) -> Result<TranscriptEntry, StoreError> {
    let (seq, run_id, at, message) = row;
    Ok(TranscriptEntry {
        seq: codec::uint(seq, "transcript seq")?,
        run_id: run_id.map(Into::into),
        at: codec::ts(at, "transcript at")?,
        message: codec::from_json(&message, "transcript message")?,
    })
}

/// A `prompt_overrides` row as an override.
pub(crate) fn prompt_override(row: PromptRow) -> Result<PromptOverride, StoreError> {
    let (name, scope_tenant, scope_session, scope_labels, template, updated_at) = row;
    Ok(PromptOverride {
        name,
        scope: PromptScope {
            tenant: (!scope_tenant.is_empty()).then_some(scope_tenant),
            session_id: (!scope_session.is_empty()).then(|| SessionId::from(scope_session)),
            labels: codec::from_json(&scope_labels, "prompt scope labels")?,
        },
        template,
        updated_at: codec::ts(updated_at, "updated_at")?,
    })
}

/// The scope columns of an override (tenant, session, labels): ''
/// stands for every tenant and every session.
pub(crate) fn scope_columns(scope: &PromptScope) -> Result<(String, String, String), StoreError> {
    let tenant = scope.tenant.clone().unwrap_or_default();
    let session = scope
        .session_id
        .as_ref()
        .map_or("", SessionId::as_str)
        .to_owned();
    Ok((tenant, session, codec::labels_json(&scope.labels)?))
}

/// Where appending to a log broke the no-gap rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gap {
    /// The last sequence number stored (or accepted so far).
    pub(crate) last: u64,
    /// The sequence number given.
    pub(crate) seq: u64,
}

/// The items of `items` to store after a log whose last sequence number is
/// `last`, and the new last one. Already-stored items are skipped (a retried
/// append is a no-op); an item that is not the next one is a [`Gap`], and then
/// nothing is stored.
pub(crate) fn fresh<T>(
    items: &[T],
    seq_of: impl Fn(&T) -> u64,
    mut last: u64,
) -> Result<(Vec<&T>, u64), Gap> {
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let seq = seq_of(item);
        if seq <= last {
            continue;
        }
        if seq != last + 1 {
            return Err(Gap { last, seq });
        }
        last = seq;
        out.push(item);
    }
    Ok((out, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_skips_stored_and_rejects_gaps() {
        let id = |x: &u64| *x;
        assert_eq!(fresh(&[1, 2, 3], id, 0), Ok((vec![&1, &2, &3], 3)));
        assert_eq!(fresh(&[2, 3, 4], id, 3), Ok((vec![&4], 4)));
        assert_eq!(fresh(&[1, 2], id, 5), Ok((vec![], 5)));
        assert_eq!(fresh(&[4, 6], id, 3), Err(Gap { last: 4, seq: 6 }));
        assert_eq!(fresh(&[2], id, 0), Err(Gap { last: 0, seq: 2 }));
    }
}
