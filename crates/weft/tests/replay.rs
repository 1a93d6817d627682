//! `weft replay` with the real binary on real SQLite stores: runs of the
//! example agents and of model agents (a scripted model, offline) replay
//! identically; a changed agent is reported at its first different decision.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::example;
use serde_json::Value;

fn weft() -> Command {
    Command::new(env!("CARGO_BIN_EXE_weft"))
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `agent` on a prompt into the store `db` and returns the run's id.
fn record(agent: &Path, db: &Path, envs: &[(&str, &Path)]) -> String {
    let mut cmd = weft();
    cmd.arg("run").arg(agent).arg("go").arg("--db").arg(db);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.code().is_some(), "{}", text(&out));
    let list = weft()
        .args(["runs", "list", "--db"])
        .arg(db)
        .output()
        .unwrap();
    let first = String::from_utf8(list.stdout).unwrap();
    let line: Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    line["run_id"].as_str().unwrap().to_owned()
}

fn replay(run: &str, agent: &Path, db: &Path) -> Output {
    weft()
        .args(["replay", run, "--agent"])
        .arg(agent)
        .arg("--store")
        .arg(db)
        .output()
        .unwrap()
}

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path
}

#[test]
fn the_calculator_example_replays_identically_and_a_changed_script_differs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let agent = example("calculator.toml");
    let run = record(&agent, &db, &[]);
    let out = replay(&run, &agent, &db);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("identical (3 decisions)"),
        "{}",
        text(&out)
    );

    let changed = std::fs::read_to_string(&agent)
        .unwrap()
        .replace("a = 5, b = 7", "a = 5, b = 8");
    let changed = write(dir.path(), "changed.toml", &changed);
    let out = replay(&run, &changed, &db);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = text(&out);
    assert!(
        report.contains("first difference at decision 2 (turn 2)"),
        "{report}"
    );
    assert!(report.contains("~ arguments.b: 7 → 8"), "{report}");

    let capped = std::fs::read_to_string(&agent)
        .unwrap()
        .replace("max_tool_calls = 8", "max_tool_calls = 1");
    let capped = write(dir.path(), "capped.toml", &capped);
    let out = weft()
        .args(["replay", &run, "--json", "--agent"])
        .arg(&capped)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "differs");
    assert_eq!(v["difference"]["expected"]["kind"], "tool_call");
    assert_eq!(v["difference"]["got"]["kind"], "termination");
    assert_eq!(v["difference"]["got"]["termination"]["reason"], "tool_cap");
}

#[test]
fn the_journal_example_replays_without_running_its_tools() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let journal = dir.path().join("journal");
    std::fs::create_dir(&journal).unwrap();
    let agent = example("journal.toml");
    let run = record(&agent, &db, &[("WEFT_JOURNAL_DIR", &journal)]);
    let lines = |p: &Path| std::fs::read_to_string(p.join("journal.log")).unwrap_or_default();
    let before = lines(&journal);
    assert_eq!(before.lines().count(), 3, "{before}");
    let out = weft()
        .args(["replay", &run, "--agent"])
        .arg(&agent)
        .arg("--store")
        .arg(&db)
        .env("WEFT_JOURNAL_DIR", &journal)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("identical (6 decisions)"),
        "{}",
        text(&out)
    );
    assert_eq!(lines(&journal), before, "replay appended to the journal");
}

/// A model agent on a scripted model (no network): two calls, one failing,
/// then an answer.
fn model_agent(dir: &Path, policy: &str) -> PathBuf {
    let script = write(
        dir,
        "script.yaml",
        r#"
- text: "Dividing first."
  tool_calls:
    - { id: c1, name: calc.divide, arguments: { a: 1, b: 0 } }
- tool_calls:
    - { id: c2, name: calc.add, arguments: '{"a": 2, "b": 3}' }
    - { id: c3, name: calc.multiply, arguments: { a: 5, b: 7 } }
  usage: { input_tokens: 40, output_tokens: 9 }
- text: "2 + 3 = 5 and 5 * 7 = 35."
"#,
    );
    write(
        dir,
        "model.toml",
        &format!(
            "id = \"modelled\"\ninstructions = \"Calculate.\"\ntoolsets = [\"calc\"]\n\n[planner]\nkind = \"model\"\nmodel = \"scripted/{}\"\n\n[policy]\n{policy}\n",
            script.display()
        ),
    )
}

#[test]
fn a_model_agent_replays_from_its_recorded_model_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let agent = model_agent(dir.path(), "max_tool_calls = 8");
    let run = record(&agent, &db, &[]);
    let events = weft()
        .args(["runs", "events", &run, "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let outputs = String::from_utf8_lossy(&events.stdout)
        .lines()
        .filter(|l| l.contains("\"type\":\"model_output\""))
        .count();
    assert_eq!(outputs, 3);
    // The script is spent: replay cannot have asked the model.
    std::fs::write(dir.path().join("script.yaml"), "[]").unwrap();
    let out = replay(&run, &agent, &db);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("identical (4 decisions)"),
        "{}",
        text(&out)
    );

    // A tool policy that no longer allows multiply makes the recorded
    // batch invalid: its first call is no longer executed.
    let restricted = model_agent(
        dir.path(),
        "allowed_tools = [\"calc.add\", \"calc.divide\"]",
    );
    let out = replay(&run, &restricted, &db);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = text(&out);
    assert!(
        report.contains("first difference at decision 2 (turn 2)"),
        "{report}"
    );
    assert!(
        report.contains("~ result.kind: \"json\" → \"error\""),
        "{report}"
    );
    assert!(report.contains("not_executed"), "{report}");
}

#[test]
fn replay_all_summarizes_a_store_in_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let calc = example("calculator.toml");
    record(&calc, &db, &[]);
    record(&calc, &db, &[]);
    record(&model_agent(dir.path(), "max_tool_calls = 8"), &db, &[]);
    let out = weft()
        .args(["replay", "--all", "--since", "1h", "--agent"])
        .arg(&calc)
        .arg("--store")
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("2 replayed, 2 identical, 0 differ, 1 not replayable"),
        "{}",
        text(&out)
    );
    let out = weft()
        .args([
            "replay",
            "--all",
            "--json",
            "--since",
            "2000-01-01T00:00:00Z",
            "--agent",
        ])
        .arg(&calc)
        .arg("--store")
        .arg(&db)
        .output()
        .unwrap();
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[3]["summary"]["replayed"], 2);
    assert_eq!(lines[3]["summary"]["not_replayable"], 1);
    let out = weft()
        .args(["replay", "--all", "--since", "yesterday", "--agent"])
        .arg(&calc)
        .arg("--store")
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = replay("no-such-run", &calc, &db);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[tokio::test(flavor = "multi_thread")]
async fn answered_and_unanswered_confirmations_on_sqlite_replay_identically() {
    use weft::agent_file::AgentFile;
    use weft_core::AwaitItemId;
    use weft_core::awaiting::AwaitAnswer;
    use weft_runtime::{Runtime, StartRequest};

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let body = std::fs::read_to_string(example("calculator.toml")).unwrap();
    let confirmed = body.replace(
        "max_tool_calls = 8",
        "max_tool_calls = 8\nconfirm_tools = [\"calc.add\", \"calc.multiply\"]",
    );
    let confirmed = write(dir.path(), "confirmed.toml", &confirmed);
    let file = AgentFile::load(&confirmed).unwrap();
    let store: std::sync::Arc<dyn weft_core::store::RunStore> =
        weft_store::connect(db.to_str().unwrap()).await.unwrap();
    let runtime = Runtime::builder()
        .agent(file.agent(file.planner(None).unwrap()).unwrap())
        .store(store)
        .build();
    let run = runtime
        .start("calculator", StartRequest::user("go"))
        .await
        .unwrap();
    let id = run.run_id().clone();
    for (call, approved) in [("call_1", true), ("call_2", false)] {
        let item = AwaitItemId::new(format!("confirm_{call}"));
        let answer = AwaitAnswer::Confirmation {
            approved,
            reason: Some("no multiplying today".into()),
        };
        // The await is committed by the driver task: retry until it is there.
        let mut tries = 0;
        while runtime.answer(&id, &item, answer.clone()).await.is_err() {
            tries += 1;
            assert!(tries < 100, "the await of {call} never came");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
    let outcome = run.outcome().await.unwrap();
    assert!(outcome.is_success(), "{outcome:?}");
    drop(runtime);

    let out = replay(id.as_str(), &confirmed, &db);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // 2 awaits, the approved call, the denied call, the outcome.
    assert!(
        text(&out).contains("identical (5 decisions)"),
        "{}",
        text(&out)
    );
    let out = replay(id.as_str(), &example("calculator.toml"), &db);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = text(&out);
    assert!(
        report.contains("first difference at decision 1 (turn 1)"),
        "{report}"
    );
    assert!(
        report.contains("expected: await [confirmation]"),
        "{report}"
    );
    assert!(report.contains("got:      call calc.add"), "{report}");

    // Without an answer, `weft run` leaves the run awaiting in the store;
    // cancelled there, the run replays identically too.
    let db2 = dir.path().join("w2.db");
    let cancelled = record(&confirmed, &db2, &[]);
    let cancel = weft()
        .args(["runs", "cancel", &cancelled, "--db"])
        .arg(&db2)
        .output()
        .unwrap();
    assert!(cancel.status.success(), "{}", text(&cancel));
    let out = replay(&cancelled, &confirmed, &db2);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("identical (2 decisions)"),
        "{}",
        text(&out)
    );
}

/// One chat-completions stream: a tool call (`Some((id, name, args))`) or text.
fn chat_stream(turn: Option<(&str, &str, &str)>, text: &str) -> String {
    let chunk = |delta: Value, finish: Value| {
        serde_json::json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut events = Vec::new();
    match turn {
        Some((id, name, args)) => {
            events.push(chunk(
                serde_json::json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
                Value::Null,
            ));
            events.push(chunk(
                serde_json::json!({"tool_calls": [{"index": 0, "function": {"arguments": args}}]}),
                Value::Null,
            ));
            events.push(chunk(
                serde_json::json!({}),
                serde_json::json!("tool_calls"),
            ));
        }
        None => {
            events.push(chunk(
                serde_json::json!({"role": "assistant", "content": text}),
                Value::Null,
            ));
            events.push(chunk(serde_json::json!({}), serde_json::json!("stop")));
        }
    }
    events.push(
        serde_json::json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}}),
    );
    let mut body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    body
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_on_an_http_model_replays_without_a_request() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let requests = Arc::new(AtomicUsize::new(0));
    let seen = requests.clone();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move || {
            let n = seen.fetch_add(1, Ordering::SeqCst);
            async move {
                let body = match n {
                    0 => chat_stream(Some(("call_a", "calc__add", "{\"a\":2,\"b\":3}")), ""),
                    1 => chat_stream(Some(("call_m", "calc__multiply", "{\"a\":5,\"b\":7}")), ""),
                    _ => chat_stream(None, "(2 + 3) * 7 = 35"),
                };
                axum::http::Response::builder()
                    .header(axum::http::header::CONTENT_TYPE, "text/event-stream")
                    .body(axum::body::Body::from(body))
                    .unwrap()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let agent = write(
        dir.path(),
        "http.toml",
        &format!(
            "id = \"http\"\ninstructions = \"Calculate.\"\ntoolsets = [\"calc\"]\n[planner]\nkind = \"model\"\nmodel = \"compat/m\"\nbase_url = \"http://{addr}/v1\"\n"
        ),
    );
    let (agent2, db2) = (agent.clone(), db.clone());
    let run = tokio::task::spawn_blocking(move || record(&agent2, &db2, &[]))
        .await
        .unwrap();
    assert_eq!(requests.load(Ordering::SeqCst), 3);
    let out = tokio::task::spawn_blocking(move || replay(&run, &agent, &db))
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("identical (3 decisions)"),
        "{}",
        text(&out)
    );
    assert_eq!(requests.load(Ordering::SeqCst), 3, "replay asked the model");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_run_logged_without_model_outputs_is_not_replayable() {
    use sqlx::Connection;

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let agent = model_agent(dir.path(), "max_tool_calls = 8");
    let (a, d) = (agent.clone(), db.clone());
    let run = tokio::task::spawn_blocking(move || record(&a, &d, &[]))
        .await
        .unwrap();
    // A log as weft wrote it before it recorded model outputs.
    let url = format!("sqlite://{}", db.display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
    let gone = sqlx::query("DELETE FROM run_events WHERE body LIKE '%\"type\":\"model_output\"%'")
        .execute(&mut conn)
        .await
        .unwrap()
        .rows_affected();
    assert_eq!(gone, 3);
    drop(conn);
    let out = tokio::task::spawn_blocking(move || replay(&run, &agent, &db))
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("not replayable: the log holds no model outputs"),
        "{}",
        text(&out)
    );
}

#[test]
fn replay_lists_what_changed_in_the_agent_even_when_its_decisions_replay_identically() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let agent = model_agent(dir.path(), "max_tool_calls = 8");
    let run = record(&agent, &db, &[]);

    let out = replay(&run, &agent, &db);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        !text(&out).contains("the agent given differs"),
        "{}",
        text(&out)
    );
    assert!(
        !text(&out).contains("no agent description"),
        "{}",
        text(&out)
    );

    // Another prompt, one more toolset and a temperature: the recorded
    // answers are fed back, so the decisions are the same, and the report
    // says what differs.
    let recorded = std::fs::read_to_string(&agent).unwrap();
    let changed = write(
        dir.path(),
        "changed.toml",
        &recorded
            .replace("Calculate.", "Calculate with care.")
            .replace("[\"calc\"]", "[\"calc\", \"text\"]")
            .replace("kind = \"model\"", "kind = \"model\"\ntemperature = 0.5"),
    );
    let out = replay(&run, &changed, &db);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = text(&out);
    assert!(report.contains("identical (4 decisions)"), "{report}");
    assert!(
        report.contains("the agent given differs from the recorded one"),
        "{report}"
    );
    assert!(report.contains("system prompt differs"), "{report}");
    assert!(report.contains("tool `text.upper` added"), "{report}");
    assert!(
        report.contains("temperature: unset recorded, `0.5` now"),
        "{report}"
    );
    assert!(!report.contains("tool `calc."), "{report}");

    let json = weft()
        .args(["replay", &run, "--json", "--agent"])
        .arg(&changed)
        .arg("--store")
        .arg(&db)
        .output()
        .unwrap();
    let line: Value = serde_json::from_slice(&json.stdout).unwrap();
    let changes = line["agent_changes"].as_array().unwrap();
    assert!(
        changes
            .iter()
            .any(|c| c.as_str() == Some("tool `text.upper` added")),
        "{line}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_recorded_without_its_model_setup_says_so() {
    use sqlx::Connection;

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let agent = model_agent(dir.path(), "max_tool_calls = 8");
    let (a, d) = (agent.clone(), db.clone());
    let run = tokio::task::spawn_blocking(move || record(&a, &d, &[]))
        .await
        .unwrap();
    // A run as weft stored it before it kept the model setup.
    let url = format!("sqlite://{}", db.display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
    let changed = sqlx::query(
        "UPDATE runs SET snapshot = replace(snapshot, '\"weft.model.setup\"', '\"older\"')",
    )
    .execute(&mut conn)
    .await
    .unwrap()
    .rows_affected();
    assert_eq!(changed, 1);
    drop(conn);
    let out = tokio::task::spawn_blocking(move || replay(&run, &agent, &db))
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("the recording holds no agent description"),
        "{}",
        text(&out)
    );
}
