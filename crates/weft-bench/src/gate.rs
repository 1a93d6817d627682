//! A gate that holds every run of the concurrent agent-loop measurement at
//! the middle of its work, so memory is read with all of them in flight at
//! once (not while the first ones finish and the last ones start).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::watch;

/// Runs arrive and wait; the measurement arms it, waits for all, then
/// opens it.
#[derive(Debug)]
pub struct Gate {
    armed: AtomicBool,
    arrived: AtomicUsize,
    arrivals: watch::Sender<usize>,
    open: watch::Sender<bool>,
}

impl Default for Gate {
    fn default() -> Self {
        Self {
            armed: AtomicBool::new(false),
            arrived: AtomicUsize::new(0),
            arrivals: watch::channel(0).0,
            open: watch::channel(false).0,
        }
    }
}

impl Gate {
    /// From now on, runs stop at the gate (before, they pass).
    pub fn arm(&self) {
        self.armed.store(true, Ordering::Release);
    }

    /// Counts a run in, then waits until the gate opens; passes at once
    /// when the gate is not armed.
    pub async fn pass(&self) {
        if !self.armed.load(Ordering::Acquire) {
            return;
        }
        let n = self.arrived.fetch_add(1, Ordering::AcqRel) + 1;
        self.arrivals.send_replace(n);
        let mut open = self.open.subscribe();
        // The sender lives in `self`, which outlives this wait.
        let _ = open.wait_for(|o| *o).await;
    }

    /// Waits until `n` runs wait at the gate.
    pub async fn all_arrived(&self, n: usize) {
        let mut arrivals = self.arrivals.subscribe();
        let _ = arrivals.wait_for(|a| *a >= n).await;
    }

    /// Lets every run through, now and later.
    pub fn open(&self) {
        self.open.send_replace(true);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn an_armed_gate_holds_runs_until_all_arrived_and_it_opens() {
        let gate = Arc::new(Gate::default());
        // Unarmed, a run passes at once.
        tokio::time::timeout(Duration::from_secs(5), gate.pass())
            .await
            .expect("an unarmed gate lets runs through");
        gate.arm();
        let waiting: Vec<_> = (0..3)
            .map(|_| {
                let g = gate.clone();
                tokio::spawn(async move { g.pass().await })
            })
            .collect();
        tokio::time::timeout(Duration::from_secs(5), gate.all_arrived(3))
            .await
            .expect("three runs arrive");
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(
            waiting.iter().all(|w| !w.is_finished()),
            "runs wait while the gate is shut"
        );
        gate.open();
        for w in waiting {
            tokio::time::timeout(Duration::from_secs(5), w)
                .await
                .expect("an open gate lets every run through")
                .expect("the run's task");
        }
    }
}
