//! Sessions as a listing reads them: a listed row that may not decode
//! ([`ListedSession`]), so that one corrupt row spoils only itself, and
//! what is read of a session without decoding its row ([`SessionHead`]),
//! for a session whose stored row is corrupt.

use super::SessionRecord;
use crate::ids::SessionId;
use crate::store::ListCursor;
use crate::time::Timestamp;

/// One row of a session listing: a session, or a row that does not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListedSession {
    /// A session whose record decodes.
    Session(SessionRecord),
    /// A row that does not decode: what is known of it, so that a listing
    /// can mark it and page on past it.
    Corrupt {
        /// The session.
        session_id: SessionId,
        /// Its creation time, as stored (0 when negative).
        created_at: Timestamp,
        /// Why it does not decode.
        error: String,
    },
}

impl ListedSession {
    /// The session's id.
    pub fn session_id(&self) -> &SessionId {
        match self {
            ListedSession::Session(s) => &s.session_id,
            ListedSession::Corrupt { session_id, .. } => session_id,
        }
    }

    /// The cursor after this row in a newest-first listing.
    pub fn cursor(&self) -> ListCursor {
        let created_at = match self {
            ListedSession::Session(s) => s.created_at,
            ListedSession::Corrupt { created_at, .. } => *created_at,
        };
        ListCursor {
            created_at,
            id: self.session_id().to_string(),
        }
    }
}

/// What is read of a stored session without decoding its row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionHead {
    /// The value of the label asked for, when the labels are a JSON object
    /// holding it as a string.
    pub label: Option<String>,
}
