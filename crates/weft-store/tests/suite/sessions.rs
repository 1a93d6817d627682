//! Session store tests: lifecycle, ending, transcript, memory and prompts.

use serde_json::json;
use weft_core::message::Message;
use weft_core::session::{
    FullStore, PromptFilter, PromptOverride, PromptScope, SessionError, SessionFilter,
    SessionRecord, TranscriptEntry,
};
use weft_core::store::{RunStatus, StoreError};
use weft_core::tool::Labels;
use weft_core::{RunId, SessionId, Timestamp};

use super::{events, machine, record};

fn session(id: &str, created: u64) -> SessionRecord {
    SessionRecord::new(
        SessionId::new(id),
        Labels::from([("tenant".to_owned(), "t1".to_owned())]),
        Timestamp::from_millis(created),
    )
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

pub async fn session_lifecycle(store: &dyn FullStore) {
    let s1 = session("s1", 10);
    store.create_session(&s1).await.unwrap();
    assert_eq!(
        store.create_session(&s1).await.unwrap_err(),
        SessionError::Exists {
            session_id: s1.session_id.clone()
        }
    );
    store.create_session(&session("s2", 20)).await.unwrap();
    store.create_session(&session("s3", 20)).await.unwrap();
    assert_eq!(
        store.get_session(&s1.session_id).await.unwrap(),
        Some(s1.clone())
    );
    assert_eq!(
        store.get_session(&SessionId::new("nope")).await.unwrap(),
        None
    );

    let ended = store
        .end_session(&SessionId::new("s2"), Timestamp::from_millis(99))
        .await
        .unwrap();
    assert_eq!(ended.ended_at, Some(Timestamp::from_millis(99)));
    assert!(ended.is_ended());
    // Ending again keeps the first time.
    let again = store
        .end_session(&SessionId::new("s2"), Timestamp::from_millis(500))
        .await
        .unwrap();
    assert_eq!(again.ended_at, Some(Timestamp::from_millis(99)));
    assert_eq!(
        store
            .end_session(&SessionId::new("nope"), Timestamp::from_millis(1))
            .await
            .unwrap_err(),
        SessionError::NotFound {
            session_id: SessionId::new("nope")
        }
    );

    let ids = |v: Vec<SessionRecord>| {
        v.into_iter()
            .map(|s| s.session_id.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(store
            .list_sessions(&SessionFilter::default())
            .await
            .unwrap()),
        ["s3", "s1"]
    );
    let all = SessionFilter {
        include_ended: true,
        ..SessionFilter::default()
    };
    assert_eq!(
        ids(store.list_sessions(&all).await.unwrap()),
        ["s3", "s2", "s1"]
    );
    let one = SessionFilter {
        include_ended: true,
        limit: Some(1),
        ..SessionFilter::default()
    };
    assert_eq!(ids(store.list_sessions(&one).await.unwrap()), ["s3"]);
    let after = SessionFilter {
        before: Some(weft_core::store::ListCursor {
            created_at: store
                .get_session(&SessionId::new("s3"))
                .await
                .unwrap()
                .unwrap()
                .created_at,
            id: "s3".into(),
        }),
        ..all.clone()
    };
    assert_eq!(
        ids(store.list_sessions(&after).await.unwrap()),
        ["s2", "s1"]
    );

    // A run on an unknown session creates it, open and without labels.
    store
        .start_run(&record("r1", "implicit", 7), &events(1, 1), &machine())
        .await
        .unwrap();
    let implicit = store
        .get_session(&SessionId::new("implicit"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(implicit.created_at, Timestamp::from_millis(7));
    assert!(implicit.labels.is_empty() && !implicit.is_ended());
    // A run on a known session leaves it as it was.
    store
        .start_run(&record("r2", "s1", 50), &events(1, 1), &machine())
        .await
        .unwrap();
    assert_eq!(store.get_session(&s1.session_id).await.unwrap(), Some(s1));
}

pub async fn ended_sessions_reject_new_runs(store: &dyn FullStore) {
    store.create_session(&session("s1", 1)).await.unwrap();
    store
        .start_run(&record("before", "s1", 2), &events(1, 1), &machine())
        .await
        .unwrap();
    store
        .end_session(&SessionId::new("s1"), Timestamp::from_millis(3))
        .await
        .unwrap();

    let err = store
        .start_run(&record("after", "s1", 4), &events(1, 1), &machine())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        SessionError::Ended {
            session_id: SessionId::new("s1")
        }
    );
    // Through the run store contract too, typed.
    let err = store
        .create_run(&record("after", "s1", 4), &events(1, 1), &machine())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::SessionEnded {
            session_id: SessionId::new("s1")
        }
    );
    assert!(
        store
            .load_run(&RunId::new("after"))
            .await
            .unwrap()
            .is_none()
    );
    // Runs already there can still be committed (the runtime cancels them).
    store
        .commit(weft_core::store::Commit {
            run_id: &RunId::new("before"),
            events: &events(2, 2),
            snapshot: None,
            status: RunStatus::Cancelled,
            now: Timestamp::from_millis(5),
            fence: None,
        })
        .await
        .unwrap();
    // Run errors keep their type through `start_run`.
    store.create_session(&session("s2", 1)).await.unwrap();
    store
        .start_run(&record("dup", "s2", 1), &[], &machine())
        .await
        .unwrap();
    assert_eq!(
        store
            .start_run(&record("dup", "s2", 1), &[], &machine())
            .await
            .unwrap_err(),
        SessionError::Store(StoreError::RunExists {
            run_id: RunId::new("dup")
        })
    );
}

fn entries(from: u64, to: u64) -> Vec<TranscriptEntry> {
    (from..=to)
        .map(|seq| TranscriptEntry {
            seq,
            run_id: (seq % 2 == 0).then(|| RunId::new("r1")),
            at: Timestamp::from_millis(seq * 10),
            message: Message::user(format!("message {seq}")),
        })
        .collect()
}

pub async fn transcript_appends_are_idempotent_and_gap_free(store: &dyn FullStore) {
    let id = SessionId::new("s1");
    assert_eq!(
        store
            .append_transcript(&id, &entries(1, 1))
            .await
            .unwrap_err(),
        SessionError::NotFound {
            session_id: id.clone()
        }
    );
    store.create_session(&session("s1", 1)).await.unwrap();
    store.append_transcript(&id, &entries(1, 3)).await.unwrap();
    store.append_transcript(&id, &entries(2, 5)).await.unwrap();
    assert_eq!(
        store
            .append_transcript(&id, &entries(7, 7))
            .await
            .unwrap_err(),
        SessionError::TranscriptGap {
            session_id: id.clone(),
            last: 5,
            seq: 7
        }
    );
    assert_eq!(
        store.read_transcript(&id, 0, None).await.unwrap(),
        entries(1, 5)
    );
    assert_eq!(
        store.read_transcript(&id, 1, Some(2)).await.unwrap(),
        entries(2, 3)
    );
    assert_eq!(
        store
            .get_session(&id)
            .await
            .unwrap()
            .unwrap()
            .transcript_seq,
        5
    );
    assert_eq!(
        store
            .read_transcript(&SessionId::new("nope"), 0, None)
            .await
            .unwrap_err(),
        SessionError::NotFound {
            session_id: SessionId::new("nope")
        }
    );
}

pub async fn memory_set_get_delete(store: &dyn FullStore) {
    let id = SessionId::new("s1");
    let now = Timestamp::from_millis(1);
    assert_eq!(
        store
            .memory_set(&id, "k", &json!(1), now)
            .await
            .unwrap_err(),
        SessionError::NotFound {
            session_id: id.clone()
        }
    );
    store.create_session(&session("s1", 1)).await.unwrap();
    store
        .memory_set(&id, "b", &json!({"x": [1, 2]}), now)
        .await
        .unwrap();
    store
        .memory_set(&id, "a", &json!("first"), now)
        .await
        .unwrap();
    store
        .memory_set(&id, "a", &json!("second"), now)
        .await
        .unwrap();
    assert_eq!(
        store.memory_get(&id, "a").await.unwrap(),
        Some(json!("second"))
    );
    assert_eq!(store.memory_get(&id, "zzz").await.unwrap(), None);
    assert_eq!(
        store.memory_all(&id).await.unwrap(),
        vec![
            ("a".to_owned(), json!("second")),
            ("b".to_owned(), json!({"x": [1, 2]}))
        ]
    );
    assert!(store.memory_delete(&id, "a").await.unwrap());
    assert!(!store.memory_delete(&id, "a").await.unwrap());
    assert_eq!(store.memory_get(&id, "a").await.unwrap(), None);
}

pub async fn prompt_overrides_resolve_by_scope(store: &dyn FullStore) {
    let set = |scope: PromptScope, template: &str, at: u64| PromptOverride {
        name: "system".into(),
        scope,
        template: template.into(),
        updated_at: Timestamp::from_millis(at),
    };
    let s1 = SessionId::new("s1");
    let global = PromptScope::default();
    let prod = PromptScope {
        labels: labels(&[("env", "prod")]),
        ..PromptScope::default()
    };
    let session = PromptScope {
        session_id: Some(s1.clone()),
        ..PromptScope::default()
    };
    for (scope, template, at) in [
        (&global, "global", 1),
        (&prod, "prod v1", 2),
        (&prod, "prod v2", 3),
        (&session, "s1 only", 4),
    ] {
        store
            .set_prompt_override(&set(scope.clone(), template, at))
            .await
            .unwrap();
    }

    let resolve = |session: &'static str, l: Labels| async move {
        store
            .resolve_prompt("system", &SessionId::new(session), &l)
            .await
            .unwrap()
            .map(|o| o.template)
    };
    assert_eq!(
        resolve("s2", Labels::new()).await.as_deref(),
        Some("global")
    );
    assert_eq!(
        resolve("s2", labels(&[("env", "prod"), ("x", "y")]))
            .await
            .as_deref(),
        Some("prod v2")
    );
    assert_eq!(
        resolve("s1", labels(&[("env", "prod")])).await.as_deref(),
        Some("s1 only")
    );
    assert_eq!(
        store
            .resolve_prompt("other", &s1, &Labels::new())
            .await
            .unwrap(),
        None
    );

    assert_eq!(
        store
            .list_prompt_overrides(&PromptFilter {
                name: Some("system".into()),
                ..PromptFilter::default()
            })
            .await
            .unwrap()
            .len(),
        3
    );
    assert_eq!(
        store
            .list_prompt_overrides(&PromptFilter::default())
            .await
            .unwrap()
            .len(),
        3
    );
    assert!(
        store
            .delete_prompt_override("system", &session)
            .await
            .unwrap()
    );
    assert!(
        !store
            .delete_prompt_override("system", &session)
            .await
            .unwrap()
    );
    assert_eq!(
        resolve("s1", labels(&[("env", "prod")])).await.as_deref(),
        Some("prod v2")
    );
}

/// Runs started while the session is being ended either land or get
/// `Ended`; nothing else, and nothing after.
pub async fn ending_races_cleanly_with_new_runs(store: &dyn FullStore) {
    store.create_session(&session("s1", 1)).await.unwrap();
    let starts = (0..20).map(|i| async move {
        let rec = record(&format!("r{i}"), "s1", i);
        (
            rec.run_id.clone(),
            store.start_run(&rec, &events(1, 1), &machine()).await,
        )
    });
    let end = async {
        tokio::task::yield_now().await;
        store
            .end_session(&SessionId::new("s1"), Timestamp::from_millis(10))
            .await
            .unwrap()
    };
    let (results, ended) = tokio::join!(futures_util::future::join_all(starts), end);
    assert!(ended.is_ended());
    for (run_id, result) in results {
        match result {
            Ok(()) => assert!(store.load_run(&run_id).await.unwrap().is_some()),
            Err(SessionError::Ended { .. }) => {
                assert!(store.load_run(&run_id).await.unwrap().is_none())
            }
            Err(other) => panic!("unexpected error for {run_id}: {other:?}"),
        }
    }
    let late = store
        .start_run(&record("late", "s1", 99), &[], &machine())
        .await;
    assert!(matches!(late, Err(SessionError::Ended { .. })), "{late:?}");
}

/// Memory is bounded: a new key past the maximum and an oversized value
/// are refused with typed errors; an existing key can still be changed.
pub async fn memory_is_bounded(store: &dyn FullStore) {
    use weft_core::session::{MAX_MEMORY_KEYS, MAX_MEMORY_VALUE};
    let id = SessionId::new("bounded");
    let now = Timestamp::from_millis(1);
    store.create_session(&session("bounded", 1)).await.unwrap();
    let big = json!("x".repeat(MAX_MEMORY_VALUE));
    assert!(matches!(
        store.memory_set(&id, "big", &big, now).await,
        Err(SessionError::MemoryValueTooLarge { .. })
    ));
    for i in 0..MAX_MEMORY_KEYS {
        store
            .memory_set(&id, &format!("k{i:04}"), &json!(i), now)
            .await
            .unwrap();
    }
    assert_eq!(
        store.memory_set(&id, "one-more", &json!(0), now).await,
        Err(SessionError::MemoryFull {
            session_id: id.clone(),
            limit: MAX_MEMORY_KEYS
        })
    );
    store
        .memory_set(&id, "k0000", &json!("changed"), now)
        .await
        .unwrap();
    let all = store.memory_all(&id).await.unwrap();
    assert_eq!(all.len(), MAX_MEMORY_KEYS);
    assert_eq!(all[0], ("k0000".to_owned(), json!("changed")));
}
