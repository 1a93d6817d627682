//! Runs as a listing reads them: the cursor of a newest-first page, a
//! listed row that may not decode ([`ListedRun`]), and what is read of a
//! run without decoding its labels or snapshot ([`RunHead`]), for a run
//! whose stored row is corrupt; and the reason such a run is failed with
//! when it is quarantined ([`CORRUPT_STATE`]).

use serde::{Deserialize, Serialize};

use super::{RunRecord, RunStatus};
use crate::ids::RunId;
use crate::time::Timestamp;

/// The failure reason of a run quarantined because its stored state
/// cannot be read: it is failed with it, never driven again.
pub const CORRUPT_STATE: &str = "corrupt_state";

/// A position in a newest-first listing: the last entry of a page. The next
/// page holds the entries strictly older (by creation time, then id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListCursor {
    /// The entry's creation time.
    pub created_at: Timestamp,
    /// The entry's id.
    pub id: String,
}

impl ListCursor {
    /// The cursor as one opaque token: `<millis>.<id>`.
    pub fn encode(&self) -> String {
        format!("{}.{}", self.created_at.as_millis(), self.id)
    }

    /// A token made by [`encode`](Self::encode); `None` when malformed.
    pub fn decode(token: &str) -> Option<Self> {
        let (millis, id) = token.split_once('.')?;
        let millis = millis.parse().ok()?;
        (!id.is_empty()).then(|| Self {
            created_at: Timestamp::from_millis(millis),
            id: id.to_owned(),
        })
    }

    /// Whether an entry created at `created_at` with `id` comes after the
    /// cursor in a newest-first listing.
    pub fn is_before(&self, created_at: Timestamp, id: &str) -> bool {
        (created_at, id) < (self.created_at, self.id.as_str())
    }
}

/// One row of a run listing: a run, or a row that does not decode.
#[derive(Debug, Clone, PartialEq)]
pub enum ListedRun {
    /// A run whose record decodes.
    Run(RunRecord),
    /// A row that does not decode: what is known of it, so that a listing
    /// can mark it and page on past it.
    Corrupt {
        /// The run.
        run_id: RunId,
        /// Its creation time, as stored (0 when negative).
        created_at: Timestamp,
        /// Why it does not decode.
        error: String,
    },
}

impl ListedRun {
    /// The run's id.
    pub fn run_id(&self) -> &RunId {
        match self {
            ListedRun::Run(r) => &r.run_id,
            ListedRun::Corrupt { run_id, .. } => run_id,
        }
    }

    /// The cursor after this row in a newest-first listing.
    pub fn cursor(&self) -> ListCursor {
        let created_at = match self {
            ListedRun::Run(r) => r.created_at,
            ListedRun::Corrupt { created_at, .. } => *created_at,
        };
        ListCursor {
            created_at,
            id: self.run_id().to_string(),
        }
    }
}

/// What is read of a stored run without decoding its labels or snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunHead {
    /// The value of the label asked for, when the labels are a JSON object
    /// holding it as a string.
    pub label: Option<String>,
    /// Its status; `None` when the stored word is not one.
    pub status: Option<RunStatus>,
    /// Why it was quarantined (e.g. [`CORRUPT_STATE`]), when it was.
    pub quarantined: Option<String>,
}
