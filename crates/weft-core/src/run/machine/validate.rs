//! Checking a machine read back from outside the process (a stored
//! snapshot): the shape serde cannot check, so that a corrupt or hand-edited
//! snapshot is a typed error for its run instead of a panic of the process
//! that drives it.

use super::{AfterAwait, Awaiting, Batch, Phase, RunMachine};

/// A snapshot whose parts disagree with each other.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("inconsistent run snapshot: {0}")]
pub struct InvalidSnapshot(pub String);

/// Elicitations a snapshot may hold (twice what the machine ever keeps).
const MAX_ELICITATIONS: usize = 2 * super::MAX_PENDING_ELICITATIONS;

impl RunMachine {
    /// Checks what deserialization cannot: lengths that must agree, indexes
    /// in range, bounded lists. Every machine the transitions produce
    /// passes; a snapshot that fails must not be driven.
    pub fn validate(&self) -> Result<(), InvalidSnapshot> {
        let fail = |what: String| Err(InvalidSnapshot(what));
        match &self.phase {
            Phase::Planning { .. } | Phase::Finished { .. } => {}
            Phase::Resolving(r) => {
                if r.current >= r.calls.len() {
                    return fail(format!("resolving call {} of {}", r.current, r.calls.len()));
                }
            }
            Phase::Executing(batch) => check_batch(batch)?,
            Phase::Awaiting(a) => check_await(a)?,
        }
        if !matches!(self.phase, Phase::Executing(_)) && !self.elicitations.is_empty() {
            return fail("questions of running calls outside an executing batch".into());
        }
        if self.elicitations.len() > MAX_ELICITATIONS {
            return fail(format!("{} pending elicitations", self.elicitations.len()));
        }
        Ok(())
    }
}

fn check_batch(batch: &Batch) -> Result<(), InvalidSnapshot> {
    if batch.results.len() != batch.calls.len() {
        return Err(InvalidSnapshot(format!(
            "{} results for {} calls",
            batch.results.len(),
            batch.calls.len()
        )));
    }
    Ok(())
}

fn check_await(a: &Awaiting) -> Result<(), InvalidSnapshot> {
    if a.answers.len() != a.items.len() {
        return Err(InvalidSnapshot(format!(
            "{} answers for {} await items",
            a.answers.len(),
            a.items.len()
        )));
    }
    if a.items.is_empty() {
        return Err(InvalidSnapshot("an await without items".into()));
    }
    match &a.then {
        AfterAwait::Plan => Ok(()),
        AfterAwait::Execute(batch) => check_batch(batch),
    }
}
