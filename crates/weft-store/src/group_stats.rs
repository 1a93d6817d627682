//! [`GroupCommitStats`]: how a store's group committer (SQLite's commit
//! thread, PostgreSQL's commit batcher) has grouped the commits it wrote.

use std::sync::atomic::{AtomicU64, Ordering};

/// How the commits written so far were grouped: a benchmark's figure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupCommitStats {
    /// Transactions written (each one sync to disk).
    pub batches: u64,
    /// Commits they carried.
    pub commits: u64,
    /// Most commits one transaction carried.
    pub largest: u64,
}

impl GroupCommitStats {
    /// Commits per transaction on average (0 before the first).
    pub fn mean(&self) -> f64 {
        if self.batches == 0 {
            0.0
        } else {
            self.commits as f64 / self.batches as f64
        }
    }

    /// What was written after `earlier` was taken (`largest` stays the
    /// largest of all).
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            batches: self.batches.saturating_sub(earlier.batches),
            commits: self.commits.saturating_sub(earlier.commits),
            largest: self.largest,
        }
    }
}

/// Counts of the batches written, shared by the writer and the store.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    batches: AtomicU64,
    commits: AtomicU64,
    largest: AtomicU64,
}

impl Counters {
    /// Counts a batch of `size` commits.
    pub(crate) fn record(&self, size: u64) {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.commits.fetch_add(size, Ordering::Relaxed);
        self.largest.fetch_max(size, Ordering::Relaxed);
    }

    /// The counts so far.
    pub(crate) fn stats(&self) -> GroupCommitStats {
        GroupCommitStats {
            batches: self.batches.load(Ordering::Relaxed),
            commits: self.commits.load(Ordering::Relaxed),
            largest: self.largest.load(Ordering::Relaxed),
        }
    }
}
