//! What `weft run` and `weft runs show` print when stdout is not a
//! terminal, with the real binary: plain lines without control codes, JSON
//! lines with `--json`, and readable transcripts of stored runs.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::example;
use serde_json::Value;

fn weft() -> Command {
    Command::new(env!("CARGO_BIN_EXE_weft"))
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn no_control_codes(text: &str) {
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "control codes in {text:?}"
    );
}

#[test]
fn run_prints_plain_lines_with_tool_durations_and_a_summary_off_a_terminal() {
    let out = weft()
        .arg("run")
        .arg(example("journal.toml"))
        .arg("go")
        .env("WEFT_JOURNAL_DIR", tempfile::tempdir().unwrap().path())
        .output()
        .unwrap();
    let text = stdout(&out);
    no_control_codes(&text);
    assert!(
        text.contains("→ journal.append {\"sleep_ms\":40,\"text\":\"one\"}"),
        "{text}"
    );
    let finished = text.lines().filter(|l| l.starts_with("← journal.")).count();
    assert_eq!(finished, 5, "{text}");
    assert!(
        text.lines()
            .filter(|l| l.starts_with("← journal."))
            .all(|l| l.ends_with(" ms)")),
        "{text}"
    );
    let summary = text.lines().last().unwrap();
    assert!(
        summary.starts_with("── done · 5 turns · 5 tool calls · 0 tokens in / 0 out · "),
        "{summary}"
    );
    assert!(summary.ends_with(" s"), "{summary}");
}

#[test]
fn run_json_prints_the_same_event_lines_as_output_jsonl() {
    let types = |flags: &[&str]| -> Vec<String> {
        let out = weft()
            .arg("run")
            .args(flags)
            .arg(example("calculator.toml"))
            .arg("What is (2 + 3) * 7?")
            .output()
            .unwrap();
        assert!(out.status.success());
        stdout(&out)
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["type"].as_str().unwrap_or("outcome").to_owned()
            })
            .collect()
    };
    let json = types(&["--json"]);
    assert_eq!(json, types(&["--output", "jsonl"]));
    assert_eq!(json.first().map(String::as_str), Some("run_started"));
    assert_eq!(json.last().map(String::as_str), Some("outcome"));
    let both = weft()
        .args(["run", "--json", "--output", "text"])
        .arg(example("calculator.toml"))
        .arg("x")
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2));
}

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path
}

fn only_run(db: &Path) -> String {
    let list = weft()
        .args(["runs", "list", "--db"])
        .arg(db)
        .output()
        .unwrap();
    let line: Value = serde_json::from_str(stdout(&list).lines().next().unwrap()).unwrap();
    line["run_id"].as_str().unwrap().to_owned()
}

#[test]
fn runs_show_prints_a_transcript_of_a_model_run() {
    let dir = tempfile::tempdir().unwrap();
    let script = write(
        dir.path(),
        "script.yaml",
        r#"
- text: "Dividing first."
  tool_calls:
    - { id: c1, name: calc.divide, arguments: { a: 1, b: 0 } }
  usage: { input_tokens: 30, output_tokens: 8 }
- tool_calls:
    - { id: c2, name: calc.add, arguments: { a: 2, b: 3 } }
  usage: { input_tokens: 40, output_tokens: 9 }
- text: "2 + 3 = 5."
  usage: { input_tokens: 50, output_tokens: 4 }
"#,
    );
    let agent = write(
        dir.path(),
        "agent.toml",
        &format!(
            "id = \"m\"\ntoolsets = [\"calc\"]\n[planner]\nkind = \"model\"\nmodel = \"scripted/{}\"\n\
             [planner.price]\ninput = 100\noutput = 1000\n",
            script.display()
        ),
    );
    let db = dir.path().join("w.db");
    let out = weft()
        .arg("run")
        .arg(&agent)
        .arg("What is 2 + 3?")
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // 120 input tokens at $100 and 21 output tokens at $1000 per million.
    let summary = stdout(&out).lines().last().unwrap_or_default().to_owned();
    assert!(
        summary.contains(" · 120 tokens in / 21 out · $0.0330 · "),
        "{summary}"
    );
    let run = only_run(&db);
    let show = weft()
        .args(["runs", "show", &run, "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(show.status.success());
    let text = stdout(&show);
    no_control_codes(&text);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with(&format!("run {run} · agent m · session ")),
        "{text}"
    );
    assert!(lines[0].ends_with(" · completed"), "{text}");
    for want in [
        "] user: What is 2 + 3?",
        "] assistant: Dividing first.",
        "] → calc.divide {\"a\":1,\"b\":0}",
        "] ✗ calc.divide division_by_zero: b must not be zero (",
        "] → calc.add {\"a\":2,\"b\":3}",
        "] ← calc.add 5 (",
        "] assistant: 2 + 3 = 5.",
        "] ── answered: 2 + 3 = 5.",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    assert_eq!(
        lines.last().copied(),
        Some("3 turns · 2 tool calls · 120 tokens in / 21 out · $0.0330"),
        "{text}"
    );
}

#[test]
fn runs_show_tells_awaits_and_a_cancelled_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let body = std::fs::read_to_string(example("calculator.toml")).unwrap();
    let agent = write(
        dir.path(),
        "confirm.toml",
        &body.replace(
            "max_tool_calls = 8",
            "max_tool_calls = 8\nconfirm_tools = [\"calc.add\"]",
        ),
    );
    let db = dir.path().join("w.db");
    // Without an answer on stdin, the run stays awaiting; then it is
    // cancelled in the store.
    let out = weft()
        .arg("run")
        .arg(&agent)
        .arg("go")
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(stdout(&out).contains("‖ paused: waiting for 1 answer(s)"));
    let run = only_run(&db);
    let cancel = weft()
        .args(["runs", "cancel", &run, "--reason", "no answer came", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(cancel.status.success());
    let show = weft()
        .args(["runs", "show", &run, "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let text = stdout(&show);
    no_control_codes(&text);
    assert!(
        text.contains("] ? confirm_call_1 confirm calc.add {\"a\":2,\"b\":3}"),
        "{text}"
    );
    // Awaiting answers is not a pause: the await's line says it all.
    assert!(!text.contains("‖ paused"), "{text}");
    assert!(text.contains("] ── cancelled: no answer came"), "{text}");
    assert!(
        text.lines().next().unwrap().ends_with(" · cancelled"),
        "{text}"
    );
}
