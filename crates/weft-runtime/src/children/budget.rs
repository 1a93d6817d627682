//! A child run's caps, clipped by what its parent has left: the child's own
//! policy (its agent's) with each cap that has a counterpart on the parent
//! lowered to the parent's remainder when that is smaller.
//!
//! - time budget: to the parent's time left;
//! - tool calls: to the tool calls the parent may still make;
//! - turns: to the planner turns the parent may still take.
//!
//! The other caps (calls per turn, failures in a row) are the child's own:
//! they bound one run's behaviour, not a budget the parent spends. A parent
//! with no tool calls or turns left gives a child that may call no tools
//! (a cap cannot be zero; an empty allow-list says the same): it can only
//! answer.
//!
//! A replay clips the child's agent policy again, to the caps the child
//! ran with ([`Remainder::recorded`]): its parent's budget then is not in
//! its log.

use std::collections::BTreeSet;
use std::num::NonZeroU32;
use std::time::Duration;

use weft_core::child::ParentLink;
use weft_core::run::Policy;

/// What a parent has left for a child, cap by cap (`None`: uncapped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Remainder {
    time: Option<Duration>,
    tool_calls: Option<u32>,
    turns: Option<u32>,
}

impl Remainder {
    /// What `parent` has left when its call starts the child.
    pub(crate) fn of(parent: &ParentLink) -> Self {
        Self {
            time: parent.time_left,
            tool_calls: parent.tool_calls_left,
            turns: parent.turns_left,
        }
    }

    /// The remainder a child run with `caps` was clipped to, as far as its
    /// caps tell (a child that could call no tools had nothing left).
    pub(crate) fn recorded(caps: &Policy) -> Self {
        let spent = caps.allowed_tools.as_ref().is_some_and(BTreeSet::is_empty);
        Self {
            time: caps.time_budget,
            tool_calls: if spent {
                Some(0)
            } else {
                caps.max_tool_calls.map(NonZeroU32::get)
            },
            turns: caps.max_turns.map(NonZeroU32::get),
        }
    }

    /// `own` (the child agent's policy) clipped to this remainder.
    pub(crate) fn clip(self, mut own: Policy) -> Policy {
        if let Some(left) = self.time {
            own.time_budget = Some(own.time_budget.map_or(left, |t| t.min(left)));
        }
        let mut spent = false;
        for (cap, left) in [
            (&mut own.max_tool_calls, self.tool_calls),
            (&mut own.max_turns, self.turns),
        ] {
            let Some(left) = left else { continue };
            match NonZeroU32::new(left) {
                Some(left) => *cap = Some(cap.map_or(left, |c| c.min(left))),
                None => spent = true,
            }
        }
        if spent {
            own.allowed_tools = Some(BTreeSet::new());
        }
        own
    }
}

/// `own` (the child agent's policy) clipped by `parent`'s remaining budget.
pub(crate) fn clip(own: Policy, parent: &ParentLink) -> Policy {
    Remainder::of(parent).clip(own)
}

#[cfg(test)]
mod tests {
    use weft_core::{RunId, ToolCallId};

    use super::*;

    fn parent(tool_calls_left: Option<u32>, turns_left: Option<u32>) -> ParentLink {
        ParentLink {
            run_id: RunId::new("p"),
            tool_call_id: ToolCallId::new("c"),
            time_left: Some(Duration::from_secs(5)),
            tool_calls_left,
            turns_left,
            linker: weft_core::child::ChildLinker::detached(),
        }
    }

    fn caps(tool_calls: Option<u32>, turns: Option<u32>) -> Policy {
        Policy {
            max_tool_calls: tool_calls.and_then(NonZeroU32::new),
            max_turns: turns.and_then(NonZeroU32::new),
            time_budget: Some(Duration::from_secs(60)),
            ..Policy::default()
        }
    }

    #[test]
    fn each_cap_is_the_smaller_of_the_child_s_own_and_the_parent_s_remainder() {
        let clipped = clip(caps(Some(10), Some(3)), &parent(Some(4), Some(7)));
        assert_eq!(clipped.max_tool_calls, NonZeroU32::new(4));
        assert_eq!(clipped.max_turns, NonZeroU32::new(3));
        assert_eq!(clipped.time_budget, Some(Duration::from_secs(5)));
        assert_eq!(clipped.allowed_tools, None);
    }

    #[test]
    fn an_uncapped_child_gets_the_parent_s_remainder_and_an_uncapped_parent_clips_nothing() {
        let clipped = clip(caps(None, None), &parent(Some(2), Some(9)));
        assert_eq!(clipped.max_tool_calls, NonZeroU32::new(2));
        assert_eq!(clipped.max_turns, NonZeroU32::new(9));
        let own = caps(Some(10), None);
        assert_eq!(
            clip(own.clone(), &parent(None, None)).max_tool_calls,
            own.max_tool_calls
        );
    }

    #[test]
    fn a_parent_with_nothing_left_gives_a_child_that_may_call_no_tools() {
        let clipped = clip(caps(Some(10), None), &parent(Some(0), None));
        assert_eq!(clipped.max_tool_calls, NonZeroU32::new(10));
        assert_eq!(clipped.allowed_tools, Some(BTreeSet::new()));
        let clipped = clip(caps(None, None), &parent(None, Some(0)));
        assert_eq!(clipped.allowed_tools, Some(BTreeSet::new()));
    }

    #[test]
    fn a_child_s_recorded_caps_clip_its_agent_s_policy_the_same_again() {
        for link in [parent(Some(4), Some(7)), parent(Some(0), None)] {
            let own = caps(Some(10), Some(3));
            let ran_with = clip(own.clone(), &link);
            assert_eq!(Remainder::recorded(&ran_with).clip(own), ran_with);
        }
    }
}
