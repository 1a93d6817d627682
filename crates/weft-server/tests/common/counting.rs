//! A run store that records how many events each `read_events` returned
//! and how many runs were loaded whole,
//! and that can be told to fail its commits (a store outage, injected in
//! front of a real store).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use weft_core::RunId;
use weft_core::Timestamp;
use weft_core::event::RunEvent;
use weft_core::lease::{ControlRequest, HeldLease, LeaseClaim, LeaseRequest};
use weft_core::run::RunMachine;
use weft_core::store::{Commit, RunFilter, RunRecord, RunStore, StoreError, StoredRun};

/// `inner`, with the length of every `read_events` answer kept in `reads`.
pub struct CountingStore {
    pub inner: Arc<dyn RunStore>,
    pub reads: Mutex<Vec<usize>>,
    /// While set, every commit fails as the backend would.
    pub failing: AtomicBool,
    /// How many runs were loaded whole (`load_run`).
    pub loads: AtomicUsize,
}

impl CountingStore {
    pub fn new(inner: Arc<dyn RunStore>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            reads: Mutex::new(Vec::new()),
            failing: AtomicBool::new(false),
            loads: AtomicUsize::new(0),
        })
    }

    /// Makes commits fail (`true`) or succeed again.
    pub fn fail_commits(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }

    fn outage(&self) -> Result<(), StoreError> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(StoreError::Backend {
                message: "connection refused (injected outage)".into(),
            });
        }
        Ok(())
    }

    /// The lengths of the reads so far.
    pub fn reads(&self) -> Vec<usize> {
        self.reads.lock().unwrap().clone()
    }
}

#[async_trait]
impl RunStore for CountingStore {
    async fn create_run(
        &self,
        record: &RunRecord,
        events: &[RunEvent],
        snapshot: &RunMachine,
    ) -> Result<(), StoreError> {
        self.inner.create_run(record, events, snapshot).await
    }

    async fn commit(&self, commit: Commit<'_>) -> Result<(), StoreError> {
        self.outage()?;
        self.inner.commit(commit).await
    }

    async fn commit_with_transcript(
        &self,
        commit: Commit<'_>,
        transcript: &[weft_core::message::Message],
    ) -> Result<(), StoreError> {
        self.outage()?;
        self.inner.commit_with_transcript(commit, transcript).await
    }

    async fn load_run(&self, run_id: &RunId) -> Result<Option<StoredRun>, StoreError> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        self.inner.load_run(run_id).await
    }

    async fn read_events(
        &self,
        run_id: &RunId,
        after: u64,
        limit: Option<u32>,
    ) -> Result<Vec<RunEvent>, StoreError> {
        let events = self.inner.read_events(run_id, after, limit).await?;
        self.reads.lock().unwrap().push(events.len());
        Ok(events)
    }

    async fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, StoreError> {
        self.inner.list_runs(filter).await
    }

    async fn list_run_rows(
        &self,
        filter: &RunFilter,
    ) -> Result<Vec<weft_core::store::ListedRun>, StoreError> {
        self.inner.list_run_rows(filter).await
    }

    async fn run_head(
        &self,
        run_id: &RunId,
        key: &str,
    ) -> Result<Option<weft_core::store::RunHead>, StoreError> {
        self.inner.run_head(run_id, key).await
    }

    async fn quarantine_run(
        &self,
        run_id: &RunId,
        reason: &str,
        fence: u64,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        self.inner.quarantine_run(run_id, reason, fence, now).await
    }

    async fn create_leased_run(
        &self,
        record: &RunRecord,
        events: &[RunEvent],
        snapshot: &RunMachine,
        lease: LeaseRequest<'_>,
    ) -> Result<u64, StoreError> {
        self.inner
            .create_leased_run(record, events, snapshot, lease)
            .await
    }

    async fn acquire_lease(
        &self,
        run_id: &RunId,
        lease: LeaseRequest<'_>,
        now: Timestamp,
    ) -> Result<LeaseClaim, StoreError> {
        self.inner.acquire_lease(run_id, lease, now).await
    }

    async fn renew_leases(
        &self,
        owner: &str,
        leases: &[HeldLease],
        expires_at: Timestamp,
    ) -> Result<Vec<RunId>, StoreError> {
        self.inner.renew_leases(owner, leases, expires_at).await
    }

    async fn release_lease(&self, run_id: &RunId, epoch: u64) -> Result<(), StoreError> {
        self.inner.release_lease(run_id, epoch).await
    }

    async fn claim_orphans(
        &self,
        lease: LeaseRequest<'_>,
        now: Timestamp,
        limit: u32,
    ) -> Result<Vec<HeldLease>, StoreError> {
        self.inner.claim_orphans(lease, now, limit).await
    }

    async fn request_control(
        &self,
        run_id: &RunId,
        request: &ControlRequest,
    ) -> Result<bool, StoreError> {
        self.inner.request_control(run_id, request).await
    }

    async fn request_answer(
        &self,
        run_id: &RunId,
        item: &weft_core::AwaitItemId,
        answer: &weft_core::awaiting::AwaitAnswer,
    ) -> Result<bool, StoreError> {
        self.inner.request_answer(run_id, item, answer).await
    }

    async fn pending_answers(
        &self,
        owner: &str,
        limit: u32,
    ) -> Result<Vec<weft_core::lease::RemoteAnswer>, StoreError> {
        self.inner.pending_answers(owner, limit).await
    }

    async fn delete_answer(
        &self,
        run_id: &RunId,
        item: &weft_core::AwaitItemId,
    ) -> Result<(), StoreError> {
        self.inner.delete_answer(run_id, item).await
    }

    async fn pending_controls(
        &self,
        owner: &str,
    ) -> Result<Vec<(HeldLease, ControlRequest)>, StoreError> {
        self.inner.pending_controls(owner).await
    }
}
