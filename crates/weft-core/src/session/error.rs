//! Why a session operation failed ([`SessionError`]).

use crate::ids::SessionId;
use crate::store::StoreError;

/// Why a session operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// The session does not exist.
    #[error("session `{session_id}` not found")]
    NotFound {
        /// The session.
        session_id: SessionId,
    },
    /// The session already exists.
    #[error("session `{session_id}` already exists")]
    Exists {
        /// The session.
        session_id: SessionId,
    },
    /// The session has ended and accepts no new runs.
    #[error("session `{session_id}` has ended and accepts no new runs")]
    Ended {
        /// The session.
        session_id: SessionId,
    },
    /// The session's memory holds [`MAX_MEMORY_KEYS`](super::MAX_MEMORY_KEYS) keys: a new one is refused.
    #[error("the memory of session `{session_id}` holds its maximum of {limit} keys")]
    MemoryFull {
        /// The session.
        session_id: SessionId,
        /// The maximum.
        limit: usize,
    },
    /// A memory value is larger than [`MAX_MEMORY_VALUE`](super::MAX_MEMORY_VALUE) bytes as JSON.
    #[error(
        "memory value `{key}` of session `{session_id}` is {bytes} bytes as JSON; at most {limit} are kept"
    )]
    MemoryValueTooLarge {
        /// The session.
        session_id: SessionId,
        /// The key.
        key: String,
        /// Its size.
        bytes: usize,
        /// The maximum.
        limit: usize,
    },
    /// A transcript entry's sequence number leaves a gap.
    #[error("transcript entry {seq} of session `{session_id}` would leave a gap after {last}")]
    TranscriptGap {
        /// The session.
        session_id: SessionId,
        /// The last stored sequence number.
        last: u64,
        /// The sequence number given.
        seq: u64,
    },
    /// The session's stored row does not decode.
    #[error("session `{session_id}` cannot be read: its stored data is corrupt: {message}")]
    Corrupt {
        /// The session.
        session_id: SessionId,
        /// What was wrong.
        message: String,
    },
    /// The underlying store failed (including run errors from `start_run`).
    #[error(transparent)]
    Store(#[from] StoreError),
}
