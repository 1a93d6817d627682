//! The advisor's view of the conversation: the most recent messages, walked
//! back from the end at most [`MAX_MESSAGES`] messages and [`MAX_BYTES`] JSON
//! bytes, contiguous, with tool results whose call fell outside the window
//! (and calls whose result is not in it) dropped. A pure function.

use std::collections::HashSet;

use weft_core::ToolCallId;
use weft_core::message::{Message, Part, Role};

/// The most messages the advisor sees.
pub const MAX_MESSAGES: usize = 20;
/// The most JSON bytes of messages the advisor sees.
pub const MAX_BYTES: usize = 12_000;

/// The recent conversation of `messages` (system messages left out), walked
/// back under the limits; see the module docs.
pub fn recent(messages: &[&Message]) -> Vec<Message> {
    let mut taken: Vec<&Message> = Vec::new();
    let mut bytes = 0usize;
    for m in messages.iter().rev().filter(|m| m.role != Role::System) {
        let size = serde_json::to_vec(m).map_or(usize::MAX, |v| v.len());
        if taken.len() == MAX_MESSAGES || bytes.saturating_add(size) > MAX_BYTES {
            break;
        }
        bytes += size;
        taken.push(m);
    }
    taken.reverse();
    let calls: HashSet<&ToolCallId> = taken
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match p {
            Part::ToolUse { id, .. } => Some(id),
            _ => None,
        })
        .collect();
    let results: HashSet<&ToolCallId> = taken
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match p {
            Part::ToolResult { tool_use_id, .. } => Some(tool_use_id),
            _ => None,
        })
        .collect();
    taken
        .into_iter()
        .filter_map(|m| {
            let parts: Vec<Part> = m
                .parts
                .iter()
                .filter(|p| match p {
                    Part::ToolResult { tool_use_id, .. } => calls.contains(tool_use_id),
                    Part::ToolUse { id, .. } => results.contains(id),
                    _ => true,
                })
                .cloned()
                .collect();
            (!parts.is_empty()).then_some(Message {
                role: m.role,
                parts,
            })
        })
        .collect()
}
