//! Session history tests: the commit that completes a run appends its
//! conversation to the session's transcript in the same write, once.

use weft_core::lease::{LeaseClaim, LeaseRequest};
use weft_core::message::Message;
use weft_core::session::{FullStore, SessionError, TranscriptEntry};
use weft_core::store::{Commit, RunStatus, StoreError};
use weft_core::{RunId, SessionId, Timestamp};

use super::{commit, events, machine, record};

fn texts(entries: &[TranscriptEntry]) -> Vec<(u64, String, Option<String>)> {
    entries
        .iter()
        .map(|e| {
            (
                e.seq,
                e.message.joined_text(),
                e.run_id.as_ref().map(|r| r.to_string()),
            )
        })
        .collect()
}

fn exchange(q: &str, a: &str) -> Vec<Message> {
    vec![Message::user(q), Message::assistant(a)]
}

pub async fn completing_runs_append_their_conversation_once(store: &dyn FullStore) {
    let session = SessionId::new("s1");
    let r1 = record("r1", "s1", 1);
    store
        .create_run(&r1, &events(1, 1), &machine())
        .await
        .unwrap();
    let done = events(2, 3);
    let first = exchange("my name is Ada", "hello Ada");
    store
        .commit_with_transcript(commit(&r1.run_id, &done, RunStatus::Completed, 5), &first)
        .await
        .unwrap();
    // The same commit again (a retry after a lost reply) appends nothing.
    store
        .commit_with_transcript(commit(&r1.run_id, &done, RunStatus::Completed, 5), &first)
        .await
        .unwrap();
    // A second run of the session continues the transcript.
    let r2 = record("r2", "s1", 10);
    store
        .create_run(&r2, &events(1, 1), &machine())
        .await
        .unwrap();
    store
        .commit_with_transcript(
            commit(&r2.run_id, &events(2, 2), RunStatus::Completed, 12),
            &exchange("what is my name?", "Ada"),
        )
        .await
        .unwrap();
    let stored = store.read_transcript(&session, 0, None).await.unwrap();
    let r1s = Some("r1".to_owned());
    let r2s = Some("r2".to_owned());
    assert_eq!(
        texts(&stored),
        [
            (1, "my name is Ada".into(), r1s.clone()),
            (2, "hello Ada".into(), r1s),
            (3, "what is my name?".into(), r2s.clone()),
            (4, "Ada".into(), r2s),
        ]
    );
    assert_eq!(stored[0].at, Timestamp::from_millis(5));
    assert_eq!(stored[1].message, Message::assistant("hello Ada"));
    let s = store.get_session(&session).await.unwrap().unwrap();
    assert_eq!(s.transcript_seq, 4);
    // A plain commit carries nothing into the transcript.
    let r3 = record("r3", "s1", 20);
    store
        .create_run(&r3, &events(1, 1), &machine())
        .await
        .unwrap();
    store
        .commit(commit(&r3.run_id, &events(2, 2), RunStatus::Completed, 21))
        .await
        .unwrap();
    assert_eq!(store.read_transcript(&session, 4, None).await.unwrap(), []);
}

pub async fn a_fenced_out_completion_appends_nothing(store: &dyn FullStore) {
    let rec = record("r1", "s1", 1);
    let lease = |owner| LeaseRequest {
        owner,
        expires_at: Timestamp::from_millis(100),
    };
    let old = store
        .create_leased_run(&rec, &events(1, 1), &machine(), lease("a"))
        .await
        .unwrap();
    let LeaseClaim::Granted { epoch: new } = store
        .acquire_lease(&rec.run_id, lease("b"), Timestamp::from_millis(100))
        .await
        .unwrap()
    else {
        panic!("the lapsed lease was not granted");
    };
    let done = events(2, 2);
    let stale = Commit {
        fence: Some(old),
        ..commit(&rec.run_id, &done, RunStatus::Completed, 50)
    };
    let err = store
        .commit_with_transcript(stale, &exchange("q", "stale answer"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::LeaseLost { .. }), "{err:?}");
    let session = SessionId::new("s1");
    assert_eq!(store.read_transcript(&session, 0, None).await.unwrap(), []);
    // The driver that holds the lease completes it, and only its answer lands.
    let current = Commit {
        fence: Some(new),
        ..commit(&rec.run_id, &done, RunStatus::Completed, 60)
    };
    store
        .commit_with_transcript(current, &exchange("q", "answer"))
        .await
        .unwrap();
    let stored = store.read_transcript(&session, 0, None).await.unwrap();
    assert_eq!(
        texts(&stored),
        [
            (1, "q".into(), Some("r1".into())),
            (2, "answer".into(), Some("r1".into()))
        ]
    );
    let run = store.load_run(&RunId::new("r1")).await.unwrap().unwrap();
    assert_eq!(run.record.status, RunStatus::Completed);
}

pub async fn deleting_a_session_erases_its_history_and_refuses_runs(store: &dyn FullStore) {
    let session = SessionId::new("s1");
    let r1 = record("r1", "s1", 1);
    store
        .create_run(&r1, &events(1, 1), &machine())
        .await
        .unwrap();
    store
        .commit_with_transcript(
            commit(&r1.run_id, &events(2, 2), RunStatus::Completed, 5),
            &exchange("q", "a"),
        )
        .await
        .unwrap();
    store
        .memory_set(
            &session,
            "k",
            &serde_json::json!(1),
            Timestamp::from_millis(6),
        )
        .await
        .unwrap();
    // A run still going when the session is deleted.
    let late = record("late", "s1", 2);
    store
        .create_run(&late, &events(1, 1), &machine())
        .await
        .unwrap();
    // Another session keeps its own.
    let r2 = record("r2", "s2", 1);
    store
        .create_run(&r2, &events(1, 1), &machine())
        .await
        .unwrap();
    store
        .memory_set(
            &r2.session_id,
            "k",
            &serde_json::json!(2),
            Timestamp::from_millis(6),
        )
        .await
        .unwrap();

    let deleted = store
        .delete_session(&session, Timestamp::from_millis(7))
        .await
        .unwrap();
    assert_eq!(deleted.ended_at, Some(Timestamp::from_millis(7)));
    assert_eq!(store.read_transcript(&session, 0, None).await.unwrap(), []);
    assert_eq!(store.memory_all(&session).await.unwrap(), []);
    assert_eq!(
        store.memory_get(&r2.session_id, "k").await.unwrap(),
        Some(serde_json::json!(2))
    );
    // A run completing after the end adds nothing to the closed transcript.
    store
        .commit_with_transcript(
            commit(&late.run_id, &events(2, 2), RunStatus::Completed, 8),
            &exchange("late q", "late a"),
        )
        .await
        .unwrap();
    assert_eq!(store.read_transcript(&session, 0, None).await.unwrap(), []);
    // Its runs stay; new ones are refused; deleting again changes nothing.
    assert!(store.load_run(&r1.run_id).await.unwrap().is_some());
    let refused = store
        .start_run(&record("r3", "s1", 8), &events(1, 1), &machine())
        .await
        .unwrap_err();
    assert!(matches!(refused, SessionError::Ended { .. }), "{refused:?}");
    let again = store
        .delete_session(&session, Timestamp::from_millis(9))
        .await
        .unwrap();
    assert_eq!(again.ended_at, Some(Timestamp::from_millis(7)));
    assert!(matches!(
        store
            .delete_session(&SessionId::new("nope"), Timestamp::from_millis(9))
            .await,
        Err(SessionError::NotFound { .. })
    ));
}

/// Runs of one session that complete at the same time each append their
/// exchange whole: the transcript is gap-free and no exchange is split.
pub async fn concurrent_completions_in_one_session_append_whole_exchanges(store: &dyn FullStore) {
    const RUNS: usize = 8;
    let session = SessionId::new("s1");
    let records: Vec<_> = (0..RUNS)
        .map(|r| record(&format!("r{r}"), "s1", r as u64 + 1))
        .collect();
    for r in &records {
        store
            .create_run(r, &events(1, 1), &machine())
            .await
            .unwrap();
    }
    let done = events(2, 3);
    let completions = records.iter().enumerate().map(|(i, r)| {
        let exchange = exchange(&format!("q{i}"), &format!("a{i}"));
        let done = &done;
        async move {
            store
                .commit_with_transcript(
                    commit(&r.run_id, done, RunStatus::Completed, 10),
                    &exchange,
                )
                .await
        }
    });
    for result in futures_util::future::join_all(completions).await {
        result.unwrap();
    }
    let entries = texts(&store.read_transcript(&session, 0, None).await.unwrap());
    assert_eq!(entries.len(), 2 * RUNS, "{entries:?}");
    for (pair, seqs) in entries.chunks(2).zip((1u64..).step_by(2)) {
        let (q, a) = (&pair[0], &pair[1]);
        assert_eq!((q.0, a.0), (seqs, seqs + 1), "{entries:?}");
        let i = q.1.trim_start_matches('q');
        assert_eq!(a.1, format!("a{i}"), "{entries:?}");
        assert_eq!(q.2, a.2, "{entries:?}");
        assert_eq!(q.2.as_deref(), Some(format!("r{i}").as_str()));
    }
}
