//! The advisor's view of the conversation: the most recent messages, walked
//! back from the end at most [`MAX_MESSAGES`] messages and [`MAX_BYTES`] JSON
//! bytes, contiguous, with tool results whose call fell outside the window
//! (and calls whose result is not in it) dropped; then [`as_text`] renders
//! the tool exchanges it keeps as text. Pure functions.

use std::collections::HashSet;

use weft_core::ToolCallId;
use weft_core::message::{Message, Part, Role, joined_model_text};

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

/// `messages` with every tool exchange rendered as text, for a nested model
/// that has no tools: a call becomes the assistant's line "[called `name`
/// with {arguments}]", a result the user's line "[`name` returned: text]"
/// (or "failed"), and reasoning is left out (its signatures belong to the
/// model that wrote it). Providers refuse tool blocks in a request that
/// defines no tools (Anthropic, Bedrock), and a nested call that declared
/// the run's tools would invite the advisor to call them; as text, the
/// exchange reads the same to every provider.
pub fn as_text(messages: Vec<Message>) -> Vec<Message> {
    let mut names: Vec<(ToolCallId, String)> = Vec::new();
    messages
        .into_iter()
        .filter_map(|m| {
            let parts: Vec<Part> = m
                .parts
                .into_iter()
                .filter_map(|p| match p {
                    Part::ToolUse { id, name, input } => {
                        let text = format!("[called `{name}` with {input}]");
                        names.push((id, name));
                        Some(Part::Text { text })
                    }
                    Part::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                    } => {
                        let name = names
                            .iter()
                            .find(|(id, _)| *id == tool_use_id)
                            .map_or("a tool", |(_, n)| n.as_str());
                        let body = joined_model_text(&content);
                        let verb = if is_error { "failed" } else { "returned" };
                        Some(Part::Text {
                            text: format!("[`{name}` {verb}: {body}]"),
                        })
                    }
                    Part::Thinking(_) => None,
                    other => Some(other),
                })
                .collect();
            let role = match m.role {
                Role::Tool => Role::User,
                role => role,
            };
            (!parts.is_empty()).then_some(Message { role, parts })
        })
        .collect()
}
