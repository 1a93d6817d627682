//! [`StartRequest`]: what a new run starts from.

use weft_core::message::Message;
use weft_core::run::Policy;
use weft_core::tool::Labels;
use weft_core::{RunId, SessionId};

/// What a new run starts from.
#[derive(Debug, Clone, Default)]
pub struct StartRequest {
    /// The session the run belongs to.
    pub session_id: Option<SessionId>,
    /// The run's input (session history plus the new user message).
    pub messages: Vec<Message>,
    /// Labels for the run and its tool requests.
    pub labels: Labels,
    /// The run's id (generated when absent).
    pub run_id: Option<RunId>,
    /// A policy replacing the agent's for this run.
    pub policy: Option<Policy>,
}

impl StartRequest {
    /// A run whose input is one user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            messages: vec![Message::user(text)],
            ..Self::default()
        }
    }

    /// Sets the session.
    pub fn session(mut self, session: impl Into<SessionId>) -> Self {
        self.session_id = Some(session.into());
        self
    }
}
