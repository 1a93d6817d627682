//! The machine's outbox: the events its transitions produced that the driver
//! has not collected yet (see [`crate::run::RunMachine::poll_event`]).

use crate::event::EventKind;

/// Events waiting for the driver, oldest first.
///
/// The outbox is output, not state: it is never serialized (a snapshot is
/// taken after its events were collected and committed with it), and two
/// machines that decided the same things are equal whether or not their
/// driver has collected the events yet.
#[derive(Debug, Clone, Default)]
pub(crate) struct Outbox(Vec<EventKind>);

impl Outbox {
    pub(crate) fn push(&mut self, kind: EventKind) {
        self.0.push(kind);
    }

    pub(crate) fn pop_front(&mut self) -> Option<EventKind> {
        if self.0.is_empty() {
            None
        } else {
            Some(self.0.remove(0))
        }
    }

    pub(crate) fn drain(&mut self) -> std::vec::Drain<'_, EventKind> {
        self.0.drain(..)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl PartialEq for Outbox {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
