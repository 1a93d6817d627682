//! A run's reminders ([`ReminderSet`]): which are active, which one a full
//! set gives up for a new one, and which are due on a turn.
//!
//! The rules:
//! - ids are unique: adding a reminder replaces the one with its id (and
//!   keeps when that one was last delivered, so re-adding it every turn
//!   does not defeat its spacing);
//! - at most the policy's `max_reminders` are active; a new reminder past
//!   the cap evicts the oldest guidance reminder, else (every active one is
//!   safety) a new safety reminder evicts the oldest safety one and a new
//!   guidance one is refused: a safety reminder is never dropped for
//!   guidance;
//! - a reminder delivered on turn `t` is due again on turn
//!   `t + min_turns_between + 1` (every turn when 0), and again on `t`
//!   itself when that turn is planned again (a retried turn);
//! - due reminders come safety first, then guidance, each in the order
//!   they were added.

use serde::{Deserialize, Serialize};

use crate::reminder::{Reminder, ReminderTier};

/// The active reminders of a run; see the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ReminderSet {
    items: Vec<ActiveReminder>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct ActiveReminder {
    #[serde(flatten)]
    reminder: Reminder,
    /// The turn it was last delivered on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shown_at: Option<u32>,
}

/// What adding a reminder did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReminderAdded {
    /// It is active, next to the others.
    Added,
    /// It replaced the reminder with its id.
    Replaced,
    /// It is active; the set was full and gave up this reminder for it.
    Evicted {
        /// The reminder given up.
        id: String,
    },
    /// The set is full of safety reminders and this one is guidance: it
    /// was not added.
    Refused,
}

impl ReminderSet {
    /// Whether no reminder is active.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// How many reminders are active.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// The active reminders, in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = &Reminder> + '_ {
        self.items.iter().map(|a| &a.reminder)
    }

    /// Adds `reminder` under a cap of `max` active reminders.
    pub fn add(&mut self, reminder: Reminder, max: usize) -> ReminderAdded {
        if let Some(slot) = self.items.iter_mut().find(|a| a.reminder.id == reminder.id) {
            slot.reminder = reminder;
            return ReminderAdded::Replaced;
        }
        let mut added = ReminderAdded::Added;
        if self.items.len() >= max.max(1) {
            let victim = self.oldest(ReminderTier::Guidance).or_else(|| {
                (reminder.tier == ReminderTier::Safety)
                    .then(|| self.oldest(ReminderTier::Safety))
                    .flatten()
            });
            match victim {
                Some(i) => {
                    let gone = self.items.remove(i);
                    added = ReminderAdded::Evicted {
                        id: gone.reminder.id,
                    };
                }
                None => return ReminderAdded::Refused,
            }
        }
        self.items.push(ActiveReminder {
            reminder,
            shown_at: None,
        });
        added
    }

    fn oldest(&self, tier: ReminderTier) -> Option<usize> {
        self.items.iter().position(|a| a.reminder.tier == tier)
    }

    /// Removes the reminder `id`; whether it was active.
    pub fn remove(&mut self, id: &str) -> bool {
        let before = self.items.len();
        self.items.retain(|a| a.reminder.id != id);
        self.items.len() != before
    }

    /// The reminders due on `turn`, safety first, marked as delivered then.
    pub fn take_due(&mut self, turn: u32) -> Vec<Reminder> {
        let mut due: Vec<Reminder> = Vec::new();
        for tier in [ReminderTier::Safety, ReminderTier::Guidance] {
            for a in self.items.iter_mut().filter(|a| a.reminder.tier == tier) {
                let is_due = match a.shown_at {
                    None => true,
                    Some(t) if t == turn => true,
                    Some(t) => turn.saturating_sub(t) > a.reminder.min_turns_between,
                };
                if is_due {
                    a.shown_at = Some(turn);
                    due.push(a.reminder.clone());
                }
            }
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn tiered(id: &str, safety: bool) -> Reminder {
        if safety {
            Reminder::safety(id, id)
        } else {
            Reminder::new(id, id)
        }
    }

    #[test]
    fn a_full_set_drops_guidance_first_and_refuses_guidance_over_safety() {
        let mut set = ReminderSet::default();
        assert_eq!(set.add(tiered("s1", true), 2), ReminderAdded::Added);
        assert_eq!(set.add(tiered("g1", false), 2), ReminderAdded::Added);
        assert_eq!(
            set.add(tiered("s2", true), 2),
            ReminderAdded::Evicted { id: "g1".into() }
        );
        assert_eq!(set.add(tiered("g2", false), 2), ReminderAdded::Refused);
        assert_eq!(
            set.add(tiered("s3", true), 2),
            ReminderAdded::Evicted { id: "s1".into() }
        );
        let ids: Vec<&str> = set.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["s2", "s3"]);
        assert_eq!(
            set.add(Reminder::safety("s2", "new"), 2),
            ReminderAdded::Replaced
        );
        assert_eq!(set.iter().next().map(|r| r.text.as_str()), Some("new"));
        assert!(set.remove("s2"));
        assert!(!set.remove("s2"));
    }

    #[test]
    fn due_reminders_come_safety_first_and_respect_their_spacing() {
        let mut set = ReminderSet::default();
        set.add(Reminder::new("g", "g").every(2), 8);
        set.add(Reminder::safety("s", "s"), 8);
        let ids = |v: Vec<Reminder>| v.into_iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(ids(set.take_due(1)), ["s", "g"]);
        // A retried turn sees the same reminders again.
        assert_eq!(ids(set.take_due(1)), ["s", "g"]);
        assert_eq!(ids(set.take_due(2)), ["s"]);
        assert_eq!(ids(set.take_due(3)), ["s"]);
        assert_eq!(ids(set.take_due(4)), ["s", "g"]);
        // Replacing keeps the spacing.
        set.add(Reminder::new("g", "again").every(2), 8);
        assert_eq!(ids(set.take_due(5)), ["s"]);
    }

    #[test]
    fn old_snapshots_without_tiers_read_back_as_guidance() {
        let set: ReminderSet =
            serde_json::from_str(r#"[{"id":"a","text":"hello"}]"#).unwrap_or_default();
        let r = set.iter().next().cloned();
        assert_eq!(r, Some(Reminder::new("a", "hello")));
    }

    proptest! {
        #[test]
        fn the_cap_holds_and_guidance_never_displaces_safety(
            ops in proptest::collection::vec((0u8..12, any::<bool>(), any::<bool>()), 0..60),
            max in 1usize..6,
        ) {
            let mut set = ReminderSet::default();
            for (id, safety, remove) in ops {
                let id = format!("r{id}");
                let safety_before = set.iter().filter(|r| r.tier == ReminderTier::Safety).count();
                let replacing = set.iter().any(|r| r.id == id);
                if remove {
                    set.remove(&id);
                    continue;
                }
                let outcome = set.add(tiered(&id, safety), max);
                prop_assert!(set.len() <= max);
                let mut ids: Vec<&str> = set.iter().map(|r| r.id.as_str()).collect();
                ids.sort_unstable();
                ids.dedup();
                prop_assert_eq!(ids.len(), set.len());
                let safety_after = set.iter().filter(|r| r.tier == ReminderTier::Safety).count();
                if !safety && !replacing {
                    prop_assert_eq!(safety_after, safety_before);
                }
                if outcome == ReminderAdded::Refused {
                    prop_assert!(!safety);
                    prop_assert_eq!(safety_after, max);
                } else {
                    prop_assert!(set.iter().any(|r| r.id == id));
                }
            }
        }

        #[test]
        fn a_reminder_is_delivered_at_its_spacing(gap in 0u32..5, turns in 1u32..30) {
            let mut set = ReminderSet::default();
            set.add(Reminder::new("r", "r").every(gap), 8);
            let shown: Vec<u32> = (1..=turns).filter(|t| !set.take_due(*t).is_empty()).collect();
            let expected: Vec<u32> = (1..=turns).step_by(gap as usize + 1).collect();
            prop_assert_eq!(shown, expected);
        }
    }
}
