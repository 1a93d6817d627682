//! Why an agent file could not be used: [`AgentFileError`].

use super::price::PriceError;

/// Why an agent file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum AgentFileError {
    /// The file could not be read.
    #[error("cannot read agent file {path}: {source}")]
    Read {
        /// The path.
        path: String,
        /// The IO error.
        source: std::io::Error,
    },
    /// The file is not valid TOML or does not match the agent schema.
    #[error("agent file {path} is invalid: {message}")]
    Parse {
        /// The path.
        path: String,
        /// The parser's message, with line and column.
        message: String,
    },
    /// The planner's `[planner.price]` table gives a wrong price.
    #[error("agent file {path}: [planner.price] {error}")]
    Price {
        /// The path.
        path: String,
        /// What is wrong with the price.
        #[source]
        error: PriceError,
    },
    /// The file parses but says something impossible.
    #[error("agent file {path}: {message}")]
    Invalid {
        /// The path.
        path: String,
        /// What is wrong.
        message: String,
    },
}
