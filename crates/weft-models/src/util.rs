//! Small helpers shared by the provider modules: shortening lines for error
//! messages, parsing JSON into typed errors, and assembling summaries.

use serde::Deserialize;
use weft_core::model::{ModelError, ModelSummary, StreamAssembler, StreamChunk};
use weft_core::planner::NoopEvents;

/// Longest line quoted in an error message, in characters.
const MAX_QUOTED: usize = 200;

/// `line`, cut to a length fit for an error message.
pub(crate) fn shorten(line: &str) -> String {
    match line.char_indices().nth(MAX_QUOTED) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

/// Parses one event's data, naming the offending line on failure.
pub(crate) fn parse_data<'a, T: Deserialize<'a>>(data: &'a str) -> Result<T, ModelError> {
    serde_json::from_str(data).map_err(|e| ModelError::Malformed {
        line: shorten(data),
        message: e.to_string(),
    })
}

/// Folds a complete chunk list into a summary, without events.
pub(crate) fn assemble(chunks: Vec<StreamChunk>) -> Result<ModelSummary, ModelError> {
    let mut asm = StreamAssembler::new();
    for chunk in chunks {
        asm.push(chunk, &NoopEvents)
            .map_err(|e| ModelError::Malformed {
                line: String::new(),
                message: e.to_string(),
            })?;
    }
    Ok(asm.finish(&NoopEvents))
}
