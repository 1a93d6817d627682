//! Identifier newtypes: runs, sessions, turns, tool calls, agents, await items.
//!
//! Each id is an `Arc<str>` so cloning one into an event or a request costs a
//! reference-count increment, not an allocation.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

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
