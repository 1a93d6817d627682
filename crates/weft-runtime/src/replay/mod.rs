//! Deterministic replay: a recorded run driven again through a fresh run
//! machine, with the agent's planner deciding and the recording answering
//! for the world, to find the first decision that differs.
//!
//! [`Recording`] reads a run's event log: its input, its decisions
//! ([`Decision`]: tool calls with arguments and results, awaits,
//! terminations, the outcome) and what the world answered (tool outputs by
//! call id, await answers, each model call's whole answer). [`replay`]
//! drives a new [`weft_core::run::RunMachine`] for the agent given: its
//! planner plans (a model planner is handed the recorded model outputs
//! through `weft_models::RecordedModel` by whoever builds the agent), no
//! tool runs (each call gets its recorded output), each await gets its
//! recorded answers, and time is the recording's (each step runs at the
//! recorded time of the last decision matched, a termination at its own,
//! so time budgets fall where they fell). Every decision the machine makes
//! is compared with the recorded one at the same position; the first that
//! differs ends the replay with a [`Difference`]. A run a human cancelled
//! is cancelled at the same point; the time a human kept a run paused is
//! taken out of the recording's clock (a pause is not replayed).
//!
//! The planner sees the run as the driver showed it: the run's labels, its
//! session history, the session memory it read (its own writes kept from
//! one planning call to the next) and the prompt overrides it rendered,
//! once the recording is restored from the store
//! ([`Recording::restore_from`]); without that, it replays with none of
//! them.
//!
//! Whatever the verdict, the report lists how the agent given differs from
//! the recorded one ([`agent_changes`]): its model, system prompt, tools and
//! settings, as the model planner recorded them in the run's state at its
//! first call ([`weft_core::model::ModelSetup`]) and as it records them
//! again replaying. Recorded answers are fed back whatever the prompt, so a
//! changed prompt can replay identical: the list says it changed.

mod decision;
mod diff;
mod engine;
mod recording;
mod setting;

#[cfg(test)]
mod setting_tests;
#[cfg(test)]
mod tests;

pub use decision::Decision;
pub use diff::{MAX_DIFF_LINES, json_diff};
pub use engine::replay;
pub use recording::{Recorded, RecordedAnswer, Recording, RecordingError};

use serde::Serialize;
use weft_core::RunId;
use weft_core::model::ModelSetup;

/// What a replay found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayReport {
    /// The run replayed.
    pub run_id: RunId,
    /// How many decisions matched before the replay ended.
    pub matched: usize,
    /// The verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// How the agent given differs from the recorded one (see
    /// [`agent_changes`]); `None` when the recording holds no agent
    /// description to compare with.
    pub agent_changes: Option<Vec<String>>,
}

/// How the agent that replayed (its model setup `now`) differs from the
/// recorded one (`recorded`): one line per difference, none when they are
/// the same or neither asked a model; `None` when the replay asked a model
/// but the recording holds no setup (it was recorded before weft kept one).
pub fn agent_changes(
    recorded: Option<&ModelSetup>,
    now: Option<&ModelSetup>,
) -> Option<Vec<String>> {
    match (recorded, now) {
        (Some(then), Some(now)) => Some(then.changes(now)),
        (None, Some(_)) => None,
        (Some(then), None) => Some(vec![format!(
            "model: `{}` recorded, the agent given asks no model",
            then.model
        )]),
        (None, None) => Some(Vec::new()),
    }
}

/// Whether the replay made the recorded decisions.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Every decision matched, through the outcome.
    Identical,
    /// Every recorded decision matched, but the recording stops before the
    /// run's end (it is still running, awaiting or paused).
    IdenticalSoFar {
        /// Where the recording stops.
        reason: String,
    },
    /// A decision differs.
    Differs {
        /// The first one.
        difference: Box<Difference>,
    },
}

impl Verdict {
    /// Whether no difference was found.
    pub fn is_identical(&self) -> bool {
        !matches!(self, Verdict::Differs { .. })
    }
}

/// The first decision that differs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// Its position among the run's decisions, from 1.
    pub index: usize,
    /// The turn it belongs to, from 1.
    pub turn: u32,
    /// What the recording decided there (`None`: the recording has no more decisions).
    pub expected: Option<Decision>,
    /// What the replay decided (`None`: the replay ended, or needs what the recording lacks).
    pub got: Option<Decision>,
    /// Why the replay could not go on, when `got` is `None` before the recording's end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Difference {
    /// The difference as readable lines: both decisions, then a JSON diff
    /// of the two (their arguments, results, items or outcomes).
    pub fn render(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "first difference at decision {} (turn {}):",
            self.index, self.turn
        )];
        let show = |d: &Option<Decision>| {
            d.as_ref()
                .map_or_else(|| "(nothing)".to_owned(), Decision::summary)
        };
        lines.push(format!("  expected: {}", show(&self.expected)));
        lines.push(format!("  got:      {}", show(&self.got)));
        if let Some(note) = &self.note {
            lines.push(format!("  ({note})"));
        }
        if let (Some(e), Some(g)) = (&self.expected, &self.got) {
            let mut expected = e.to_json();
            let mut got = g.to_json();
            for v in [&mut expected, &mut got] {
                if let Some(o) = v.as_object_mut() {
                    o.remove("tool_call_id");
                }
            }
            lines.extend(
                json_diff(&expected, &got)
                    .into_iter()
                    .map(|l| format!("    {l}")),
            );
        }
        lines
    }
}
