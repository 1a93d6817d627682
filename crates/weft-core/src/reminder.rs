//! Reminders: standing instructions a planner adds to a run, delivered to
//! the model as system context while they are active. What a run does with
//! them (its cap, tiers, spacing) is in `run::ReminderSet`.

use serde::{Deserialize, Serialize};

/// A standing instruction added to the system prompt while it is active:
/// system context for the model, never a user message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reminder {
    /// Identifies the reminder for replacement and removal.
    pub id: String,
    /// The text.
    pub text: String,
    /// How much it matters; a run over its reminder cap drops guidance
    /// before safety, and never a safety reminder for a guidance one.
    #[serde(default)]
    pub tier: ReminderTier,
    /// Turns that must pass between two deliveries of the reminder (0:
    /// every turn).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub min_turns_between: u32,
}

impl Reminder {
    /// A guidance reminder shown every turn.
    pub fn new(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            text: text.into(),
            tier: ReminderTier::Guidance,
            min_turns_between: 0,
        }
    }

    /// A safety reminder shown every turn.
    pub fn safety(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            tier: ReminderTier::Safety,
            ..Self::new(id, text)
        }
    }

    /// The same reminder, shown at most once every `turns + 1` turns.
    pub fn every(mut self, turns: u32) -> Self {
        self.min_turns_between = turns;
        self
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// How much a reminder matters.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ReminderTier {
    /// Advice the run may lose when it has too many reminders.
    #[default]
    Guidance,
    /// A rule the run keeps before any guidance.
    Safety,
}
