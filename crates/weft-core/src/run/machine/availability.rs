//! Toolset availability as the run sees it: each toolset that could not
//! start or stopped working is an event with its cause
//! ([`EventKind::ToolsetUnavailable`]) and a reminder that tells the model
//! not to call its tools; once it works again, an event
//! ([`EventKind::ToolsetAvailable`]) and a recovery note replace them.
//! Nothing is emitted while the state stays as it was (a resumed run keeps
//! its reminders, so it does not repeat them).

use super::*;

/// The prefix of the reminders about toolset availability.
const REMINDER_PREFIX: &str = "toolset:";
/// How a recovery note starts, to tell it from an outage note.
const RECOVERED: &str = "The toolset";

impl RunMachine {
    /// Takes the toolsets that are unavailable now, each `(name, cause)`;
    /// every other toolset the run was told about is available again.
    /// Returns whether anything changed.
    pub fn toolset_availability<'a>(
        &mut self,
        unavailable: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> bool {
        let unavailable: Vec<(&str, &str)> = unavailable.into_iter().collect();
        let mut changed = false;
        for &(name, cause) in &unavailable {
            let id = format!("{REMINDER_PREFIX}{name}");
            let text = format!(
                "The tools of `{name}` are unavailable for now ({cause}); do not call them. \
                 You will be told when they are back."
            );
            if !self.reminders().any(|r| r.id == id && r.text == text) {
                self.add_reminder(Reminder::new(id, text));
                self.outbox.push(EventKind::ToolsetUnavailable {
                    toolset: name.to_owned(),
                    cause: cause.to_owned(),
                });
                changed = true;
            }
        }
        let recovered: Vec<String> = self
            .reminders()
            .filter_map(|r| {
                let name = r.id.strip_prefix(REMINDER_PREFIX)?;
                let down = unavailable.iter().any(|(n, _)| *n == name);
                (!down && !r.text.starts_with(RECOVERED)).then(|| name.to_owned())
            })
            .collect();
        for name in recovered {
            self.add_reminder(Reminder::new(
                format!("{REMINDER_PREFIX}{name}"),
                format!("{RECOVERED} `{name}` is available again; its tools can be called."),
            ));
            self.outbox
                .push(EventKind::ToolsetAvailable { toolset: name });
            changed = true;
        }
        changed
    }
}
