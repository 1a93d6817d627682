//! The heartbeat's renewals: what a lease the store did not renew is
//! blamed on, and which leases stay trusted.

use weft_core::run::{RunConfig, RunMachine};
use weft_core::store::{Commit, RunRecord, RunStatus};
use weft_core::{AgentId, SessionId};

use super::*;
use crate::clock::SystemClock;
use crate::memory::MemoryStore;

const TTL: Duration = Duration::from_secs(5);

/// A store with one run leased to `leases` at epoch 1, held there.
async fn leased_run(leases: &Leases) -> (MemoryStore, RunId) {
    let store = MemoryStore::new();
    let run_id = RunId::new("run_1");
    let now = SystemClock.now();
    let record = RunRecord {
        run_id: run_id.clone(),
        agent_id: AgentId::new("a"),
        session_id: SessionId::new("s"),
        status: RunStatus::Running,
        labels: Default::default(),
        created_at: now,
        updated_at: now,
    };
    let machine = RunMachine::new(RunConfig::new("a", "s", Vec::new()), now);
    let epoch = store
        .create_leased_run(&record, &[], &machine, leases.request(now))
        .await
        .unwrap();
    assert_eq!(epoch, 1);
    leases.hold(&run_id, epoch, None);
    (store, run_id)
}

#[tokio::test]
async fn a_held_lease_is_renewed_and_stays_trusted() {
    let leases = Leases::new(TTL);
    let (store, run_id) = leased_run(&leases).await;
    let report = leases.renew(&store, &SystemClock).await;
    assert!(report.is_empty(), "{report:?}");
    assert!(leases.is_trusted(&run_id, 1));
}

/// The run's last commit (here: it finished) frees its lease before its
/// driver forgets it: the renewal misses it, and blames nobody else.
#[tokio::test]
async fn a_lease_freed_by_the_runs_own_commit_is_not_taken() {
    let leases = Leases::new(TTL);
    let (store, run_id) = leased_run(&leases).await;
    store
        .commit(Commit {
            run_id: &run_id,
            events: &[],
            snapshot: None,
            status: RunStatus::Completed,
            now: SystemClock.now(),
            fence: Some(1),
        })
        .await
        .unwrap();
    let report = leases.renew(&store, &SystemClock).await;
    assert_eq!(
        report,
        vec![(
            run_id,
            Loss::Freed {
                status: "completed"
            }
        )]
    );
}

#[tokio::test]
async fn a_lease_another_process_took_is_taken() {
    let leases = Leases::new(TTL);
    let (store, run_id) = leased_run(&leases).await;
    // The lease lapsed (this process stalled) and another took the run.
    let later = SystemClock.now().saturating_add(TTL * 2);
    let other = LeaseRequest {
        owner: "other",
        expires_at: later.saturating_add(TTL),
    };
    store.acquire_lease(&run_id, other, later).await.unwrap();
    let report = leases.renew(&store, &SystemClock).await;
    assert_eq!(
        report,
        vec![(
            run_id.clone(),
            Loss::Taken {
                holder: "other".to_owned()
            }
        )]
    );
    assert!(!leases.is_trusted(&run_id, 1), "no tool starts under it");
}

/// The run was taken again here at a newer epoch between the heartbeat's
/// reading of the held leases and the store's answer: the new lease stays
/// trusted, and the miss is nobody's fault.
#[tokio::test]
async fn a_lease_taken_again_here_meanwhile_stays_trusted() {
    let leases = Leases::new(TTL);
    let run_id = RunId::new("run_1");
    leases.hold(&run_id, 1, None);
    let read = vec![HeldLease {
        run_id: run_id.clone(),
        epoch: 1,
    }];
    leases.hold(&run_id, 2, None);
    let (let_go, suspects) = leases.settle(&read, vec![run_id.clone()], Instant::now());
    assert_eq!(let_go, vec![(run_id.clone(), Loss::LetGo)]);
    assert!(suspects.is_empty());
    assert!(leases.is_trusted(&run_id, 2));
}

/// A room's places are shared by held leases and places reserved for leases
/// being asked for: a start and the sweeper asking at once never get more
/// than the room between them, and a place not used is given back.
#[test]
fn places_reserved_and_leases_held_never_exceed_the_room() {
    let leases = Leases::new(TTL);
    let mut start = leases.reserve(2, 1);
    let sweep = leases.reserve(2, 64);
    assert_eq!((start.len(), sweep.len()), (1, 1), "two places in all");
    assert!(leases.reserve(2, 1).is_empty(), "the room is full");
    leases.hold(&RunId::new("run_1"), 1, start.pop());
    assert!(
        leases.reserve(2, 1).is_empty(),
        "a held lease fills its place"
    );
    drop(sweep);
    assert_eq!(leases.reserve(2, 64).len(), 1, "an unused place is back");
    leases.forget(&RunId::new("run_1"), 1);
    assert_eq!(
        leases.reserve(2, 64).len(),
        2,
        "a forgotten lease frees its place"
    );
}
