//! Toolsets that cannot start, through the real `weft` binary: `weft run`
//! stops before the first turn with exit code 2 and one line on stderr
//! naming the toolset and the cause (with `--json`, also an `{"error": ...}`
//! line on stdout); a toolset marked `optional = true` leaves a warning and
//! the run goes on. Registry toolsets: a gateway nobody listens on, a real
//! gateway (on the local Redis) that does not know the toolset, and one that
//! refuses the caller's token. MCP servers: a command that does not exist,
//! and one that exits at once.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn weft() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_weft"));
    cmd.env_remove("WEFT_REGISTRY_TOKEN")
        .env_remove("WEFT_REGISTRY_TOKENS")
        .env_remove("RUST_LOG");
    cmd
}

fn redis_url() -> String {
    std::env::var("WEFT_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn tag() -> String {
    format!(
        "{:x}{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
        std::process::id()
    )
}

/// Starts a process and waits until its stderr has a line containing `ready`.
fn start(mut cmd: Command, ready: &str) -> Proc {
    let mut child = cmd
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let proc = Proc(child);
    loop {
        match lines.next() {
            Some(Ok(line)) if line.contains(ready) => break,
            Some(Ok(_)) => {}
            other => panic!("the process ended before `{ready}`: {other:?}"),
        }
    }
    std::thread::spawn(move || for _ in lines {});
    proc
}

/// A gateway on the local Redis, in namespace `ns`, with `tokens`
/// (`WEFT_REGISTRY_TOKENS`) or without authentication.
fn gateway(ns: &str, tokens: Option<&str>) -> (Proc, String) {
    let port = free_port();
    let mut gw = weft();
    gw.args(["registry", "serve", "--redis", &redis_url()])
        .args(["--addr", &format!("127.0.0.1:{port}"), "--namespace", ns]);
    match tokens {
        Some(tokens) => gw.env("WEFT_REGISTRY_TOKENS", tokens),
        None => gw.arg("--insecure-no-auth"),
    };
    (
        start(gw, "registry gateway on"),
        format!("http://127.0.0.1:{port}"),
    )
}

/// An agent file with `toolset` (a `[[toolsets]]` table) and a scripted
/// planner that answers at once.
const PLANNER: &str = "[planner]\nkind = \"scripted\"\n[[planner.turns]]\ntext = \"done\"\n";

/// Runs an agent file made of `toolset` and the scripted planner, with
/// `extra` arguments and `envs`.
fn run(name: &str, toolset: &str, extra: &[&str], envs: &[(&str, &str)]) -> Output {
    let dir =
        std::env::temp_dir().join(format!("weft-toolset-start-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let agent = dir.join("agent.toml");
    std::fs::write(&agent, format!("id = \"a\"\n{toolset}{PLANNER}")).unwrap();
    let mut cmd = weft();
    cmd.arg("run").arg(&agent).arg("hi").args(extra);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    out
}

fn registry_toolset(name: &str, gateway: &str, ns: &str) -> String {
    format!(
        "[[toolsets]]\ntype = \"registry\"\nname = \"{name}\"\ngateway = \"{gateway}\"\n\
         redis = \"{}\"\nnamespace = \"{ns}\"\n",
        redis_url()
    )
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit code 2, one line on stderr naming `toolset` of `kind`, and `cause`.
fn assert_stopped(out: &Output, toolset: &str, kind: &str, cause: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let named = format!("weft: toolset `{toolset}` ({kind}) could not start: ");
    assert!(err.starts_with(&named), "{err}");
    for c in cause {
        assert!(err.contains(c), "`{c}` missing: {err}");
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("done"), "the run went on: {stdout}");
}

#[test]
fn a_registry_toolset_whose_gateway_is_unreachable_stops_the_run() {
    let port = free_port();
    let gw = format!("http://127.0.0.1:{port}");
    let toolset = registry_toolset("billing", &gw, "test:start:unreachable");
    let out = run("unreachable", &toolset, &[], &[]);
    assert_stopped(
        &out,
        "billing",
        "registry",
        &[&format!(
            "the gateway at {gw} is unreachable: connection refused"
        )],
    );

    // With --json: the same line on stderr, and the error as JSON on stdout.
    let out = run("unreachable-json", &toolset, &["--json"], &[]);
    assert_stopped(&out, "billing", "registry", &["connection refused"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last: serde_json::Value =
        serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    let error = &last["error"];
    assert_eq!(error["code"], "toolset_unavailable", "{stdout}");
    assert_eq!(error["toolsets"][0]["toolset"], "billing", "{stdout}");
    assert_eq!(error["toolsets"][0]["type"], "registry", "{stdout}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("connection refused")),
        "{stdout}"
    );
}

#[test]
fn an_optional_toolset_that_cannot_start_leaves_a_warning_and_the_run_goes_on() {
    let gw = format!("http://127.0.0.1:{}", free_port());
    let toolset = format!(
        "{}optional = true\n",
        registry_toolset("billing", &gw, "test:start:optional")
    );
    let out = run("optional", &toolset, &[], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("weft: warning: toolset `billing` (registry) could not start"),
        "{err}"
    );
    assert!(err.contains("connection refused"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("done"));
    assert!(
        err.contains("weft: toolset `billing` is unavailable: "),
        "the run's own event is shown too: {err}"
    );

    // With --json, the run's log says so: an event with the cause.
    let out = run("optional-json", &toolset, &["--json"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let event = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["type"] == "toolset_unavailable")
        .unwrap_or_else(|| panic!("no toolset_unavailable event: {stdout}"));
    assert_eq!(event["toolset"], "billing", "{event}");
    assert!(
        event["cause"]
            .as_str()
            .is_some_and(|c| c.to_lowercase().contains("connection refused")),
        "{event}"
    );
}

#[test]
fn a_registry_toolset_the_gateway_does_not_know_stops_the_run() {
    let ns = format!("test:start:{}", tag());
    let (_gw, url) = gateway(&ns, None);
    let out = run("unknown", &registry_toolset("nope", &url, &ns), &[], &[]);
    assert_stopped(
        &out,
        "nope",
        "registry",
        &[&format!(
            "registry toolset `nope` is not registered at the gateway {url}"
        )],
    );
}

#[test]
fn a_registry_toolset_whose_token_is_refused_stops_the_run() {
    let t = tag();
    let ns = format!("test:start:{t}");
    let secret = format!("caller-{t}");
    let (_gw, url) = gateway(&ns, Some(&format!("caller:agents={secret}")));
    let toolset = registry_toolset("billing", &url, &ns);

    let wrong = format!("wrong-{t}");
    let out = run(
        "wrong-token",
        &toolset,
        &[],
        &[("WEFT_REGISTRY_TOKEN", &wrong)],
    );
    assert_stopped(
        &out,
        "billing",
        "registry",
        &[
            &format!("the gateway at {url} refused the token (401"),
            "WEFT_REGISTRY_TOKEN",
        ],
    );
    assert!(!stderr(&out).contains(&wrong), "the token was printed");

    let out = run("no-token", &toolset, &[], &[]);
    assert_stopped(
        &out,
        "billing",
        "registry",
        &["refused the token (401", "WEFT_REGISTRY_TOKEN is not set"],
    );
}

#[test]
fn an_mcp_server_that_does_not_exist_stops_the_run() {
    let toolset =
        "[[toolsets]]\ntype = \"mcp\"\nname = \"fs\"\ncommand = \"weft-test-no-such-server\"\n";
    let out = run("mcp-missing", toolset, &[], &[]);
    assert_stopped(
        &out,
        "fs",
        "mcp",
        &["weft-test-no-such-server", "No such file or directory"],
    );
    let err = stderr(&out);
    assert_eq!(err.matches("`fs`").count(), 1, "{err}");
}

#[test]
fn an_mcp_server_that_exits_at_once_stops_the_run() {
    let toolset = "[[toolsets]]\ntype = \"mcp\"\nname = \"quick\"\ncommand = \"sh\"\n\
                   args = [\"-c\", \"echo 'quick: no config file' >&2; exit 3\"]\n";
    let out = run("mcp-exits", toolset, &[], &[]);
    // The server's own complaint is part of the cause.
    assert_stopped(
        &out,
        "quick",
        "mcp",
        &[
            "cannot connect to",
            "sh",
            "its stderr ended with: quick: no config file",
        ],
    );
}

/// `weft serve` goes on without a toolset that cannot start, and logs one
/// warning naming it and the cause per failure streak, not one per run.
#[tokio::test(flavor = "multi_thread")]
async fn weft_serve_warns_once_about_a_toolset_that_cannot_start() {
    let dir = tempfile::tempdir().unwrap();
    let gw = format!("http://127.0.0.1:{}", free_port());
    let agent = dir.path().join("agent.toml");
    let toolset = registry_toolset("billing", &gw, "test:start:serve");
    std::fs::write(&agent, format!("id = \"a\"\n{toolset}{PLANNER}")).unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "acme=serve-token\n").unwrap();
    let mut child = weft()
        .arg("serve")
        .arg("--agent")
        .arg(&agent)
        .arg("--db")
        .arg(dir.path().join("w.db"))
        .args(["--addr", "127.0.0.1:0", "--log-format", "json"])
        .arg("--tokens-file")
        .arg(&tokens)
        .env_remove("WEFT_TOKENS")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut log = BufReader::new(child.stderr.take().unwrap());
    let addr = served_address(&mut log);
    let http = reqwest::Client::new();
    for _ in 0..2 {
        let started: serde_json::Value = http
            .post(format!("http://{addr}/v1/runs"))
            .bearer_auth("serve-token")
            .json(&serde_json::json!({"agent": "a", "input": "hi"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let run_id = started["run_id"].as_str().unwrap().to_owned();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let view: serde_json::Value = http
                .get(format!("http://{addr}/v1/runs/{run_id}"))
                .bearer_auth("serve-token")
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if view["status"] == "completed" {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{view}");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let warnings: Vec<serde_json::Value> = log
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
        .filter(|l| l["level"] == "WARN" && l["fields"]["toolset"] == "billing")
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let fields = &warnings[0]["fields"];
    assert!(
        fields["message"]
            .as_str()
            .is_some_and(|m| m.contains("could not start")),
        "{fields}"
    );
    assert!(
        fields["error"].as_str().is_some_and(|e| e.contains(&gw)),
        "{fields}"
    );
}

/// The address `weft serve` says it serves on, read from its log.
fn served_address(log: &mut impl BufRead) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(log.read_line(&mut line).unwrap() > 0, "weft serve exited");
        if let Some(rest) = line.split("serving on http://").nth(1) {
            return rest
                .split(|c: char| c.is_whitespace() || c == '"')
                .next()
                .unwrap()
                .to_owned();
        }
    }
}

#[test]
fn an_http_mcp_server_that_refuses_or_fails_stops_the_run() {
    let url = format!("http://127.0.0.1:{}/mcp", free_port());
    let toolset = format!("[[toolsets]]\ntype = \"mcp\"\nname = \"web\"\nurl = \"{url}\"\n");
    let out = run("mcp-refused", &toolset, &[], &[]);
    assert_stopped(
        &out,
        "web",
        "mcp",
        &[&format!(
            "the server at {url} is unreachable: connection refused"
        )],
    );

    // A server answering every request with a 500.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut stream in listener.incoming().map_while(Result::ok) {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\nconnection: close\r\n\r\noops",
            );
        }
    });
    let toolset = format!("[[toolsets]]\ntype = \"mcp\"\nname = \"web\"\nurl = \"{url}\"\n");
    let out = run("mcp-500", &toolset, &[], &[]);
    assert_stopped(&out, "web", "mcp", &["500"]);
    assert!(!stderr(&out).contains("rmcp::"), "{}", stderr(&out));
}
