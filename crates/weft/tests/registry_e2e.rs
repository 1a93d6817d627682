//! The README's registry example, end to end with real processes: `weft
//! registry serve`, `weft provider serve`, and `weft run` of an agent whose
//! tools live in the provider, against the local Redis, each with its own
//! token (a gateway without tokens refuses to start; a caller token cannot
//! register a toolset); the stored run then replays with the provider gone.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn weft() -> Command {
    Command::new(env!("CARGO_BIN_EXE_weft"))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
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
    // Keep draining stderr so the process never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    proc
}

#[test]
fn an_agent_calls_tools_served_by_a_provider_process() {
    let redis = std::env::var("WEFT_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let port = free_port();
    let gateway = format!("http://127.0.0.1:{port}");
    let tag = format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let ns = format!("test:e2e:{tag}");
    let name = format!("calc_{tag}");
    let caller = format!("caller-{tag}");
    let provider_token = format!("provider-{tag}");

    // Without tokens the gateway does not start, and says how to.
    let mut open = weft()
        .args([
            "registry",
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--redis",
            &redis,
        ])
        .env_remove("WEFT_REGISTRY_TOKENS")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while open.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = open.kill();
            panic!("the gateway serves without tokens");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = open.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("WEFT_REGISTRY_TOKENS") && err.contains("--insecure-no-auth"),
        "{err}"
    );

    let mut gw = weft();
    gw.env(
        "WEFT_REGISTRY_TOKENS",
        format!("caller:agents={caller},provider:calc-host={provider_token}:{name}"),
    );
    gw.args([
        "registry",
        "serve",
        "--redis",
        &redis,
        "--addr",
        &format!("127.0.0.1:{port}"),
        "--namespace",
        &ns,
    ]);
    let _gw = start(gw, "registry gateway on");
    // A caller token registers nothing.
    let out = weft()
        .args([
            "provider",
            "serve",
            "calc",
            "--gateway",
            &gateway,
            "--redis",
            &redis,
        ])
        .args(["--name", &name])
        .env("WEFT_REGISTRY_TOKEN", &caller)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("403 forbidden"),
        "{err}"
    );
    assert!(!err.contains(&caller), "the token was printed: {err}");
    let mut provider = weft();
    provider.env("WEFT_REGISTRY_TOKEN", &provider_token);
    provider.args([
        "provider",
        "serve",
        "calc",
        "--gateway",
        &gateway,
        "--redis",
        &redis,
        "--name",
        &name,
    ]);
    let provider = start(provider, "serving toolset");

    // The README's agent file, pointed at this test's gateway and namespace.
    let text = std::fs::read_to_string(common::example("registry.toml")).unwrap();
    let text = text
        .replace(
            "name = \"calc\"",
            &format!("name = \"{name}\"\nalias = \"calc\"\nnamespace = \"{ns}\""),
        )
        .replace("http://127.0.0.1:8790", &gateway)
        .replace("redis://127.0.0.1:6379", &redis);
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("registry.toml");
    std::fs::write(&agent, text).unwrap();

    let db = dir.path().join("w.db");
    let db = db.to_str().unwrap();
    let out = weft()
        .env("WEFT_REGISTRY_TOKEN", &caller)
        .args([
            "run",
            agent.to_str().unwrap(),
            "What is (2 + 3) * 7?",
            "--output",
            "jsonl",
            "--db",
            db,
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "tool_finished")
        .map(|e| e["output"]["result"].clone())
        .collect();
    assert_eq!(results.len(), 2, "{stdout}");
    assert_eq!(results[0]["value"], 5, "{stdout}");
    assert_eq!(results[1]["value"], 35, "{stdout}");
    assert!(stdout.contains("(2 + 3) * 7 = 35"), "{stdout}");
    assert!(!stdout.contains(&caller) && !String::from_utf8_lossy(&out.stderr).contains(&caller));

    // Replay runs no tool: it needs the tools' schemas from the gateway,
    // never the provider that executes them.
    drop(provider);
    let list = weft().args(["runs", "list", "--db", db]).output().unwrap();
    let record: serde_json::Value =
        serde_json::from_slice(list.stdout.split(|b| *b == b'\n').next().unwrap()).unwrap();
    let run = record["run_id"].as_str().unwrap();
    let out = weft()
        .env("WEFT_REGISTRY_TOKEN", &caller)
        .args([
            "replay",
            run,
            "--store",
            db,
            "--agent",
            agent.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(report.contains("identical (3 decisions)"), "{report}");
}

#[test]
fn bench_registry_measures_every_variant_on_the_real_redis() {
    let redis = std::env::var("WEFT_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let lines = common::json_lines(weft().args(["bench", "registry", "--redis", &redis]).args([
        "--calls",
        "20",
        "--seconds",
        "0.6",
        "--in-flight",
        "4",
    ]));
    let variants: Vec<(&str, u64)> = lines
        .iter()
        .filter_map(|l| Some((l["variant"].as_str()?, l["in_flight"].as_u64()?)))
        .collect();
    assert_eq!(
        variants,
        [
            ("raw", 1),
            ("raw", 4),
            ("raw_pipelined", 4),
            ("raw_protocol", 4),
            ("weft", 1),
            ("weft", 4)
        ]
    );
    for l in &lines[..6] {
        if l["in_flight"] == 1 {
            assert_eq!(l["calls"], 20, "{l}");
            assert!(l["p50_us"].as_f64().unwrap() > 0.0, "{l}");
        } else {
            for figure in [
                "calls_per_s",
                "redis_cpu_us_per_call",
                "process_cpu_us_per_call",
            ] {
                assert!(l[figure].as_f64().unwrap() > 0.0, "{l}");
            }
        }
    }
    let summary = &lines[6];
    for ratio in [
        "p50_ratio_weft_over_raw",
        "calls_per_s_ratio_weft_over_best_raw",
        "calls_per_s_ratio_weft_over_raw_protocol",
    ] {
        assert!(summary[ratio].as_f64().unwrap() > 0.0, "{summary}");
    }
}
