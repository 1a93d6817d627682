//! End-to-end tests of the real `weft` binary.

mod common;

use std::process::Command;

use common::{example, json_lines};

use serde_json::Value;

fn weft() -> Command {
    Command::new(env!("CARGO_BIN_EXE_weft"))
}

#[test]
fn run_streams_jsonl_events_and_the_outcome() {
    let lines = json_lines(
        weft()
            .args(["run", "--output", "jsonl"])
            .arg(example("calculator.toml"))
            .arg("What is (2 + 3) * 7?"),
    );
    let types: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
    assert_eq!(
        types,
        vec![
            "run_started",
            "tool_started",
            "tool_finished",
            "tool_started",
            "tool_finished",
            "assistant_chunk",
            "run_finished"
        ]
    );
    assert_eq!(lines[2]["output"]["result"]["value"], 5);
    assert_eq!(lines[4]["output"]["result"]["value"], 35);
    let seqs: Vec<u64> = lines.iter().filter_map(|l| l["seq"].as_u64()).collect();
    assert_eq!(seqs, (1..=7).collect::<Vec<_>>());
    let outcome = &lines.last().unwrap()["outcome"];
    assert_eq!(outcome["kind"], "response");
    assert_eq!(outcome["message"]["parts"][0]["text"], "(2 + 3) * 7 = 35");
}

#[test]
fn run_shows_text_and_a_summary() {
    let out = weft()
        .arg("run")
        .arg(example("calculator.toml"))
        .arg("What is (2 + 3) * 7?")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("→ calc.add {\"a\":2,\"b\":3}"), "{text}");
    assert!(text.contains("← calc.multiply 35"), "{text}");
    assert!(text.contains("(2 + 3) * 7 = 35"), "{text}");
    assert!(text.contains("done · 3 turns · 2 tool calls"), "{text}");
}

#[test]
fn a_bad_agent_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, "id = \"x\"\n[planner]\nkind = \"psychic\"\n").unwrap();
    let out = weft().arg("run").arg(&path).arg("hi").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("bad.toml is invalid"), "{err}");
    assert!(err.contains("psychic"), "{err}");
    let out = weft()
        .arg("run")
        .arg(dir.path().join("missing.toml"))
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("cannot read agent file")
    );
}

#[test]
fn bench_agent_loop_prints_json_lines() {
    let lines = json_lines(weft().args([
        "bench",
        "agent-loop",
        "--seconds",
        "0.2",
        "--concurrent",
        "20",
    ]));
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["mode"], "concurrent");
    assert_eq!(lines[0]["runs"], 20);
    assert_eq!(lines[0]["store_keeps_finished"], 0);
    assert_eq!(lines[1]["mode"], "concurrent");
    assert_eq!(lines[1]["store_keeps_finished"], Value::Null);
    // The binary's allocator counts the heap: runs in flight hold some.
    for line in &lines[..2] {
        let heap = line["in_flight_heap_kib_per_run"].as_f64();
        assert!(heap.is_some_and(|kib| kib > 0.0), "{line}");
    }
    assert_eq!(lines[2]["mode"], "sequential");
    assert!(lines[2]["us_per_step"].as_f64().unwrap() > 0.0);
    assert!(lines[2]["runs"].as_u64().unwrap() > 0);
}

/// The one JSON line `weft bench <args>` prints; it must succeed.
fn bench_line(args: &[&str]) -> Value {
    let out = weft().arg("bench").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn bench_serve_drives_a_real_server_and_prints_a_json_line() {
    let line = bench_line(&["serve", "--clients", "8", "--seconds", "0.5"]);
    assert_eq!(line["bench"], "serve");
    assert_eq!(line["store"], "sqlite");
    assert_eq!(line["clients"], 8);
    assert_eq!(line["errors"], 0);
    assert!(line["runs"].as_u64().unwrap() > 0, "{line}");
    let (p50, p99) = (
        line["first_event_p50_ms"].as_f64().unwrap(),
        line["first_event_p99_ms"].as_f64().unwrap(),
    );
    assert!(0.0 < p50 && p50 <= p99, "{line}");
    assert!(p99 <= line["run_p99_ms"].as_f64().unwrap(), "{line}");
}

#[test]
fn bench_stream_delivers_the_whole_answer_to_every_client_from_few_stored_events() {
    // The bench fails unless every client received all 2,000 deltas' text.
    let line = bench_line(&["stream", "--clients", "5", "--tokens", "2000"]);
    assert_eq!(line["bench"], "stream");
    assert_eq!(
        (line["clients"].as_u64(), line["tokens"].as_u64()),
        (Some(5), Some(2000))
    );
    assert!(
        line["deltas_delivered_per_s"].as_f64().unwrap() > 0.0,
        "{line}"
    );
    // Deltas are merged per commit: far fewer stored events than deltas.
    let stored = line["stored_events_per_run"].as_u64().unwrap();
    assert!((2..200).contains(&stored), "{line}");
}

#[test]
fn runs_are_stored_with_db_and_inspected_with_runs_commands() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("weft.db").display().to_string();
    let out = weft()
        .args(["run", "--db", &db])
        .arg(example("calculator.toml"))
        .arg("What is (2 + 3) * 7?")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list = weft().args(["runs", "list", "--db", &db]).output().unwrap();
    assert!(
        list.status.success(),
        "{}",
        String::from_utf8_lossy(&list.stderr)
    );
    let records: Vec<Value> = String::from_utf8(list.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["status"], "completed");
    let run = records[0]["run_id"].as_str().unwrap().to_owned();
    let show = weft()
        .args(["runs", "show", &run, "--json", "--db", &db])
        .output()
        .unwrap();
    let view: Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(view["tool_calls"], 2);
    assert_eq!(view["outcome"]["kind"], "response");
    let events = weft()
        .args(["runs", "events", &run, "--db", &db, "--after", "5"])
        .output()
        .unwrap();
    let types: Vec<String> = String::from_utf8(events.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(types, vec!["assistant_chunk", "run_finished"]);
    for verb in ["continue", "recover"] {
        let again = weft()
            .args(["runs", verb, &run, "--db", &db, "--agent"])
            .arg(example("calculator.toml"))
            .output()
            .unwrap();
        assert_eq!(again.status.code(), Some(2), "runs {verb}");
        assert!(
            String::from_utf8(again.stderr)
                .unwrap()
                .contains("nothing to go on with"),
            "runs {verb}"
        );
    }
    let sessions = weft()
        .args(["sessions", "list", "--db", &db])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(sessions.stdout).unwrap().lines().count(),
        1
    );
}

#[test]
fn a_session_example_runs_twice_and_the_second_run_uses_the_first_answer() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("weft.db").display().to_string();
    let run = |prompt: &str| {
        let out = weft()
            .args(["run", "--db", &db, "--session", "demo"])
            .arg(example("session.toml"))
            .arg(prompt)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let first = run("Remember: the launch code is 7-4-1.");
    assert!(
        first.contains("Noted: Remember: the launch code is 7-4-1."),
        "{first}"
    );
    assert!(!first.contains("Earlier I answered"), "{first}");
    let second = run("What did you note?");
    assert!(
        second.contains("Earlier I answered: \"Noted: Remember: the launch code is 7-4-1.\""),
        "{second}"
    );
    // Another session starts the script afresh.
    let out = weft()
        .args(["run", "--db", &db, "--session", "other"])
        .arg(example("session.toml"))
        .arg("hello")
        .output()
        .unwrap();
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("Noted: hello")
    );
    // A session needs a durable store.
    let refused = weft()
        .args(["run", "--session", "demo"])
        .arg(example("session.toml"))
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
}

#[test]
fn ending_a_session_cancels_its_running_runs_and_refuses_new_ones() {
    use weft_core::run::{RunConfig, RunMachine};
    use weft_core::store::{RunRecord, RunStatus};
    use weft_core::{RunId, SessionId, Timestamp};

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("weft.db").display().to_string();
    // A running run whose driver is gone, in session `s`.
    let tokio = tokio::runtime::Runtime::new().unwrap();
    tokio.block_on(async {
        let store = weft_store::connect(&db).await.unwrap();
        let now = Timestamp::from_millis(1);
        let record = RunRecord {
            run_id: RunId::new("r1"),
            agent_id: "session".into(),
            session_id: SessionId::new("s"),
            status: RunStatus::Running,
            labels: Default::default(),
            created_at: now,
            updated_at: now,
        };
        let machine = RunMachine::new(RunConfig::new("session", "s", Vec::new()), now);
        store.create_run(&record, &[], &machine).await.unwrap();
    });
    let out = weft()
        .args(["sessions", "end", "s", "--db", &db])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("cancelled 1 run(s)"), "{said}");
    let status = tokio.block_on(async {
        let store = weft_store::connect(&db).await.unwrap();
        store.load_run(&RunId::new("r1")).await.unwrap().unwrap()
    });
    assert_eq!(status.record.status, RunStatus::Cancelled);
    let refused = weft()
        .args(["run", "--db", &db, "--session", "s"])
        .arg(example("session.toml"))
        .arg("hi")
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("has ended"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

/// Runs `sql` with `id` bound as `$1` on the SQLite file `db`; the rows changed.
fn raw_sql(db: &str, sql: &str, id: &str) -> u64 {
    use sqlx::Connection;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite:{db}"))
            .await
            .unwrap();
        let changed = sqlx::query(sql)
            .bind(id)
            .execute(&mut conn)
            .await
            .unwrap()
            .rows_affected();
        conn.close().await.unwrap();
        changed
    })
}

/// The JSON lines of a successful command's stdout, and its stderr.
fn listed(args: &[&str]) -> (Vec<Value>, String) {
    let out = weft().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {stderr}");
    let lines = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (lines, stderr)
}

#[test]
fn runs_and_sessions_lists_skip_rows_that_cannot_be_read_and_name_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("weft.db").display().to_string();
    for _ in 0..2 {
        let out = weft()
            .args(["run", "--db", &db])
            .arg(example("calculator.toml"))
            .arg("What is (2 + 3) * 7?")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (runs, _) = listed(&["runs", "list", "--db", &db]);
    assert_eq!(runs.len(), 2);
    let bad = runs[1]["run_id"].as_str().unwrap().to_owned();
    let good = runs[0]["run_id"].as_str().unwrap().to_owned();
    let changed = raw_sql(
        &db,
        r#"UPDATE runs SET labels = '{"n":5}' WHERE run_id = $1"#,
        &bad,
    );
    assert_eq!(changed, 1);

    // JSON lines of the runs that read; the skipped one named on stderr.
    let (runs, stderr) = listed(&["runs", "list", "--db", &db]);
    let ids: Vec<&str> = runs.iter().filter_map(|r| r["run_id"].as_str()).collect();
    assert_eq!(ids, [good.as_str()]);
    assert!(stderr.contains("skipped 1 run "), "{stderr}");
    assert!(stderr.contains(&bad), "{stderr}");

    // `--json`: one object, with the skipped run marked as the HTTP API does.
    let (body, _) = listed(&["runs", "list", "--json", "--db", &db]);
    assert_eq!(body.len(), 1, "{body:?}");
    let body = &body[0];
    assert_eq!(body["runs"].as_array().unwrap().len(), 1, "{body}");
    assert_eq!(body["runs"][0]["run_id"], good.as_str());
    assert_eq!(body["skipped"][0]["run_id"], bad.as_str(), "{body}");
    assert_eq!(body["skipped"][0]["corrupt"], true);
    assert!(
        body["skipped"][0]["error"]
            .as_str()
            .unwrap()
            .contains("labels"),
        "{body}"
    );

    // Sessions the same way.
    let (sessions, _) = listed(&["sessions", "list", "--all", "--db", &db]);
    assert!(!sessions.is_empty());
    let session = sessions[0]["session_id"].as_str().unwrap().to_owned();
    let changed = raw_sql(
        &db,
        r#"UPDATE sessions SET labels = '{"n":5}' WHERE session_id = $1"#,
        &session,
    );
    assert_eq!(changed, 1);
    let (after, stderr) = listed(&["sessions", "list", "--all", "--db", &db]);
    assert_eq!(after.len(), sessions.len() - 1);
    assert!(stderr.contains("skipped 1 session "), "{stderr}");
    assert!(stderr.contains(&session), "{stderr}");
}
