//! `weft replay --all --json` over a whole store with the real binary, for
//! the tests that record runs and check that unchanged agents replay them
//! exactly.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// What `weft replay --all --json` said: one report per run, and the summary.
pub struct Replayed {
    /// One report per run.
    pub reports: Vec<Value>,
    /// The closing summary.
    pub summary: Value,
    /// The exit code.
    pub code: Option<i32>,
}

impl Replayed {
    /// The reports whose verdict is not `identical`, as JSON lines.
    pub fn not_identical(&self) -> Vec<String> {
        self.reports
            .iter()
            .filter(|r| r["verdict"] != "identical")
            .map(Value::to_string)
            .collect()
    }

    /// Asserts that `runs` runs were replayed, every one identical with an
    /// agent no different from the recorded one, and the command said so
    /// with exit code 0.
    pub fn assert_identical(&self, runs: usize) {
        let odd = self.not_identical();
        assert!(odd.is_empty(), "replays that differ:\n{}", odd.join("\n"));
        assert_eq!(self.reports.len(), runs, "{:?}", self.reports);
        assert_eq!(self.summary["identical"], runs, "{}", self.summary);
        assert_eq!(self.code, Some(0));
        for r in &self.reports {
            assert_eq!(r["agent_changes"], serde_json::json!([]), "{r}");
        }
    }
}

/// Replays every run of the store `db` with the agent files `agents` (none:
/// each run's own file, as `weft run` named it), with `envs` set.
pub fn replay_all(db: &str, agents: &[PathBuf], envs: &[(&str, &str)]) -> Replayed {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_weft"));
    cmd.args([
        "replay",
        "--all",
        "--json",
        "--since",
        "2000-01-01T00:00:00Z",
    ]);
    cmd.args(["--db", db]);
    for agent in agents {
        cmd.arg("--agent").arg(agent);
    }
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("running weft replay");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let summary = match lines.pop() {
        Some(mut last) if last.get("summary").is_some() => last["summary"].take(),
        _ => panic!(
            "weft replay printed no summary ({:?}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
    };
    Replayed {
        reports: lines,
        summary,
        code: out.status.code(),
    }
}
