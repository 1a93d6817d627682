//! The run's transcript: messages shared by reference, appended to, never rewritten.

use std::sync::Arc;

use super::append_only::{AppendOnly, Iter};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::message::Message;

/// An append-only list of messages; cloning it costs the same at any
/// length and clones no message (see [`AppendOnly`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transcript {
    messages: AppendOnly<Arc<Message>>,
}

impl Transcript {
    /// A transcript holding `messages`.
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages: AppendOnly::from_vec(messages.into_iter().map(Arc::new).collect()),
        }
    }

    /// Appends a message.
    pub fn push(&mut self, message: Message) {
        self.messages.push(Arc::new(message));
    }

    /// The messages, oldest first.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &Message> + '_ {
        self.messages.iter().map(|m| &**m)
    }

    /// The messages as shared pointers, oldest first.
    pub fn shared(&self) -> Iter<'_, Arc<Message>> {
        self.messages.iter()
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether there are no messages.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The last message.
    pub fn last(&self) -> Option<&Message> {
        self.messages.last().map(|m| &**m)
    }

    /// The message at `index`, oldest first.
    pub fn get(&self, index: usize) -> Option<&Message> {
        self.messages.get(index).map(|m| &**m)
    }
}

impl Serialize for Transcript {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Transcript {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<Message>::deserialize(d).map(Transcript::new)
    }
}
