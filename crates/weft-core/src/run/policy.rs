//! Run policy: the caps and budgets the machine enforces on every step.

use std::collections::BTreeSet;
use std::num::NonZeroU32;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::tool::ToolIdent;

/// Limits a run must stay within; see [`super::RunMachine`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
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
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            max_tool_calls: None,
            max_tool_calls_per_turn: None,
            max_consecutive_failures: None,
            time_budget: None,
            finalizer_grace: default_grace(),
            max_invalid_call_retries: default_retries(),
            allowed_tools: None,
            confirm_tools: BTreeSet::new(),
        }
    }
}

fn default_grace() -> Duration {
    Duration::from_secs(30)
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
