//! History policies: which of a session's earlier messages a new run starts
//! from ([`HistoryPolicy`], applied by [`select_history`]), how older turns
//! are put to a model for a summary ([`summary_request`]), and which of a
//! completed run's messages join its session's transcript
//! ([`session_messages`]).
//!
//! A session's history is counted in turns: a turn begins at a user message
//! (a reply to a clarification is one too) and runs until the next one. Only the conversation joins the transcript: user messages and
//! the assistant's text. Tool calls and their results are a run's own work;
//! they stay in the run's log.

use serde::{Deserialize, Serialize};

use crate::message::{Message, Part, Role};
use crate::model::ModelRequest;

/// How many turns a run starts from by default.
pub const DEFAULT_KEEP_TURNS: u32 = 20;

/// The most turns any policy keeps, [`HistoryPolicy::KeepAll`] included.
pub const MAX_KEEP_TURNS: u32 = 200;

/// The most transcript entries read for one run's history.
pub const HISTORY_WINDOW: u32 = 2_000;

/// The most tokens a history summary may take.
pub const SUMMARY_MAX_TOKENS: u32 = 1_024;

/// Which of its session's earlier messages a run starts from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case", deny_unknown_fields)]
pub enum HistoryPolicy {
    /// Every earlier turn, up to [`MAX_KEEP_TURNS`].
    KeepAll,
    /// The last `turns` turns (none when 0).
    LastTurns {
        /// How many.
        turns: u32,
    },
    /// The last `keep_turns` turns as they are, and the turns before them
    /// compressed into one summary message made by a model.
    Summarize {
        /// How many recent turns stay verbatim.
        keep_turns: u32,
        /// The agent's model to summarize with (the planner's when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
}

impl Default for HistoryPolicy {
    /// The last [`DEFAULT_KEEP_TURNS`] turns.
    fn default() -> Self {
        Self::LastTurns {
            turns: DEFAULT_KEEP_TURNS,
        }
    }
}

impl HistoryPolicy {
    /// How many recent turns stay verbatim.
    pub fn keep_turns(&self) -> u32 {
        match self {
            Self::KeepAll => MAX_KEEP_TURNS,
            Self::LastTurns { turns } => (*turns).min(MAX_KEEP_TURNS),
            Self::Summarize { keep_turns, .. } => (*keep_turns).min(MAX_KEEP_TURNS),
        }
    }
}

/// A session's history split by a policy.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistorySelection {
    /// Older messages to compress into a summary (only under
    /// [`HistoryPolicy::Summarize`]; otherwise they are dropped).
    pub older: Vec<Message>,
    /// Messages a run starts from verbatim, oldest first.
    pub kept: Vec<Message>,
}

/// Splits `messages` (a session's transcript, oldest first) by `policy`.
pub fn select_history(policy: &HistoryPolicy, mut messages: Vec<Message>) -> HistorySelection {
    let keep = usize::try_from(policy.keep_turns()).unwrap_or(usize::MAX);
    let starts: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::User)
        .map(|(i, _)| i)
        .collect();
    let cut = if keep == 0 {
        messages.len()
    } else if starts.len() <= keep {
        // Fewer turns than the policy keeps: all of them (what precedes the
        // first user message belongs to the first turn).
        0
    } else {
        starts[starts.len() - keep]
    };
    let kept = messages.split_off(cut);
    let older = match policy {
        HistoryPolicy::Summarize { .. } => messages,
        _ => Vec::new(),
    };
    HistorySelection { older, kept }
}

/// The request that asks a model to summarize `older`.
pub fn summary_request(older: &[Message]) -> ModelRequest {
    let mut conversation = String::new();
    for m in older {
        let who = match m.role {
            Role::User => "User",
            Role::Assistant => "Assistant",
            Role::System => "System",
            Role::Tool => "Tool",
        };
        conversation.push_str(who);
        conversation.push_str(": ");
        conversation.push_str(&m.joined_text());
        conversation.push('\n');
    }
    ModelRequest {
        system: Some(
            "You compress conversations. Summarize the conversation you are given in a few \
             sentences: keep every fact, name, number, decision and open question a later \
             reply may need. Answer with the summary only."
                .to_owned(),
        ),
        messages: vec![Message::user(format!(
            "The conversation so far:\n\n{conversation}"
        ))],
        max_tokens: Some(SUMMARY_MAX_TOKENS),
        ..ModelRequest::default()
    }
}

/// The message that stands for the summarized turns at the start of a run.
pub fn summary_message(summary: &str) -> Message {
    Message::user(format!(
        "Summary of the earlier conversation in this session:\n{}",
        summary.trim()
    ))
}

/// The messages of a run that join its session's transcript: user messages
/// (without tool results) and the assistant's text (without thinking or tool
/// calls), consecutive messages of one role merged, empty ones dropped.
pub fn session_messages<'a>(run_messages: impl IntoIterator<Item = &'a Message>) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    for m in run_messages {
        let keep = |p: &Part| match (m.role, p) {
            (
                Role::User,
                Part::Text { .. } | Part::Image(_) | Part::Audio(_) | Part::Resource(_),
            ) => true,
            (Role::Assistant, Part::Text { text }) => !text.trim().is_empty(),
            _ => false,
        };
        if !matches!(m.role, Role::User | Role::Assistant) {
            continue;
        }
        let parts: Vec<Part> = m.parts.iter().filter(|p| keep(p)).cloned().collect();
        if parts.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == m.role => last.parts.extend(parts),
            _ => out.push(Message {
                role: m.role,
                parts,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests;
