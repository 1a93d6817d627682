//! End-to-end tests of the real `weft` binary.

mod common;

use std::process::Command;

use common::example;

use serde_json::Value;

fn weft() -> Command {
    Command::new(env!("CARGO_BIN_EXE_weft"))
}

#[test]
fn run_streams_jsonl_events_and_the_outcome() {
    let out = weft()
        .args(["run", "--output", "jsonl"])
        .arg(example("calculator.toml"))
        .arg("What is (2 + 3) * 7?")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
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
    let out = weft()
        .args([
            "bench",
            "agent-loop",
            "--seconds",
            "0.2",
            "--concurrent",
            "20",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["mode"], "concurrent");
    assert_eq!(lines[0]["runs"], 20);
    assert_eq!(lines[0]["store_keeps_finished"], 0);
    assert_eq!(lines[1]["mode"], "concurrent");
    assert_eq!(lines[1]["store_keeps_finished"], Value::Null);
    assert_eq!(lines[2]["mode"], "sequential");
    assert!(lines[2]["us_per_step"].as_f64().unwrap() > 0.0);
    assert!(lines[2]["runs"].as_u64().unwrap() > 0);
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
        .args(["runs", "show", &run, "--db", &db])
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
