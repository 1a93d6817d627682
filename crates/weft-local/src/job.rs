//! A generation handed to a model's thread ([`super::worker`]), and what
//! the thread sends back while and when it ends.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::Sender;

use weft_core::model::ModelError;

use super::generation::{Generate, Generated};
use super::output::Piece;

/// One generation for the thread.
pub(super) struct Job {
    /// What to generate.
    pub req: Generate,
    /// Where pieces and the result go.
    pub out: Sender<Msg>,
    /// Set when the reader went away.
    pub cancel: Arc<AtomicBool>,
}

/// What the thread sends back.
pub(super) enum Msg {
    /// A released piece.
    Piece(Piece),
    /// The end of the generation.
    Done(Result<Generated, ModelError>),
}
