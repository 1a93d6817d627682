//! `type = "a2a"` toolsets against the official A2A SDK's own server: a
//! small agent served by the Python `a2a-sdk` server classes
//! (`tests/a2a/server.py`, from the virtual environment `scripts/a2a-sdk.sh`
//! makes) whose card demands a bearer token, called by the real `weft run`
//! with a scripted planner. The toolset streams (`SendStreamingMessage`;
//! the status and artifact text arrive as `tool_output_delta` events),
//! puts the remote task's question to `weft run`'s person (answered on
//! stdin) and forwards the answer to the same task; a declined question
//! cancels the remote task; a card whose scheme has no secret configured
//! stops the run naming the scheme.
//!
//! Without `WEFT_A2A_PYTHON` the tests are skipped, unless
//! `WEFT_REQUIRE_A2A_SDK=1` (as in `scripts/test`) makes them fail.

mod common;
#[path = "a2a/harness.rs"]
mod harness;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

const TOKEN: &str = "sdk-test-token";

/// The SDK's server, killed when dropped.
struct SdkServer {
    child: Child,
    url: String,
    /// Its stdout after the URL: one `bearer ok: <method>` line per request.
    seen: common::LogTail,
    log: common::LogTail,
}

impl Drop for SdkServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sdk_server(python: &str) -> SdkServer {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/a2a/server.py");
    let mut child = Command::new(python)
        .arg(script)
        .arg(TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = common::keep_log(BufReader::new(child.stderr.take().unwrap()));
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut url = String::new();
    stdout.read_line(&mut url).unwrap();
    let url = url.trim().to_owned();
    assert!(
        url.starts_with("http://"),
        "the SDK server printed no URL: {}",
        log.text()
    );
    let seen = common::keep_log(stdout);
    SdkServer {
        child,
        url,
        seen,
        log,
    }
}

/// Runs `weft run` on an agent calling `sdk.send` with each of `messages`
/// in turn (the toolset's table gets `auth`), `stdin` its person's answers.
fn run(dir: &Path, server: &SdkServer, auth: &str, messages: &[&str], stdin: &str) -> Output {
    let mut agent = format!(
        "id = \"caller\"\n\
         toolsets = [{{ type = \"a2a\", name = \"sdk\", url = \"{}\"{auth} }}]\n\
         [planner]\nkind = \"scripted\"\n",
        server.url
    );
    for m in messages {
        agent.push_str(&format!(
            "[[planner.turns]]\ntool_calls = [{{ name = \"sdk.send\", args = {{ message = \"{m}\" }} }}]\n"
        ));
    }
    agent.push_str("[[planner.turns]]\ntext = \"done\"\n");
    let file = dir.join("caller.toml");
    std::fs::write(&file, agent).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(["run", "--output", "jsonl"])
        .arg(&file)
        .arg("go")
        .env("SDK_TOKEN", TOKEN)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn finished(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["type"] == "tool_finished")
        .map(Value::to_string)
        .collect()
}

#[test]
fn weft_run_streams_and_answers_the_sdk_servers_question() {
    let Some(python) = harness::sdk_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = sdk_server(&python);
    let auth = ", token_env = \"SDK_TOKEN\"";
    let out = run(
        dir.path(),
        &server,
        auth,
        &["What is 6 x 7?", "greet me"],
        "Ada\n",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines = lines(&out);
    let context = format!("{stderr}\n{lines:#?}\nserver:\n{}", server.log.text());
    assert!(out.status.success(), "{context}");
    let deltas: Vec<(&str, &str)> = lines
        .iter()
        .filter(|l| l["type"] == "tool_output_delta")
        .map(|l| {
            (
                l["stream"].as_str().unwrap_or(""),
                l["delta"].as_str().unwrap_or(""),
            )
        })
        .collect();
    for delta in [
        ("progress", "thinking"),
        ("stdout", "The answer"),
        ("stdout", " is 42."),
    ] {
        assert!(
            deltas.contains(&delta),
            "{delta:?} not streamed: {deltas:?}\n{context}"
        );
    }
    let finished = finished(&lines);
    assert_eq!(finished.len(), 2, "{context}");
    assert!(
        finished[0].contains("The answer is 42.") && finished[0].contains("TASK_STATE_COMPLETED"),
        "{context}"
    );
    assert!(
        stderr.contains("What is your name?"),
        "the question was not asked: {context}"
    );
    assert!(
        finished[1].contains("Hello, Ada!") && finished[1].contains("TASK_STATE_COMPLETED"),
        "{context}"
    );
    let seen = server.seen.text();
    assert_eq!(
        seen.matches("bearer ok: SendStreamingMessage").count(),
        3,
        "{seen}"
    );
}

#[test]
fn a_declined_question_cancels_the_remote_task() {
    let Some(python) = harness::sdk_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = sdk_server(&python);
    let auth = ", token_env = \"SDK_TOKEN\"";
    let out = run(dir.path(), &server, auth, &["greet me"], "decline\n");
    let lines = lines(&out);
    let context = format!(
        "{}\n{lines:#?}\nserver:\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.log.text()
    );
    let finished = finished(&lines);
    assert_eq!(finished.len(), 1, "{context}");
    assert!(
        finished[0].contains("decline") && finished[0].contains("the remote task was cancelled"),
        "{context}"
    );
    assert!(
        server.seen.text().contains("bearer ok: CancelTask"),
        "{context}"
    );
}

#[test]
fn a_card_demanding_a_token_none_is_configured_for_stops_the_run() {
    let Some(python) = harness::sdk_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = sdk_server(&python);
    let out = run(dir.path(), &server, "", &["What is 6 x 7?"], "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("security scheme `bearer`") && stderr.contains("token_env"),
        "{stderr}"
    );
    assert!(!server.seen.text().contains("bearer ok"), "{stderr}");
}
