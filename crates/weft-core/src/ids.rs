//! Identifier newtypes: runs, sessions, turns, tool calls, agents, await items.
//!
//! Each id is an `Arc<str>` so cloning one into an event or a request costs a
//! reference-count increment, not an allocation.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Ids up to this many bytes are formatted without a heap buffer.
const STACK_ID: usize = 96;

/// A string written into a fixed buffer; writing past its end fails.
struct StackText {
    buf: [u8; STACK_ID],
    len: usize,
}

impl fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        let dst = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

fn arc_from_fmt(args: fmt::Arguments<'_>) -> Arc<str> {
    if let Some(s) = args.as_str() {
        return Arc::from(s);
    }
    let mut text = StackText {
        buf: [0; STACK_ID],
        len: 0,
    };
    match fmt::write(&mut text, args) {
        // Only whole `str`s were copied in, so the bytes are UTF-8.
        Ok(()) => match std::str::from_utf8(&text.buf[..text.len]) {
            Ok(s) => Arc::from(s),
            Err(_) => Arc::from(fmt::format(args)),
        },
        Err(_) => Arc::from(fmt::format(args)),
    }
}

macro_rules! id_newtype {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(Arc<str>);

        impl $name {
            /// Wraps a string as this id.
            pub fn new(id: impl Into<Arc<str>>) -> Self {
                Self(id.into())
            }

            /// Formats an id: a short one is written on the stack first, so
            /// making it costs one allocation, not a `String`'s and then the
            /// id's.
            pub fn from_fmt(args: fmt::Arguments<'_>) -> Self {
                Self(arc_from_fmt(args))
            }

            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&*self.0, f)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self::new(s)
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self::new(s)
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }
    };
}

id_newtype!(
    /// Identifies one run: one execution of an agent on a session.
    RunId
);
id_newtype!(
    /// Identifies a session: a conversation holding many runs.
    SessionId
);
id_newtype!(
    /// Identifies one turn of a run.
    TurnId
);
id_newtype!(
    /// Identifies one requested tool invocation.
    ToolCallId
);
id_newtype!(
    /// Identifies an agent configuration.
    AgentId
);
id_newtype!(
    /// Identifies one item of an await barrier.
    AwaitItemId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatted_ids_match_format_at_any_length() {
        let long = "x".repeat(STACK_ID * 2);
        for (i, prefix) in ["run", "é", long.as_str(), ""].into_iter().enumerate() {
            let id = TurnId::from_fmt(format_args!("{prefix}/{i}"));
            assert_eq!(id.as_str(), format!("{prefix}/{i}"));
        }
        assert_eq!(
            ToolCallId::from_fmt(format_args!("plain")).as_str(),
            "plain"
        );
        let edge = "y".repeat(STACK_ID - 1);
        assert_eq!(
            TurnId::from_fmt(format_args!("{edge}/")).as_str().len(),
            STACK_ID
        );
        assert_eq!(
            TurnId::from_fmt(format_args!("{edge}/1")).as_str().len(),
            STACK_ID + 1
        );
    }
}
