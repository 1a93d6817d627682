//! The request rules providers enforce, applied where requests are built,
//! so that no request weft sends breaks one.
//!
//! Every provider's builder first runs [`conform`], the rules all of them
//! share:
//!
//! - **Each tool call is answered, right after it.** Every `tool_use` of an
//!   assistant message gets a `tool_result` in the messages that follow it,
//!   before the next assistant or system message (Anthropic: "each
//!   `tool_use` block must have a corresponding `tool_result` block in the
//!   next message"; OpenAI Chat: "an assistant message with `tool_calls`
//!   must be followed by tool messages responding to each `tool_call_id`";
//!   Responses: "No tool output found for function call"). A call with no
//!   recorded result is answered with an error result saying so.
//! - **A result answers a call of the message before it.** A `tool_result`
//!   whose call is not among the previous assistant message's is kept as
//!   text (Anthropic: "unexpected `tool_use_id` found in `tool_result`
//!   blocks"; Chat: "messages with role 'tool' must be a response to a
//!   preceding message with 'tool_calls'").
//! - **No empty text** (Anthropic: "text content blocks must be non-empty"),
//!   and no message left empty.
//! - **A forced tool is an offered one**: `tool_choice` naming a tool the
//!   request does not define becomes `auto`. (Builders send `tool_choice`
//!   only with tools.)
//!
//! Rules of one provider live with its builder, which asks for them here:
//! [`declare_used_tools`] (Anthropic and Bedrock refuse tool blocks in a
//! request that defines no tools) and [`thinking_allowed`] (Anthropic's
//! rules for extended thinking next to tool calls).

use std::borrow::Cow;
use std::collections::HashSet;

use serde_json::json;
use weft_core::ToolCallId;
use weft_core::message::{Message, Part, Role, Thinking};
use weft_core::model::{ModelRequest, ToolChoice};
use weft_core::tool::ToolSpec;

/// The text of the error result that answers a call with no recorded result.
pub const NO_RESULT: &str = "no result was recorded for this call";

/// The description of a tool declared only because the transcript calls it.
pub const USED_TOOL: &str = "A tool called earlier in this conversation; it cannot be called now.";

/// `req` with the shared rules applied (see the module docs); borrowed when
/// it already keeps them, as a request built by weft's planners does.
pub fn conform(req: &ModelRequest) -> Cow<'_, ModelRequest> {
    let forced_unknown = matches!(&req.tool_choice, ToolChoice::Tool(name)
        if !req.tools.is_empty() && !req.tools.iter().any(|t| t.name.as_str() == name.as_str()));
    let messages = conform_messages(&req.messages);
    if messages.is_none() && !forced_unknown {
        return Cow::Borrowed(req);
    }
    let mut owned = req.clone();
    if let Some(messages) = messages {
        owned.messages = messages;
    }
    if forced_unknown {
        owned.tool_choice = ToolChoice::Auto;
    }
    Cow::Owned(owned)
}

/// The messages with the shared rules applied, or `None` when they keep
/// them already.
fn conform_messages(input: &[Message]) -> Option<Vec<Message>> {
    if keeps_rules(input) {
        return None;
    }
    let mut out: Vec<Message> = Vec::with_capacity(input.len() + 1);
    // Calls of the last assistant message not answered yet, in order.
    let mut open: Vec<ToolCallId> = Vec::new();
    for m in input {
        match m.role {
            Role::Assistant | Role::System => {
                answer_missing(&mut open, &mut out);
                let parts: Vec<Part> = m
                    .parts
                    .iter()
                    .filter(|p| !is_empty_text(p))
                    .cloned()
                    .collect();
                if m.role == Role::Assistant {
                    open = parts
                        .iter()
                        .filter_map(|p| match p {
                            Part::ToolUse { id, .. } => Some(id.clone()),
                            _ => None,
                        })
                        .collect();
                }
                push(&mut out, m.role, parts);
            }
            Role::User | Role::Tool => {
                let mut results = Vec::new();
                let mut rest = Vec::new();
                for p in &m.parts {
                    match p {
                        Part::ToolResult { tool_use_id, .. } => {
                            if let Some(i) = open.iter().position(|id| id == tool_use_id) {
                                open.remove(i);
                                results.push(p.clone());
                            } else {
                                rest.push(orphan_as_text(p));
                            }
                        }
                        p if is_empty_text(p) => {}
                        p => rest.push(p.clone()),
                    }
                }
                // The calls this message leaves unanswered are answered
                // before anything else it says.
                if !rest.is_empty() {
                    results.extend(open.drain(..).map(missing_result));
                }
                results.extend(rest);
                push(&mut out, m.role, results);
            }
        }
    }
    answer_missing(&mut open, &mut out);
    Some(out)
}

/// Whether `messages` keep the shared rules already: the common case,
/// checked without copying anything.
fn keeps_rules(messages: &[Message]) -> bool {
    let mut open: Vec<&ToolCallId> = Vec::new();
    for m in messages {
        if m.parts.is_empty() || m.parts.iter().any(is_empty_text) {
            return false;
        }
        match m.role {
            Role::Assistant | Role::System => {
                if !open.is_empty() {
                    return false;
                }
                if m.role == Role::Assistant {
                    open.extend(m.parts.iter().filter_map(|p| match p {
                        Part::ToolUse { id, .. } => Some(id),
                        _ => None,
                    }));
                }
            }
            Role::User | Role::Tool => {
                let mut other = false;
                for p in &m.parts {
                    match p {
                        Part::ToolResult { tool_use_id, .. } => {
                            if other {
                                return false;
                            }
                            match open.iter().position(|id| *id == tool_use_id) {
                                Some(i) => {
                                    open.remove(i);
                                }
                                None => return false,
                            }
                        }
                        _ => {
                            if !open.is_empty() {
                                return false;
                            }
                            other = true;
                        }
                    }
                }
            }
        }
    }
    open.is_empty()
}

fn is_empty_text(p: &Part) -> bool {
    matches!(p, Part::Text { text } if text.is_empty())
}

fn push(out: &mut Vec<Message>, role: Role, parts: Vec<Part>) {
    if !parts.is_empty() {
        out.push(Message { role, parts });
    }
}

/// Answers every call left in `open` with an error result, as a tool message.
fn answer_missing(open: &mut Vec<ToolCallId>, out: &mut Vec<Message>) {
    if open.is_empty() {
        return;
    }
    let parts = open.drain(..).map(missing_result).collect();
    out.push(Message {
        role: Role::Tool,
        parts,
    });
}

fn missing_result(id: ToolCallId) -> Part {
    Part::ToolResult {
        tool_use_id: id,
        content: vec![Part::Text {
            text: NO_RESULT.to_owned(),
        }],
        is_error: true,
    }
}

/// A result whose call is not the previous message's, as text.
fn orphan_as_text(p: &Part) -> Part {
    let Part::ToolResult {
        tool_use_id,
        content,
        is_error,
    } = p
    else {
        return p.clone();
    };
    let body = Message {
        role: Role::Tool,
        parts: content.clone(),
    }
    .joined_text();
    let kind = if *is_error { "error" } else { "result" };
    Part::Text {
        text: format!("[{kind} of the earlier tool call {tool_use_id}]: {body}"),
    }
}

/// The tools `req` must define for its transcript: its own, or, when it
/// defines none but its messages call tools, a declaration of each tool
/// they call (an open object schema, [`USED_TOOL`] as description) with
/// `tool_choice: none`. For providers that refuse tool blocks without tool
/// definitions (Anthropic, Bedrock Converse).
pub fn declare_used_tools(req: &ModelRequest) -> Option<(Vec<ToolSpec>, ToolChoice)> {
    if !req.tools.is_empty() {
        return None;
    }
    let mut seen = HashSet::new();
    let tools: Vec<ToolSpec> = req
        .messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match p {
            Part::ToolUse { name, .. } if seen.insert(name.as_str()) => Some(ToolSpec {
                name: name.as_str().into(),
                description: USED_TOOL.to_owned(),
                input_schema: json!({"type": "object"}),
                output_schema: None,
                annotations: Default::default(),
                tags: Vec::new(),
            }),
            _ => None,
        })
        .collect();
    (!tools.is_empty()).then_some((tools, ToolChoice::None))
}

/// Whether Anthropic accepts extended thinking on `req`: not when the
/// request forces a tool ("thinking may not be enabled when `tool_choice`
/// forces tool use"), and not when the last assistant message calls tools
/// without starting with a signed or redacted thinking block (a transcript
/// from another provider, or thinking cut off by an error: "a final
/// `assistant` message must start with a thinking block"). Such a request
/// goes without thinking rather than failing.
pub fn thinking_allowed(req: &ModelRequest) -> bool {
    if matches!(req.tool_choice, ToolChoice::Required | ToolChoice::Tool(_))
        && !req.tools.is_empty()
    {
        return false;
    }
    let Some(last) = req
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
    else {
        return true;
    };
    if !last.parts.iter().any(|p| matches!(p, Part::ToolUse { .. })) {
        return true;
    }
    // The first block the builder will send: unsigned thinking is dropped.
    let first = last.parts.iter().find(|p| match p {
        Part::Thinking(Thinking::Text { signature, .. }) => signature.is_some(),
        Part::Thinking(Thinking::Redacted { data }) => {
            !crate::gemini::signature::is_signature(data)
        }
        Part::Thinking(_) | Part::Audio(_) => false,
        p => !is_empty_text(p),
    });
    matches!(
        first,
        Some(Part::Thinking(
            Thinking::Text { .. } | Thinking::Redacted { .. }
        ))
    )
}

#[cfg(test)]
mod tests;
