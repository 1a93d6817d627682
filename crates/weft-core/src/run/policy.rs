//! Run policy: the caps and budgets the machine enforces on every step.

use std::collections::BTreeSet;
use std::num::NonZeroU32;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::tool::{ToolIdent, ToolSpec};

/// Limits a run must stay within; see [`super::RunMachine`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Most planner turns that end in tool calls or awaits; past it the run
    /// is made to finalize.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<NonZeroU32>,
    /// Most tool calls the whole run may execute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<NonZeroU32>,
    /// Most tool calls one turn may execute; extra calls get a not-executed result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls_per_turn: Option<NonZeroU32>,
    /// Most tool failures in a row before the run is made to finalize.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_consecutive_failures: Option<NonZeroU32>,
    /// Active time (awaits excluded) the run may use before it is made to finalize.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_millis")]
    pub time_budget: Option<Duration>,
    /// Time the finalizing planner call gets after the budget ran out.
    #[serde(default = "default_grace", with = "millis")]
    pub finalizer_grace: Duration,
    /// How many times in a row a turn with an invalid tool call may be retried.
    #[serde(default = "default_retries")]
    pub max_invalid_call_retries: u32,
    /// Tools the run may call; all known tools when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<BTreeSet<ToolIdent>>,
    /// Tools whose calls wait for a human's approval before they execute.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub confirm_tools: BTreeSet<ToolIdent>,
    /// Tools the run may never call, whatever else allows them.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub denied_tools: BTreeSet<ToolIdent>,
    /// Only tools carrying one of these tags may be called (all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_tags: Option<BTreeSet<String>>,
    /// Tools carrying any of these tags may never be called.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub denied_tags: BTreeSet<String>,
    /// Calls of tools carrying any of these tags wait for a human's approval.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub confirm_tags: BTreeSet<String>,
    /// Calls of tools annotated destructive wait for a human's approval.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub confirm_destructive: bool,
    /// Tools that must be called alone: a turn that calls one of them
    /// beside other tools runs none of its calls, and each gets a
    /// not-executed result saying why (the advisor is one).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub exclusive_tools: BTreeSet<ToolIdent>,
    /// Most reminders active at once (see `ReminderSet`).
    #[serde(default = "default_max_reminders")]
    pub max_reminders: NonZeroU32,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            max_turns: None,
            max_tool_calls: None,
            max_tool_calls_per_turn: None,
            max_consecutive_failures: None,
            time_budget: None,
            finalizer_grace: default_grace(),
            max_invalid_call_retries: default_retries(),
            allowed_tools: None,
            confirm_tools: BTreeSet::new(),
            denied_tools: BTreeSet::new(),
            allowed_tags: None,
            denied_tags: BTreeSet::new(),
            confirm_tags: BTreeSet::new(),
            confirm_destructive: false,
            exclusive_tools: BTreeSet::new(),
            max_reminders: default_max_reminders(),
        }
    }
}

impl Policy {
    /// Whether the tool policy lets a run call `spec`: its name is allowed
    /// (or no list is given) and not denied, one of its tags is allowed (or
    /// no tag list is given), and none of its tags is denied. A denial
    /// always wins.
    pub fn permits(&self, spec: &ToolSpec) -> bool {
        let tagged = |tags: &BTreeSet<String>| spec.tags.iter().any(|t| tags.contains(t));
        self.allowed_tools
            .as_ref()
            .is_none_or(|a| a.contains(&spec.name))
            && !self.denied_tools.contains(&spec.name)
            && self.allowed_tags.as_ref().is_none_or(tagged)
            && !tagged(&self.denied_tags)
    }

    /// Whether a call of `spec` waits for a human's approval: it is named
    /// in `confirm_tools`, carries a tag of `confirm_tags`, or is annotated
    /// destructive while `confirm_destructive` is set.
    pub fn needs_confirmation(&self, spec: &ToolSpec) -> bool {
        self.confirm_tools.contains(&spec.name)
            || spec.tags.iter().any(|t| self.confirm_tags.contains(t))
            || (self.confirm_destructive && spec.annotations.destructive)
    }
}

/// The default caps of [`Policy::bounded`]: generous for real agents, but a
/// run that loops is stopped.
pub mod default_caps {
    use std::num::NonZeroU32;
    use std::time::Duration;

    /// Planner turns per run.
    pub const MAX_TURNS: NonZeroU32 = NonZeroU32::new(100).unwrap();
    /// Tool calls per run.
    pub const MAX_TOOL_CALLS: NonZeroU32 = NonZeroU32::new(500).unwrap();
    /// Tool failures in a row.
    pub const MAX_CONSECUTIVE_FAILURES: NonZeroU32 = NonZeroU32::new(10).unwrap();
    /// Reminders active at once.
    pub const MAX_REMINDERS: NonZeroU32 = NonZeroU32::new(8).unwrap();
    /// Active time per run (time waiting on humans excluded).
    pub const TIME_BUDGET: Duration = Duration::from_secs(30 * 60);
}

impl Policy {
    /// A policy with every cap at its default (see [`default_caps`]): what
    /// an agent gets unless it sets its own caps. [`Policy::default`] has no
    /// caps at all.
    pub fn bounded() -> Self {
        Self::default().with_default_caps()
    }

    /// This policy with every cap it leaves unset at its default: caps can
    /// be raised or lowered, not removed.
    pub fn with_default_caps(mut self) -> Self {
        self.max_turns.get_or_insert(default_caps::MAX_TURNS);
        self.max_tool_calls
            .get_or_insert(default_caps::MAX_TOOL_CALLS);
        self.max_consecutive_failures
            .get_or_insert(default_caps::MAX_CONSECUTIVE_FAILURES);
        self.time_budget.get_or_insert(default_caps::TIME_BUDGET);
        self
    }
}

fn default_grace() -> Duration {
    Duration::from_secs(30)
}

fn default_max_reminders() -> NonZeroU32 {
    default_caps::MAX_REMINDERS
}

fn default_retries() -> u32 {
    2
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

mod opt_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::millis::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<u64>::deserialize(d).map(|o| o.map(Duration::from_millis))
    }
}
