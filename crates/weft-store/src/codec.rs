//! How values are written to and read from columns: integers, labels, JSON
//! bodies and machine snapshots (see [`crate::parts`] for snapshots stored
//! in parts). Both backends store JSON as text.

use serde::Serialize;
use serde::de::DeserializeOwned;
use weft_core::RunId;
use weft_core::Timestamp;
use weft_core::run::{FORMAT_VERSION, RunMachine};
use weft_core::store::{RunStatus, StoreError};
use weft_core::tool::Labels;

use crate::error::corrupt;

/// A timestamp or sequence number as a column value.
pub(crate) fn int(value: u64, what: &str) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::Backend {
        message: format!("{what} {value} does not fit in a 64-bit signed column"),
    })
}

/// A column value as a timestamp or sequence number.
pub(crate) fn uint(value: i64, what: &str) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| corrupt(format!("{what} is negative ({value})")))
}

/// A column value as a timestamp.
pub(crate) fn ts(value: i64, what: &str) -> Result<Timestamp, StoreError> {
    uint(value, what).map(Timestamp::from_millis)
}

/// A value as JSON text.
pub(crate) fn to_json<T: Serialize + ?Sized>(value: &T, what: &str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend {
        message: format!("cannot encode {what}: {e}"),
    })
}

/// JSON text as a value.
pub(crate) fn from_json<T: DeserializeOwned>(text: &str, what: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| corrupt(format!("{what} cannot be read: {e}")))
}

/// Labels as canonical JSON text (a `BTreeMap` serializes in key order).
pub(crate) fn labels_json(labels: &Labels) -> Result<String, StoreError> {
    to_json(labels, "labels")
}

/// A stored status word.
pub(crate) fn status(text: &str) -> Result<RunStatus, StoreError> {
    text.parse()
}

/// A stored snapshot as a machine, checked (`RunMachine::validate`) before
/// anyone drives it. A snapshot written in another format version gets an
/// error that says so, rather than serde's field complaint.
pub(crate) fn snapshot(run_id: &RunId, text: &str) -> Result<RunMachine, StoreError> {
    let machine: RunMachine = parse_snapshot(run_id, text)?;
    machine
        .validate()
        .map_err(|e| corrupt(format!("snapshot of run `{run_id}`: {e}")))?;
    Ok(machine)
}

/// A stored snapshot (a whole machine or its head) as a value, unchecked;
/// one in another format version gets an error naming both versions.
pub(crate) fn parse_snapshot<T: DeserializeOwned>(
    run_id: &RunId,
    text: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| {
        let version = serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|v| v.get("format").and_then(serde_json::Value::as_u64));
        match version {
            Some(v) if v != u64::from(FORMAT_VERSION) => corrupt(format!(
                "snapshot of run `{run_id}` has format version {v}, but this build of weft reads \
                 only version {FORMAT_VERSION}; it was written by a different weft version"
            )),
            _ => corrupt(format!("snapshot of run `{run_id}` cannot be read: {e}")),
        }
    })
}
