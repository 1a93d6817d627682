//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! installed with the Node.js it needs by `scripts/mcp-conformance.sh`) run
//! against `weft mcp serve --http` (its server scenarios) and against weft's
//! MCP client (its client scenarios, with `weft run` driven by
//! `tests/mcp_conformance/client.sh`).
//!
//! The baseline lives in `tests/mcp_conformance/`: `expected.txt` lists the
//! scenarios that must pass, `known-failures.txt` those that fail today (a
//! known failure that passes is reported, so that it moves to
//! `expected.txt`), and `not-applicable.txt` those that test what weft does
//! not serve or cannot be driven to do. Every scenario the suite has must be
//! in exactly one of them.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long one run of the suite may take before it is killed and the test
/// fails (the server suite takes a few seconds; one client scenario, a
/// second or two).
const SUITE_TIMEOUT: Duration = Duration::from_secs(180);
/// How long one client scenario's `weft run` may take (the suite kills it).
const CLIENT_TIMEOUT_MS: &str = "60000";

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pinned Node.js and the suite's entry point, or `None` (after saying
/// so) when `scripts/mcp-conformance.sh` has not installed them; with
/// `WEFT_REQUIRE_NPM_SERVERS` set that is a failure.
fn suite() -> Option<(PathBuf, PathBuf)> {
    let modules = manifest_dir().join("../../scripts/mcp-conformance/node_modules");
    let node = modules.join(".bin/node");
    let entry = modules.join("@modelcontextprotocol/conformance/dist/index.js");
    if node.exists() && entry.exists() {
        return Some((node, entry));
    }
    assert!(
        std::env::var_os("WEFT_REQUIRE_NPM_SERVERS").is_none(),
        "the MCP conformance suite is not installed: run scripts/mcp-conformance.sh"
    );
    eprintln!("skipped: the MCP conformance suite is not installed (scripts/mcp-conformance.sh)");
    None
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Mode {
    Server,
    Client,
}

impl Mode {
    fn parse(word: &str) -> Mode {
        match word {
            "server" => Mode::Server,
            "client" => Mode::Client,
            other => panic!("a baseline line starts with `server` or `client`, not `{other}`"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Expectation {
    Pass,
    KnownFailure(String),
    NotApplicable(String),
}

type Baseline = BTreeMap<(Mode, String), Expectation>;

/// Makes a line's expectation from its reason.
type FromReason = fn(String) -> Expectation;

/// The three baseline files, each scenario in exactly one of them.
fn baseline() -> Baseline {
    let dir = manifest_dir().join("tests/mcp_conformance");
    let mut all = Baseline::new();
    let files: [(&str, FromReason); 3] = [
        ("expected.txt", |_| Expectation::Pass),
        ("known-failures.txt", Expectation::KnownFailure),
        ("not-applicable.txt", Expectation::NotApplicable),
    ];
    for (file, expectation) in files {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (mode, rest) = line
                .split_once(' ')
                .unwrap_or_else(|| panic!("{file}: `{line}` has no scenario"));
            let (scenario, reason) = match rest.split_once(": ") {
                Some((scenario, reason)) => (scenario.trim(), reason.trim().to_string()),
                None => (rest.trim(), String::new()),
            };
            assert!(
                file == "expected.txt" || !reason.is_empty(),
                "{file}: `{scenario}` needs a reason after `: `"
            );
            let expectation = expectation(reason);
            let previous = all.insert((Mode::parse(mode), scenario.to_string()), expectation);
            assert!(
                previous.is_none(),
                "{file}: `{mode} {scenario}` is in more than one baseline list"
            );
        }
    }
    all
}

/// Runs `cmd` with its output in files under `dir` (so a child it leaves
/// behind holding the output open cannot block the test), killing it and
/// failing when it outlives `SUITE_TIMEOUT`. Returns its stdout and stderr.
fn run_bounded(cmd: &mut Command, dir: &Path, name: &str) -> String {
    let out = dir.join(format!("{name}.out"));
    let err = dir.join(format!("{name}.err"));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(File::create(&out).unwrap())
        .stderr(File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > SUITE_TIMEOUT {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!(
                "the conformance suite ({name}) ran longer than {SUITE_TIMEOUT:?}; its output:\n{}{}",
                std::fs::read_to_string(&out).unwrap_or_default(),
                std::fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::read_to_string(&out).unwrap_or_default()
        + &std::fs::read_to_string(&err).unwrap_or_default()
}

/// A scenario's outcome from its `checks.json`: it passes when some check
/// succeeded and none failed; otherwise the failed checks' messages.
fn outcome(checks_json: &Path) -> Result<(), String> {
    let checks: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(checks_json).unwrap()).unwrap();
    let failures: Vec<String> = checks
        .iter()
        .filter(|c| c["status"] == "FAILURE")
        .map(|c| {
            format!(
                "{}: {}",
                c["id"].as_str().unwrap_or("?"),
                c["errorMessage"]
                    .as_str()
                    .or(c["details"]["message"].as_str())
                    .or(c["description"].as_str())
                    .unwrap_or("(no message)")
            )
        })
        .collect();
    if !failures.is_empty() {
        Err(failures.join("; "))
    } else if checks.iter().any(|c| c["status"] == "SUCCESS") {
        Ok(())
    } else {
        Err("no check succeeded".into())
    }
}

/// The `checks.json` files under `dir`, at any depth (client scenarios
/// named `auth/...` nest a directory).
fn checks_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            checks_files(&path, found);
        } else if path.file_name().is_some_and(|n| n == "checks.json") {
            found.push(path);
        }
    }
}

/// The scenario a server result directory is for:
/// `server-<scenario>-<ISO timestamp with - for : and .>`.
fn server_scenario(dir_name: &str) -> String {
    let without_prefix = dir_name
        .strip_prefix("server-")
        .unwrap_or_else(|| panic!("unexpected result directory {dir_name}"));
    // The timestamp is `YYYY-MM-DDTHH-MM-SS-mmmZ`: 24 characters after a `-`.
    let cut = without_prefix.len().checked_sub(25).unwrap();
    assert!(
        without_prefix[cut..].starts_with('-') && without_prefix.ends_with('Z'),
        "unexpected result directory {dir_name}"
    );
    without_prefix[..cut].to_string()
}

/// Compares what ran with the baseline: every expected scenario passed,
/// every scenario run is in the baseline, every baseline scenario of `mode`
/// exists in the suite. Known failures that passed are printed.
fn judge(mode: Mode, results: &BTreeMap<String, Result<(), String>>, suite_has: &[String]) {
    let baseline = baseline();
    let mut problems = Vec::new();
    for scenario in suite_has {
        if !baseline.contains_key(&(mode, scenario.clone())) {
            problems.push(format!(
                "{mode:?} scenario `{scenario}` is in no baseline list (expected.txt, known-failures.txt, not-applicable.txt)"
            ));
        }
    }
    for ((m, scenario), expectation) in &baseline {
        if *m != mode {
            continue;
        }
        if !suite_has.contains(scenario) {
            problems.push(format!(
                "{mode:?} scenario `{scenario}` of the baseline is not in the suite"
            ));
            continue;
        }
        let result = results.get(scenario);
        match (expectation, result) {
            (Expectation::Pass, Some(Ok(()))) => eprintln!("pass: {mode:?} {scenario}"),
            (Expectation::Pass, Some(Err(why))) => {
                problems.push(format!("{mode:?} scenario `{scenario}` failed: {why}"))
            }
            (Expectation::Pass, None) => {
                problems.push(format!("{mode:?} scenario `{scenario}` has no result"))
            }
            (Expectation::KnownFailure(_), Some(Ok(()))) => eprintln!(
                "NOW PASSING: {mode:?} {scenario} is in known-failures.txt but passed; move it to expected.txt"
            ),
            (Expectation::KnownFailure(reason), Some(Err(why))) => {
                eprintln!("known failure: {mode:?} {scenario}: {why} ({reason})")
            }
            (Expectation::KnownFailure(_), None) => {
                problems.push(format!("{mode:?} scenario `{scenario}` has no result"))
            }
            (Expectation::NotApplicable(reason), result) => eprintln!(
                "not applicable: {mode:?} {scenario} ({reason}){}",
                match result {
                    Some(Ok(())) => " — passed".to_string(),
                    Some(Err(why)) => format!(" — {why}"),
                    None => String::new(),
                }
            ),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The scenario names `conformance list --server|--client` prints
/// (`  - <name> [<spec versions>]`).
fn listed(node: &Path, entry: &Path, flag: &str, dir: &Path) -> Vec<String> {
    let out = run_bounded(
        Command::new(node).arg(entry).args(["list", flag]),
        dir,
        "list",
    );
    let names: Vec<String> = out
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert!(!names.is_empty(), "no scenarios listed:\n{out}");
    names
}

#[test]
fn weft_mcp_serve_passes_the_conformance_suites_server_scenarios() {
    let Some((node, entry)) = suite() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(["mcp", "serve", "--expose-toolsets", "--http", "127.0.0.1:0"])
        .arg(manifest_dir().join("../../examples/calculator.toml"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let guard = KillOnDrop(&mut server);
    let stdout = guard.0.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("`weft mcp serve --http` prints its URL")
        .trim()
        .to_string();
    assert!(url.starts_with("http://"), "{url:?}");

    let results_dir = dir.path().join("results");
    let log = run_bounded(
        Command::new(&node)
            .arg(&entry)
            .args(["server", "--url", &url, "--output-dir"])
            .arg(&results_dir),
        dir.path(),
        "server",
    );
    let mut results = BTreeMap::new();
    let mut files = Vec::new();
    checks_files(&results_dir, &mut files);
    assert!(!files.is_empty(), "the suite saved no results:\n{log}");
    for checks in files {
        let name = checks
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap();
        results.insert(server_scenario(name), outcome(&checks));
    }
    // The active suite: what `list --server` shows minus the pending
    // scenarios, which the run skips.
    let ran: Vec<String> = results.keys().cloned().collect();
    let listed = listed(&node, &entry, "--server", dir.path());
    for scenario in &ran {
        assert!(
            listed.contains(scenario),
            "`{scenario}` ran but is not listed"
        );
    }
    judge(Mode::Server, &results, &ran);
}

#[test]
fn the_weft_client_passes_the_conformance_suites_client_scenarios() {
    let Some((node, entry)) = suite() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let listed = listed(&node, &entry, "--client", dir.path());
    let driver = manifest_dir().join("tests/mcp_conformance/client.sh");
    // The suite splits the command on spaces and appends the server's URL.
    let command = format!("bash {} {}", driver.display(), env!("CARGO_BIN_EXE_weft"));
    assert!(
        command.split(' ').count() == 3,
        "the suite cannot run a command whose paths have spaces: {command}"
    );
    let mut results = BTreeMap::new();
    for ((mode, scenario), expectation) in baseline() {
        if mode != Mode::Client || matches!(expectation, Expectation::NotApplicable(_)) {
            continue;
        }
        if !listed.contains(&scenario) {
            continue; // `judge` reports it.
        }
        let out = dir.path().join(scenario.replace('/', "_"));
        let log = run_bounded(
            Command::new(&node)
                .arg(&entry)
                .args([
                    "client",
                    "--command",
                    &command,
                    "--scenario",
                    &scenario,
                    "--timeout",
                    CLIENT_TIMEOUT_MS,
                    "--output-dir",
                ])
                .arg(&out),
            dir.path(),
            "client",
        );
        let mut files = Vec::new();
        checks_files(&out, &mut files);
        assert_eq!(files.len(), 1, "{scenario}: one result expected:\n{log}");
        let result = outcome(&files[0]);
        if result.is_err() && expectation == Expectation::Pass {
            eprintln!("client scenario {scenario}, the suite's output:\n{log}");
        }
        results.insert(scenario, result);
    }
    judge(Mode::Client, &results, &listed);
}

/// Kills the server when the test ends, however it ends.
struct KillOnDrop<'a>(&'a mut Child);

impl Drop for KillOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
