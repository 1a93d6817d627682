//! The crate's error type: what went wrong talking to Redis or a gateway,
//! or in what a peer sent.

use crate::pulse::ReplyError;

/// Why a registry operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Redis refused a command or the connection failed.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// Redis answered something this crate cannot read.
    #[error(transparent)]
    Reply(#[from] ReplyError),
    /// The gateway could not be reached or answered an error.
    #[error("gateway {url}: {message}")]
    Gateway {
        /// The request's URL.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// A batch this operation shared with others failed (the batch's error).
    #[error("batched operation failed: {0}")]
    Batch(String),
    /// A configuration value is unusable.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The toolset is not registered.
    #[error("toolset `{0}` is not registered")]
    UnknownToolset(String),
    /// A tool's JSON Schema does not compile.
    #[error("tool `{tool}` has an invalid schema: {message}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// The compiler's message.
        message: String,
    },
}

/// Whether a Redis error says a consumer group (or its stream) is missing.
pub fn is_nogroup(err: &redis::RedisError) -> bool {
    err.code() == Some("NOGROUP") || err.to_string().contains("NOGROUP")
}

/// Whether a Redis error says a consumer group already exists.
pub fn is_busygroup(err: &redis::RedisError) -> bool {
    err.code() == Some("BUSYGROUP") || err.to_string().contains("BUSYGROUP")
}
