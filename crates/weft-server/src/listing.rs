//! A tenant's runs and sessions as the store lists them: the list
//! endpoints and the start quotas read through here and nowhere
//! else. The caller's tenant label goes into the store's filter, so the
//! query itself keeps only the caller's rows (no other tenant's row is
//! read), and a page holds at most [`MAX_PAGE`] entries ([`DEFAULT_PAGE`]
//! unless asked) and at most [`PAGE_BYTES`] of them as JSON, continued
//! with the cursor of its last entry.
//!
//! A run whose stored row does not decode spoils only itself: a page lists
//! it as a [`SkippedRun`] and goes on, and the cursor continues after the
//! last row read, decoded or not; counts (quotas, children) count it. A
//! session row that does not decode is marked the same way
//! ([`SkippedSession`]).

use weft_core::session::{ListedSession, SessionFilter};
use weft_core::store::{ListCursor, ListedRun, RunFilter, RunStatus};
use weft_core::tool::Labels;
use weft_core::{RunId, Timestamp};
use weft_runtime::PARENT_RUN_LABEL;

use crate::AppState;
use crate::TenantQuotas;
use crate::auth::Tenant;
use crate::dto::{RunView, SkippedRun};
use crate::error::ApiError;
use crate::quota::{RATE_WINDOW, Stored};

/// The statuses of a run that has not finished.
pub(crate) const UNFINISHED: [RunStatus; 3] =
    [RunStatus::Running, RunStatus::Awaiting, RunStatus::Paused];

/// Entries of a page when the caller names no limit.
pub(crate) const DEFAULT_PAGE: u32 = 50;

/// The most entries one page holds, whatever the caller asks.
pub(crate) const MAX_PAGE: u32 = 500;

/// The most bytes of JSON the entries of one page of runs take: a page
/// stops before the entry that would pass it (but holds one at least).
pub(crate) const PAGE_BYTES: usize = 4 << 20;

/// Rows read from the store at a time for a page of runs, so that a page
/// that stops at [`PAGE_BYTES`] has not read much more than it holds.
const PAGE_BATCH: u32 = 100;

/// One page of runs: the runs, the rows that did not decode, and the
/// cursor to continue after it.
pub(crate) struct RunPage {
    /// The runs.
    pub(crate) runs: Vec<RunView>,
    /// The rows that did not decode.
    pub(crate) skipped: Vec<SkippedRun>,
    /// The cursor after the last row included, when more may follow.
    pub(crate) next_cursor: Option<String>,
}

/// The caller's page of runs matching `filter` (at most `size` rows, and
/// at most [`PAGE_BYTES`] of them as JSON, one at least), read in batches
/// of [`PAGE_BATCH`]; the cursor continues after the last row included,
/// decoded or not.
pub(crate) async fn run_page(
    state: &AppState,
    tenant: &Tenant,
    filter: RunFilter,
    size: u32,
) -> Result<RunPage, ApiError> {
    let mut page = RunPage {
        runs: Vec::new(),
        skipped: Vec::new(),
        next_cursor: None,
    };
    let (mut rows, mut bytes, mut before) = (0u32, 0usize, filter.before.clone());
    loop {
        let batch = PAGE_BATCH.min(size - rows);
        let listed = runs(
            state,
            tenant,
            RunFilter {
                limit: Some(batch),
                before: before.clone(),
                ..filter.clone()
            },
        )
        .await?;
        let ended = listed.len() < batch as usize;
        for row in listed {
            let cursor = row.cursor();
            let entry = entry(row);
            let len = match &entry {
                Ok(view) => serde_json::to_vec(view).map_or(0, |v| v.len()),
                Err(skip) => serde_json::to_vec(skip).map_or(0, |v| v.len()),
            };
            if rows > 0 && bytes + len > PAGE_BYTES {
                page.next_cursor = before.map(|c| c.encode());
                return Ok(page);
            }
            bytes += len + 1;
            rows += 1;
            before = Some(cursor);
            match entry {
                Ok(view) => page.runs.push(view),
                Err(skip) => page.skipped.push(skip),
            }
        }
        if ended {
            return Ok(page);
        }
        if rows >= size {
            page.next_cursor = before.map(|c| c.encode());
            return Ok(page);
        }
    }
}

/// Cuts `page` before the entry that would take it past [`PAGE_BYTES`] of
/// JSON (keeping one at least); whether it cut.
pub(crate) fn keep_within_budget<T: serde::Serialize>(page: &mut Vec<T>) -> bool {
    let mut bytes = 0usize;
    for (i, entry) in page.iter().enumerate() {
        bytes += serde_json::to_vec(entry).map_or(0, |v| v.len()) + 1;
        if i > 0 && bytes > PAGE_BYTES {
            page.truncate(i);
            return true;
        }
    }
    false
}

/// A listed row as a run's view, or the mark of a row that did not decode.
fn entry(row: ListedRun) -> Result<RunView, SkippedRun> {
    match row {
        ListedRun::Run(record) => Ok(RunView::new(record, None)),
        ListedRun::Corrupt { run_id, error, .. } => Err(SkippedRun {
            run_id: run_id.to_string(),
            corrupt: true,
            error: crate::clip::clip(&error, 2 * crate::clip::QUOTE_CHARS),
        }),
    }
}

/// The page size for a requested `limit`.
pub(crate) fn page_size(limit: Option<u32>) -> u32 {
    limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE)
}

/// A cursor given by a client; a malformed one is a 400.
pub(crate) fn cursor(token: Option<&str>) -> Result<Option<ListCursor>, ApiError> {
    token
        .map(|t| {
            ListCursor::decode(t)
                .ok_or_else(|| ApiError::field("cursor", "is not a cursor this server handed out"))
        })
        .transpose()
}

/// The longest label key a filter may name, in bytes.
pub(crate) const MAX_FILTER_KEY: usize = 256;

/// The labels of a `label` query parameter: `key=value` pairs,
/// comma-separated; a pair without `=`, with an empty key, or with a key
/// that is no label key (longer than [`MAX_FILTER_KEY`] bytes, or holding
/// `"`, `\` or a control character) is a 400 that quotes at most a short
/// prefix of it.
pub(crate) fn labels(spec: Option<&str>) -> Result<Labels, ApiError> {
    let mut labels = Labels::new();
    for pair in spec.unwrap_or_default().split(',').map(str::trim) {
        if pair.is_empty() {
            continue;
        }
        match pair.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                let key = key.trim();
                if key.len() > MAX_FILTER_KEY
                    || key.chars().any(|c| c == '"' || c == '\\' || c.is_control())
                {
                    return Err(ApiError::field(
                        "label",
                        format!(
                            "`{}` is not a label key: at most {MAX_FILTER_KEY} bytes, without `\"`, `\\` or control characters",
                            prefix(key)
                        ),
                    ));
                }
                labels.insert(key.to_owned(), value.trim().to_owned());
            }
            _ => {
                return Err(ApiError::field(
                    "label",
                    format!("`{}` is not a `key=value` pair", prefix(pair)),
                ));
            }
        }
    }
    Ok(labels)
}

/// At most the first 64 characters of `s`, for an error message.
fn prefix(s: &str) -> String {
    match s.char_indices().nth(64) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// The cursor of the next page after `page`, when it was full.
pub(crate) fn next_cursor<T>(
    page: &[T],
    size: u32,
    key: impl Fn(&T) -> ListCursor,
) -> Option<String> {
    (page.len() >= size as usize)
        .then(|| page.last().map(|last| key(last).encode()))
        .flatten()
}

/// The caller's runs matching `filter`, newest first, as listed rows.
pub(crate) async fn runs(
    state: &AppState,
    tenant: &Tenant,
    filter: RunFilter,
) -> Result<Vec<ListedRun>, ApiError> {
    let filter = RunFilter {
        labels: tenant.label(filter.labels),
        ..filter
    };
    Ok(state.runtime.store().list_run_rows(&filter).await?)
}

/// How many child runs the caller's run `run_id` started (agents it called
/// as tools): the runs labelled with it as their parent.
pub(crate) async fn child_count(
    state: &AppState,
    tenant: &Tenant,
    run_id: &RunId,
) -> Result<u64, ApiError> {
    let mut labels = Labels::new();
    labels.insert(PARENT_RUN_LABEL.to_owned(), run_id.to_string());
    let filter = RunFilter {
        labels,
        ..RunFilter::default()
    };
    let children = runs(state, tenant, filter).await?.len();
    Ok(u64::try_from(children).unwrap_or(u64::MAX))
}

/// How many of the caller's runs are unfinished. When they fill the cap
/// (`cap`), those no sweep claims (awaiting, paused, and rows that do not
/// decode) are checked first, at most once per [`UNREADABLE_CHECK`](crate::quota::UNREADABLE_CHECK) per
/// tenant: one whose state cannot be read is quarantined (failed with
/// reason `corrupt_state`) and leaves the count, so a corrupt run nobody
/// controls does not hold its place for good.
pub(crate) async fn unfinished_runs(
    state: &AppState,
    tenant: &Tenant,
    cap: Option<usize>,
) -> Result<usize, ApiError> {
    let filter = RunFilter {
        statuses: UNFINISHED.to_vec(),
        ..RunFilter::default()
    };
    let rows = runs(state, tenant, filter).await?;
    let full = cap.is_some_and(|cap| rows.len() >= cap);
    if !full || !state.quotas.may_check_unreadable(tenant) {
        return Ok(rows.len());
    }
    let mut quarantined = 0;
    for row in &rows {
        let unclaimed = match row {
            ListedRun::Run(r) => r.status != RunStatus::Running,
            ListedRun::Corrupt { .. } => true,
        };
        if !unclaimed {
            continue;
        }
        match state.runtime.quarantine_if_unreadable(row.run_id()).await {
            Ok(true) => quarantined += 1,
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(run_id = %row.run_id(), error = %e, "checking an unfinished run failed")
            }
        }
    }
    Ok(rows.len() - quarantined)
}

/// What the store holds of the caller for the start quotas: its
/// unfinished runs, and when its runs of the last [`RATE_WINDOW`] were
/// created (at most the rate's number, newest first); what a quota that is
/// off would need is not read.
pub(crate) async fn quota_usage(
    state: &AppState,
    tenant: &Tenant,
    limits: TenantQuotas,
) -> Result<Stored, ApiError> {
    let unfinished = match limits.max_unfinished_runs {
        Some(cap) => unfinished_runs(state, tenant, usize::try_from(cap.get()).ok()).await?,
        None => 0,
    };
    let now = crate::now();
    let recent_starts = match limits.runs_per_minute {
        Some(rate) => {
            let window = u64::try_from(RATE_WINDOW.as_millis()).unwrap_or(u64::MAX);
            let filter = RunFilter {
                created_since: Some(Timestamp::from_millis(
                    now.as_millis().saturating_sub(window),
                )),
                limit: Some(rate.get()),
                ..RunFilter::default()
            };
            runs(state, tenant, filter)
                .await?
                .into_iter()
                .map(|r| r.cursor().created_at)
                .collect()
        }
        None => Vec::new(),
    };
    Ok(Stored {
        unfinished,
        recent_starts,
        now,
    })
}

/// The caller's sessions matching `filter`, newest first, as listed rows.
pub(crate) async fn sessions(
    state: &AppState,
    tenant: &Tenant,
    filter: SessionFilter,
) -> Result<Vec<ListedSession>, ApiError> {
    let filter = SessionFilter {
        labels: tenant.label(filter.labels),
        ..filter
    };
    Ok(state.sessions.list_session_rows(&filter).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_holds_the_default_unless_asked_and_never_more_than_the_maximum() {
        assert_eq!(page_size(None), DEFAULT_PAGE);
        assert_eq!(page_size(Some(7)), 7);
        assert_eq!(page_size(Some(0)), 1);
        assert_eq!(page_size(Some(MAX_PAGE + 1)), MAX_PAGE);
        assert_eq!(page_size(Some(u32::MAX)), MAX_PAGE);
    }

    #[test]
    fn label_filters_with_keys_a_query_cannot_name_are_refused() {
        assert_eq!(labels(Some("team=a, env = prod")).unwrap().len(), 2);
        for bad in ["weft.tenant\"=x", "a\\b=1", "k\u{7}=1", "=v", "novalue"] {
            assert!(labels(Some(bad)).is_err(), "{bad:?}");
        }
        let long = format!("{}=v", "k".repeat(10_000));
        let ApiError::BadRequest { detail, .. } = labels(Some(&long)).unwrap_err() else {
            panic!("a bad request");
        };
        assert!(
            detail.len() < 300,
            "the error echoes the key: {} bytes",
            detail.len()
        );
    }
}
